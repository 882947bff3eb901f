// `kiln serve` as a process: it serves a repository over HTTP, and SIGTERM under load drains it
// (every request that got in is answered, then it exits 0).
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "kiln/images.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

// Starts `kiln serve` with `args`, its stderr into `log`; returns the pid.
pid_t spawn(const std::vector<std::string>& args, const fs::path& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::fopen(log.c_str(), "w");
    dup2(fileno(f), 2);
    dup2(fileno(f), 1);
    std::vector<char*> argv = {const_cast<char*>(KILN_CLI_PATH), const_cast<char*>("serve")};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(KILN_CLI_PATH, argv.data());
    _exit(127);
  }
  return pid;
}

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The port `kiln serve` printed for `protocol` ("HTTP" or "gRPC"), or -1 after `timeout`.
int wait_for_port(const fs::path& log, std::chrono::seconds timeout,
                  const std::string& protocol = "HTTP") {
  const auto end = std::chrono::steady_clock::now() + timeout;
  const std::regex re(protocol + " on [0-9.]+:([0-9]+)");
  while (std::chrono::steady_clock::now() < end) {
    std::smatch m;
    const std::string text = read(log);
    if (std::regex_search(text, m, re)) return std::stoi(m[1].str());
    std::this_thread::sleep_for(50ms);
  }
  return -1;
}

// The exit status of `pid`, or -1 if it is still running after `timeout`.
int wait_exit(pid_t pid, std::chrono::seconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    std::this_thread::sleep_for(20ms);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

class ServeCli : public testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kiln_serve_cli_" + std::to_string(getpid()));
    fs::create_directories(root_ / "repo" / "fashion" / "1");
    fs::copy_file(std::string(KILN_SOURCE_DIR) + "/models/fashion_mnist.onnx",
                  root_ / "repo" / "fashion" / "1" / "model.onnx",
                  fs::copy_options::overwrite_existing);
    std::ofstream(root_ / "repo" / "fashion" / "config.pbtxt")
        << "max_batch_size: 8\ndynamic_batching { max_queue_delay_microseconds: 500 }\n";
  }
  void TearDown() override { fs::remove_all(root_); }
  // `kiln serve` of repo/ on loopback, HTTP and gRPC on ports it picks (-1 where not printed
  // within a minute), its log in serve.log.
  struct Served {
    pid_t pid;
    int http, grpc;
  };
  Served serve_http_and_grpc() {
    const fs::path log = root_ / "serve.log";
    const pid_t pid =
        spawn({"--model-repository", (root_ / "repo").string(), "--http-host", "127.0.0.1",
               "--http-port", "0", "--grpc-port", "0", "--metrics-port", "-1"},
              log);
    const int http = wait_for_port(log, 60s);
    return {pid, http, wait_for_port(log, 60s, "gRPC")};
  }
  fs::path root_;
};

std::string request_body() {
  json data = json::array();
  for (int i = 0; i < 784; ++i) data.push_back((i % 17) / 17.0);
  return json{
      {"inputs",
       {{{"name", "input"}, {"datatype", "FP32"}, {"shape", {1, 1, 28, 28}}, {"data", data}}}}}
      .dump();
}

TEST_F(ServeCli, ServesThenDrainsOnSigterm) {
  const fs::path log = root_ / "serve.log";
  const pid_t pid =
      spawn({"--model-repository", (root_ / "repo").string(), "--http-host", "127.0.0.1",
             "--grpc-port", "0", "--http-port", "0", "--metrics-port", "-1", "--threads", "1"},
            log);
  const int port = wait_for_port(log, 60s);
  ASSERT_GT(port, 0) << read(log);
  httplib::Client client("127.0.0.1", port);
  ASSERT_EQ(client.Get("/v2/health/ready")->status, 200);
  const std::string body = request_body();
  ASSERT_EQ(client.Post("/v2/models/fashion/infer", body, "application/json")->status, 200);

  // Load from 6 clients; SIGTERM while it runs. A request either gets a whole 200 answer or no
  // connection at all (after the listener closed): nothing admitted is lost or cut short.
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0}, refused{0}, broken{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 6; ++c)
    clients.emplace_back([&] {
      httplib::Client cl("127.0.0.1", port);
      cl.set_connection_timeout(2);
      while (!stop) {
        auto r = cl.Post("/v2/models/fashion/infer", body, "application/json");
        if (!r) {
          ++refused;
          std::this_thread::sleep_for(10ms);
        } else if (r->status == 200 && json::parse(r->body)["outputs"][0]["data"].size() == 10) {
          ++answered;
        } else {
          ++broken;
          std::fprintf(stderr, "status %d: %s\n", r->status, r->body.substr(0, 200).c_str());
        }
      }
    });
  std::this_thread::sleep_for(300ms);
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  const int exit_code = wait_exit(pid, 30s);
  stop = true;
  for (auto& t : clients) t.join();
  EXPECT_EQ(exit_code, 0) << read(log);
  EXPECT_GT(answered.load(), 0);
  EXPECT_EQ(broken.load(), 0);
  const std::string text = read(log);
  EXPECT_NE(text.find("fashion version 1 READY"), std::string::npos) << text;
  EXPECT_NE(text.find("SIGTERM: draining"), std::string::npos) << text;
  EXPECT_NE(text.find("stopped"), std::string::npos) << text;
}

// kiln perf against kiln serve: every level's requests answered, its JSON written, batches
// formed at concurrency 4.
TEST_F(ServeCli, PerfLoadsTheServer) {
  const Served served = serve_http_and_grpc();
  ASSERT_GT(served.http, 0) << read(root_ / "serve.log");
  const pid_t pid = served.pid;
  const int port = served.http;
  const fs::path out = root_ / "perf.json";
  const std::string cmd = std::string(KILN_CLI_PATH) +
                          " perf -m fashion -u 127.0.0.1:" + std::to_string(port) +
                          " --concurrency-range 1:4:3 --duration 0.5 --binary --json " +
                          out.string() + " > " + (root_ / "perf.txt").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << read(root_ / "perf.txt");
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid, 30s), 0);
  const json levels = json::parse(read(out));
  ASSERT_EQ(levels.size(), 2u) << read(root_ / "perf.txt");
  for (const json& l : levels) {
    EXPECT_GT(l["ok"].get<int>(), 0);
    EXPECT_EQ(l["failed"], 0);
    EXPECT_GT(l["infer_per_s"].get<double>(), 0);
    EXPECT_LE(l["p50_us"].get<double>(), l["p99_us"].get<double>());
    EXPECT_GE(l["avg_batch"].get<double>(), 1.0);
  }
  EXPECT_EQ(levels[1]["concurrency"], 4);
  EXPECT_NE(read(root_ / "perf.txt").find("avg batch"), std::string::npos);
}

// kiln perf over gRPC: raw contents, the server's split read from its HTTP /metrics.
TEST_F(ServeCli, PerfOverGrpc) {
  const Served served = serve_http_and_grpc();
  ASSERT_GT(served.http, 0) << read(root_ / "serve.log");
  ASSERT_GT(served.grpc, 0) << read(root_ / "serve.log");
  const pid_t pid = served.pid;
  const int http = served.http, grpc = served.grpc;
  const fs::path out = root_ / "perf.json";
  const std::string cmd = std::string(KILN_CLI_PATH) +
                          " perf -m fashion -i grpc -u 127.0.0.1:" + std::to_string(grpc) +
                          " --metrics-url 127.0.0.1:" + std::to_string(http) +
                          " --concurrency-range 2 --duration 0.5 --batch 2 --json " + out.string() +
                          " > " + (root_ / "perf.txt").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << read(root_ / "perf.txt");
  // Poisson arrivals at 100 requests/s for 1 s: about 100 requests, none failed.
  const fs::path rate_out = root_ / "rate.json";
  const std::string rate = std::string(KILN_CLI_PATH) +
                           " perf -m fashion -i grpc -u 127.0.0.1:" + std::to_string(grpc) +
                           " --metrics-url 127.0.0.1:" + std::to_string(http) +
                           " --request-rate-range 100 --request-distribution poisson "
                           "--max-threads 8 --duration 1 --json " +
                           rate_out.string() + " > " + (root_ / "rate.txt").string() + " 2>&1";
  EXPECT_EQ(std::system(rate.c_str()), 0) << read(root_ / "rate.txt");
  const json rated = json::parse(read(rate_out));
  ASSERT_EQ(rated.size(), 1u);
  EXPECT_EQ(rated[0]["request_rate"], 100.0);
  EXPECT_GT(rated[0]["ok"].get<int>(), 60);  // Poisson: 100 expected, a fixed seed
  EXPECT_LT(rated[0]["ok"].get<int>(), 140);
  EXPECT_EQ(rated[0]["failed"], 0);
  const std::string bad = std::string(KILN_CLI_PATH) +
                          " perf -m nothing -i grpc -u 127.0.0.1:" + std::to_string(grpc) + " > " +
                          (root_ / "bad.txt").string() + " 2>&1";
  EXPECT_NE(std::system(bad.c_str()), 0);
  EXPECT_NE(read(root_ / "bad.txt").find("nothing"), std::string::npos) << read(root_ / "bad.txt");
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid, 30s), 0);
  const json levels = json::parse(read(out));
  ASSERT_EQ(levels.size(), 1u) << read(root_ / "perf.txt");
  EXPECT_GT(levels[0]["ok"].get<int>(), 0);
  EXPECT_EQ(levels[0]["failed"], 0);
  EXPECT_GT(levels[0]["server_compute_us"].get<double>(), 0);
  EXPECT_GE(levels[0]["avg_batch"].get<double>(), 2.0);  // requests of 2 rows
  ASSERT_TRUE(levels[0].contains("server_plan_builds"));
  EXPECT_GE(levels[0]["server_plan_builds"].get<double>(), 0);
}

// kiln perf --images: JPEG files sent as BYTES to a model taking encoded images, over gRPC and
// HTTP binary, every request answered; without --images, and in JSON, it says why not.
TEST_F(ServeCli, PerfSendsJpegFiles) {
  fs::create_directories(root_ / "repo" / "images" / "1");
  fs::copy_file(root_ / "repo" / "fashion" / "1" / "model.onnx",
                root_ / "repo" / "images" / "1" / "model.onnx");
  std::ofstream(root_ / "repo" / "images" / "config.pbtxt")
      << "max_batch_size: 8\ndynamic_batching { max_queue_delay_microseconds: 500 }\n"
         "input [ { name: \"input\" data_type: TYPE_STRING dims: [ 1 ] } ]\n";
  fs::create_directories(root_ / "jpegs");
  for (int i = 0; i < 3; ++i) {
    auto jpeg = kiln::encode_jpeg(kiln::photo_like_image(40 + 10 * i, 30 + 7 * i, i), 90);
    ASSERT_TRUE(jpeg.is_ok());
    std::ofstream(root_ / "jpegs" / ("p" + std::to_string(i) + ".jpg"), std::ios::binary) << *jpeg;
  }
  const Served served = serve_http_and_grpc();
  ASSERT_GT(served.http, 0) << read(root_ / "serve.log");
  ASSERT_GT(served.grpc, 0) << read(root_ / "serve.log");
  const pid_t pid = served.pid;
  const int http = served.http, grpc = served.grpc;
  const std::string perf = std::string(KILN_CLI_PATH) +
                           " perf -m images --metrics-url 127.0.0.1:" + std::to_string(http) +
                           " --concurrency-range 2 --duration 0.5 ";
  const std::string images = " --images " + (root_ / "jpegs").string();
  for (const std::string& how : {"-i grpc -u 127.0.0.1:" + std::to_string(grpc) + " --batch 3",
                                 "--binary -u 127.0.0.1:" + std::to_string(http)}) {
    const fs::path out = root_ / "perf.json";
    const std::string cmd = perf + how + images + " --json " + out.string() + " > " +
                            (root_ / "perf.txt").string() + " 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << how << ": " << read(root_ / "perf.txt");
    const json levels = json::parse(read(out));
    ASSERT_EQ(levels.size(), 1u);
    EXPECT_GT(levels[0]["ok"].get<int>(), 0) << how;
    EXPECT_EQ(levels[0]["failed"], 0) << how;
  }
  const std::string none = perf + "-u 127.0.0.1:" + std::to_string(http) + " --binary > " +
                           (root_ / "none.txt").string() + " 2>&1";
  EXPECT_NE(std::system(none.c_str()), 0);
  EXPECT_NE(read(root_ / "none.txt").find("--images"), std::string::npos)
      << read(root_ / "none.txt");
  const std::string in_json = perf + "-u 127.0.0.1:" + std::to_string(http) + images + " > " +
                              (root_ / "json.txt").string() + " 2>&1";
  EXPECT_NE(std::system(in_json.c_str()), 0);
  EXPECT_NE(read(root_ / "json.txt").find("binary"), std::string::npos) << read(root_ / "json.txt");
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid, 30s), 0);
}

// --model-control poll: a model copied into the repository while serving becomes ready.
TEST_F(ServeCli, PollLoadsAModelAddedWhileServing) {
  const fs::path log = root_ / "serve.log";
  const pid_t pid = spawn({"--model-repository", (root_ / "repo").string(), "--http-host",
                           "127.0.0.1", "--http-port", "0", "--grpc-port", "-1", "--metrics-port",
                           "-1", "--model-control", "poll", "--repository-poll-secs", "0.2"},
                          log);
  const int port = wait_for_port(log, 60s);
  ASSERT_GT(port, 0) << read(log);
  httplib::Client client("127.0.0.1", port);
  EXPECT_NE(client.Get("/v2/models/later/ready")->status, 200);
  fs::copy(root_ / "repo" / "fashion", root_ / "later", fs::copy_options::recursive);
  fs::rename(root_ / "later", root_ / "repo" / "later");  // the folder appears whole
  int status = 0;
  for (int i = 0; i < 300 && status != 200; ++i) {
    std::this_thread::sleep_for(100ms);
    status = client.Get("/v2/models/later/ready")->status;
  }
  EXPECT_EQ(status, 200) << read(log);
  kill(pid, SIGTERM);
  EXPECT_EQ(wait_exit(pid, 30s), 0);
  EXPECT_NE(read(log).find("poll: loaded later"), std::string::npos) << read(log);
}

TEST_F(ServeCli, BadRepositoryOrFlagsSayWhy) {
  const fs::path log = root_ / "bad.log";
  pid_t pid = spawn({"--model-repository", (root_ / "nowhere").string()}, log);
  EXPECT_EQ(wait_exit(pid, 30s), 1);
  EXPECT_NE(read(log).find("is not a directory"), std::string::npos) << read(log);
  pid =
      spawn({"--model-repository", (root_ / "repo").string(), "--model-control", "sometimes"}, log);
  EXPECT_NE(wait_exit(pid, 30s), 0);
  EXPECT_NE(read(log).find("none, poll or explicit"), std::string::npos) << read(log);
}

}  // namespace
