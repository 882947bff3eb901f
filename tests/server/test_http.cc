// KServe v2 over HTTP (src/server/http_frontend.h) on loopback: every endpoint, JSON and binary
// tensors, and the error bodies of bad requests; the shipped Fashion-MNIST net on the CPU.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "kiln/images.h"
#include "models/idx_reader.h"
#include "serve_test_repository.h"
#include "server/bytes_input.h"
#include "server/http_frontend.h"
#include "server/image_request.h"
#include "server/metrics.h"

namespace kiln::server {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

using testing_repo::image;

class Http : public testing::Test {
 protected:
  void SetUp() override {
    root_ = testing_repo::write_repository("http");
    auto s = testing_repo::start_server(root_);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    server_ = std::move(*s);
    HttpOptions h;
    h.host = "127.0.0.1";
    h.port = 0;
    h.threads =
        32;  // above the most clients a test runs at once (httplib holds a thread per connection)
    h.max_body_bytes = 1 << 20;
    http_ = std::make_unique<HttpFrontend>(*server_, h);
    ASSERT_TRUE(http_->bind().is_ok());
    thread_ = std::thread([this] { http_->serve(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", http_->port());
    auto offline = Engine::load((root_ / "fashion" / "1" / "model.onnx").string(), {});
    ASSERT_TRUE(offline.is_ok());
    offline_ = *offline;
  }
  void TearDown() override {
    if (http_) http_->stop();
    if (thread_.joinable()) thread_.join();
    http_.reset();
    server_.reset();
    fs::remove_all(root_);
  }
  // The offline engine's logits for `rows` images of seeds first..first+rows-1.
  std::vector<float> want(uint32_t first, int64_t rows) {
    return testing_repo::offline_logits(*offline_, first, rows);
  }
  json infer_body(uint32_t first, int64_t rows, bool nested = false) {
    json data = json::array();
    for (int64_t r = 0; r < rows; ++r) {
      auto v = image(first + static_cast<uint32_t>(r));
      if (nested) {
        json rows28 = json::array();
        for (int y = 0; y < 28; ++y)
          rows28.push_back(std::vector<float>(v.begin() + y * 28, v.begin() + y * 28 + 28));
        data.push_back(json::array({rows28}));
      } else {
        for (float f : v) data.push_back(f);
      }
    }
    return {{"id", "r" + std::to_string(first)},
            {"inputs",
             {{{"name", "input"},
               {"datatype", "FP32"},
               {"shape", {rows, 1, 28, 28}},
               {"data", data}}}}};
  }
  static void expect_close(const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-4f * (1 + std::fabs(want[i]))) << i;
  }
  std::string error_of(const httplib::Result& r) {
    if (!r) return "(no response)";
    json j = json::parse(r->body, nullptr, false);
    return j.is_object() && j.contains("error") ? j["error"].get<std::string>()
                                                : "(no error body: " + r->body + ")";
  }

  fs::path root_;
  std::unique_ptr<ModelServer> server_;
  std::unique_ptr<HttpFrontend> http_;
  std::thread thread_;
  std::unique_ptr<httplib::Client> client_;
  std::shared_ptr<Engine> offline_;
};

TEST_F(Http, HealthMetadataConfig) {
  EXPECT_EQ(client_->Get("/v2/health/live")->status, 200);
  EXPECT_EQ(client_->Get("/v2/health/ready")->status, 200);
  auto meta = client_->Get("/v2");
  ASSERT_EQ(meta->status, 200);
  EXPECT_EQ(json::parse(meta->body)["name"], "kiln");
  auto model = client_->Get("/v2/models/fashion");
  ASSERT_EQ(model->status, 200) << model->body;
  json m = json::parse(model->body);
  EXPECT_EQ(m["versions"], json::array({"1"}));
  EXPECT_EQ(m["inputs"][0]["name"], "input");
  EXPECT_EQ(m["inputs"][0]["datatype"], "FP32");
  EXPECT_EQ(m["inputs"][0]["shape"], json::array({-1, 1, 28, 28}));
  EXPECT_EQ(m["outputs"][0]["shape"], json::array({-1, 10}));
  EXPECT_EQ(client_->Get("/v2/models/fashion/versions/1/ready")->status, 200);
  EXPECT_EQ(client_->Get("/v2/models/fashion/versions/2/ready")->status, 400);
  auto config = client_->Get("/v2/models/fashion/config");
  ASSERT_EQ(config->status, 200);
  json c = json::parse(config->body);
  EXPECT_EQ(c["max_batch_size"], 8);
  EXPECT_EQ(c["input"][0]["name"], "input");  // completed from the model
}

TEST_F(Http, InferJsonFlatNestedAndBinary) {
  auto flat =
      client_->Post("/v2/models/fashion/infer", infer_body(10, 3).dump(), "application/json");
  ASSERT_EQ(flat->status, 200) << flat->body;
  json f = json::parse(flat->body);
  EXPECT_EQ(f["id"], "r10");
  EXPECT_EQ(f["model_version"], "1");
  EXPECT_EQ(f["outputs"][0]["shape"], json::array({3, 10}));
  expect_close(f["outputs"][0]["data"].get<std::vector<float>>(), want(10, 3));

  auto nested = client_->Post("/v2/models/fashion/versions/1/infer", infer_body(20, 2, true).dump(),
                              "application/json");
  ASSERT_EQ(nested->status, 200) << nested->body;
  expect_close(json::parse(nested->body)["outputs"][0]["data"].get<std::vector<float>>(),
               want(20, 2));

  // Binary in and out: the JSON header, then the raw float32 bytes.
  const std::vector<float> x = image(30);
  json header = {{"inputs",
                  {{{"name", "input"},
                    {"datatype", "FP32"},
                    {"shape", {1, 1, 28, 28}},
                    {"parameters", {{"binary_data_size", 784 * 4}}}}}},
                 {"outputs", {{{"name", "logits"}, {"parameters", {{"binary_data", true}}}}}}};
  const std::string h = header.dump();
  std::string body = h + std::string(reinterpret_cast<const char*>(x.data()), x.size() * 4);
  httplib::Headers headers = {{"Inference-Header-Content-Length", std::to_string(h.size())}};
  auto bin = client_->Post("/v2/models/fashion/infer", headers, body, "application/octet-stream");
  ASSERT_EQ(bin->status, 200) << bin->body;
  const size_t json_len = std::stoul(bin->get_header_value("Inference-Header-Content-Length"));
  json r = json::parse(bin->body.substr(0, json_len));
  EXPECT_EQ(r["outputs"][0]["parameters"]["binary_data_size"], 40);
  ASSERT_EQ(bin->body.size(), json_len + 40);
  std::vector<float> got(10);
  std::memcpy(got.data(), bin->body.data() + json_len, 40);
  expect_close(got, want(30, 1));

  auto stats = client_->Get("/v2/models/fashion/stats");
  ASSERT_EQ(stats->status, 200);
  json s = json::parse(stats->body)["model_stats"][0];
  EXPECT_EQ(s["inference_count"], 6);
  EXPECT_EQ(s["inference_stats"]["success"]["count"], 3);
  EXPECT_GT(s["inference_stats"]["success"]["ns"].get<uint64_t>(), 0u);
}

// Concurrent requests over HTTP are batched, and each gets its own answer.
TEST_F(Http, ConcurrentRequestsBatchAndAnswerRight) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c)
    clients.emplace_back([&, c] {
      httplib::Client cl("127.0.0.1", http_->port());
      for (int i = 0; i < 5; ++i) {
        const uint32_t seed = static_cast<uint32_t>(100 + c * 10 + i);
        auto r =
            cl.Post("/v2/models/fashion/infer", infer_body(seed, 1).dump(), "application/json");
        if (!r || r->status != 200) {
          ++wrong;
          continue;
        }
        auto got = json::parse(r->body)["outputs"][0]["data"].get<std::vector<float>>();
        auto w = want(seed, 1);
        for (size_t k = 0; k < w.size(); ++k)
          if (std::fabs(got[k] - w[k]) > 1e-4f * (1 + std::fabs(w[k]))) {
            ++wrong;
            break;
          }
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(wrong.load(), 0);
  auto stats = json::parse(client_->Get("/v2/models/stats")->body)["model_stats"];
  ASSERT_EQ(stats.size(), 4u);  // deep, fashion, images, patient
  EXPECT_EQ(stats[1]["name"], "fashion");
  EXPECT_EQ(stats[1]["inference_count"], 40);
  EXPECT_LT(stats[1]["execution_count"].get<int>(), 40);
}

TEST_F(Http, BadRequestsGetClearErrors) {
  struct Case {
    std::string path, body;
    int status;
    std::string needle;
  };
  json wrong_shape = infer_body(1, 1);
  wrong_shape["inputs"][0]["shape"] = {1, 1, 28, 27};
  wrong_shape["inputs"][0]["data"] = std::vector<float>(28 * 27, 0.f);
  json wrong_type = infer_body(1, 1);
  wrong_type["inputs"][0]["datatype"] = "INT32";
  json short_data = infer_body(1, 1);
  short_data["inputs"][0]["data"] = {1, 2, 3};
  json too_many = infer_body(1, 9);
  json unknown_output = infer_body(1, 1);
  unknown_output["outputs"] = {{{"name", "boxes"}}};
  json bytes = infer_body(1, 1);
  bytes["inputs"][0]["datatype"] = "BYTES";
  const Case cases[] = {
      {"/v2/models/fashion/infer", "{\"inputs\": [", 400, "malformed JSON"},
      {"/v2/models/fashion/infer", "{}", 400, "no 'inputs'"},
      {"/v2/models/fashion/infer", wrong_shape.dump(), 400, "where the model takes [N,1,28,28]"},
      {"/v2/models/fashion/infer", wrong_type.dump(), 400, "datatype int32"},
      {"/v2/models/fashion/infer", short_data.dump(), 400, "3 elements of data"},
      {"/v2/models/fashion/infer", too_many.dump(), 400, "max_batch_size 8"},
      {"/v2/models/fashion/infer", unknown_output.dump(), 400, "'boxes'"},
      {"/v2/models/fashion/infer", bytes.dump(), 400, "BYTES"},
      {"/v2/models/nothing/infer", infer_body(1, 1).dump(), 404, "unknown model 'nothing'"},
      {"/v2/models/fashion/versions/7/infer", infer_body(1, 1).dump(), 404, "no version '7'"},
      {"/v2/models/broken/infer", infer_body(1, 1).dump(), 503, "sequence_batching"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path + " " + c.body.substr(0, 60));
    auto r = client_->Post(c.path, c.body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, c.status);
    EXPECT_NE(error_of(r).find(c.needle), std::string::npos) << error_of(r);
  }
  // Binary data that runs short, and a header length past the body.
  json header = {{"inputs",
                  {{{"name", "input"},
                    {"datatype", "FP32"},
                    {"shape", {1, 1, 28, 28}},
                    {"parameters", {{"binary_data_size", 784 * 4}}}}}}};
  const std::string h = header.dump();
  auto short_bin = client_->Post("/v2/models/fashion/infer",
                                 {{"Inference-Header-Content-Length", std::to_string(h.size())}},
                                 h + std::string(100, '\0'), "application/octet-stream");
  EXPECT_EQ(short_bin->status, 400);
  EXPECT_NE(error_of(short_bin).find("short"), std::string::npos) << error_of(short_bin);
  auto past = client_->Post("/v2/models/fashion/infer",
                            {{"Inference-Header-Content-Length", "999999"}}, h, "application/json");
  EXPECT_EQ(past->status, 400);
  // Over the body limit (1 MiB here): 413, with an error body.
  auto big =
      client_->Post("/v2/models/fashion/infer", std::string(2 << 20, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_NE(error_of(big).find("over the server's limit"), std::string::npos);
  // The server still answers.
  EXPECT_EQ(client_->Post("/v2/models/fashion/infer", infer_body(1, 1).dump(), "application/json")
                ->status,
            200);
}

// A client that sends half a request and stalls, and one that drops its connection mid-body,
// hold one connection thread each at most: the other requests are answered meanwhile, and
// after.
TEST_F(Http, SlowAndVanishingClientsLeaveTheOthersAlone) {
  auto half_request = [&](const std::string& part) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(http_->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    const std::string head =
        "POST /v2/models/fashion/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 100000\r\n\r\n" +
        part;
    EXPECT_EQ(send(fd, head.data(), head.size(), 0), static_cast<ssize_t>(head.size()));
    return fd;
  };
  const int slow = half_request("{\"inputs\": [");
  const int vanishing = half_request("{\"inputs\": [{\"name\": \"input\"");
  close(vanishing);  // gone mid-body
  for (int i = 0; i < 6; ++i) {
    auto r =
        client_->Post("/v2/models/fashion/infer", infer_body(40 + i, 1).dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
  close(slow);
  EXPECT_EQ(client_->Post("/v2/models/fashion/infer", infer_body(50, 1).dump(), "application/json")
                ->status,
            200);
  EXPECT_EQ(client_->Get("/v2/health/ready")->status, 200);
}

// Overload: 24 clients at once against a queue of 4. The requests the queue cannot take are
// refused at once (503, "Exceeds maximum queue size"); every one it took is answered, right.
TEST_F(Http, OverloadRefusesAtOnceAndLosesNothingAdmitted) {
  std::atomic<int> ok{0}, refused{0}, other{0};
  std::atomic<int64_t> slowest_refusal_us{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 24; ++c)
    clients.emplace_back([&, c] {
      httplib::Client cl("127.0.0.1", http_->port());
      for (int i = 0; i < 4; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        auto r = cl.Post("/v2/models/deep/infer", infer_body(200 + c * 4 + i, 1).dump(),
                         "application/json");
        const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::steady_clock::now() - t0)
                               .count();
        if (r && r->status == 200 && json::parse(r->body)["outputs"][0]["data"].size() == 10) {
          ++ok;
        } else if (r && r->status == 503 &&
                   r->body.find("Exceeds maximum queue size") != std::string::npos) {
          ++refused;
          int64_t prev = slowest_refusal_us;
          while (us > prev && !slowest_refusal_us.compare_exchange_weak(prev, us)) {
          }
        } else {
          ++other;
        }
      }
    });
  for (auto& t : clients) t.join();
  std::printf("[ overload ] 96 requests: %d answered, %d refused (slowest refusal %lld us)\n",
              ok.load(), refused.load(), static_cast<long long>(slowest_refusal_us.load()));
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(ok + refused, 96);
  EXPECT_GT(refused.load(), 0);
  EXPECT_GT(ok.load(), 0);
  auto s = json::parse(client_->Get("/v2/models/deep/stats")->body)["model_stats"][0];
  EXPECT_EQ(s["inference_stats"]["success"]["count"], ok.load());
  EXPECT_EQ(s["inference_stats"]["fail"]["count"], refused.load());
}

// The first `n` Fashion-MNIST test images as JPEGs.
std::vector<std::string> test_jpegs(int n) {
  std::vector<uint8_t> images, labels;
  std::vector<int64_t> dims;
  std::string error;
  EXPECT_TRUE(test::read_idx_gz(std::string(KILN_FASHION_MNIST_DIR) + "/t10k-images-idx3-ubyte.gz",
                                images, dims, error))
      << error;
  std::vector<std::string> jpegs;
  for (int i = 0; i < n && images.size() >= 784u * (i + 1); ++i) {
    Image grey;
    grey.width = grey.height = 28;
    grey.channels = 1;
    grey.pixels.assign(images.begin() + 784 * i, images.begin() + 784 * (i + 1));
    auto jpeg = encode_jpeg(grey, 95);
    EXPECT_TRUE(jpeg.is_ok());
    if (jpeg.is_ok()) jpegs.push_back(*jpeg);
  }
  return jpegs;
}

// The image endpoint: a JPEG of a Fashion-MNIST test image gets the offline engine's best class,
// with its label; a corrupt image and a bad top_k are refused, naming what is wrong.
TEST_F(Http, ClassifiesAnImage) {
  const std::vector<std::string> jpegs = test_jpegs(1);
  ASSERT_EQ(jpegs.size(), 1u);
  const std::string* jpeg = &jpegs[0];
  auto r = client_->Post("/v2/models/fashion/classify?top_k=3", *jpeg, "image/jpeg");
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  ASSERT_EQ(j["classes"].size(), 3u);
  // What the offline engine says of the same decoded image.
  auto model = server_->find("fashion");
  ASSERT_TRUE(model.is_ok());
  auto layout = (*model)->classify_layout();
  ASSERT_TRUE(layout.is_ok()) << layout.status().to_string();
  auto in = image_input(*layout, *jpeg);
  ASSERT_TRUE(in.is_ok()) << in.status().to_string();
  auto out = offline_->create_context()->run(*in);
  ASSERT_TRUE(out.is_ok());
  auto best = top_classes(out->at("logits"), 1, (*model)->labels());
  EXPECT_EQ(j["classes"][0]["index"], best[0].index);
  EXPECT_EQ(j["classes"][0]["label"], best[0].label);
  EXPECT_NEAR(j["classes"][0]["score"].get<double>(), best[0].score, 1e-4);
  EXPECT_EQ(j["classes"][0]["label"], "Ankle boot");  // the first test image's class
  double previous = 1;
  for (const json& c : j["classes"]) {
    EXPECT_LE(c["score"].get<double>(), previous);
    previous = c["score"].get<double>();
  }
  auto corrupt = client_->Post("/v2/models/fashion/classify", jpeg->substr(0, 40), "image/jpeg");
  EXPECT_EQ(corrupt->status, 400);
  EXPECT_NE(error_of(corrupt).find("the image"), std::string::npos) << error_of(corrupt);
  auto junk = client_->Post("/v2/models/fashion/classify", "not an image", "image/png");
  EXPECT_EQ(junk->status, 400);
  auto bad_k = client_->Post("/v2/models/fashion/classify?top_k=0", *jpeg, "image/jpeg");
  EXPECT_EQ(bad_k->status, 400);
  EXPECT_NE(error_of(bad_k).find("top_k"), std::string::npos);
}

// Prometheus text with Triton's names, after a few requests and one bad one.
// A BYTES input of encoded images, one a row (the model's input declared TYPE_STRING): decoded
// by the server into the model's input, each row's answer the offline engine's for the same
// decoded image; errors name the input, and the image by its index.
TEST_F(Http, EncodedImagesAsBytesInputs) {
  const std::vector<std::string> jpegs = test_jpegs(3);
  ASSERT_EQ(jpegs.size(), 3u);
  auto binary_request = [](const std::string& model, const std::vector<std::string_view>& images,
                           const std::string& shape) {
    const std::string data = join_bytes_elements(images);
    const std::string header =
        json::parse(R"({"inputs": [{"name": "input", "datatype": "BYTES", "shape": )" + shape +
                    R"(, "parameters": {"binary_data_size": )" + std::to_string(data.size()) +
                    "}}]}")
            .dump();
    return std::make_pair(header + data, header.size());
  };
  auto post = [&](const std::pair<std::string, size_t>& body, const std::string& model) {
    httplib::Headers h = {{"Inference-Header-Content-Length", std::to_string(body.second)}};
    return client_->Post("/v2/models/" + model + "/infer", h, body.first,
                         "application/octet-stream");
  };
  auto r = post(binary_request("images", {jpegs[0], jpegs[1], jpegs[2]}, "[3, 1]"), "images");
  ASSERT_EQ(r->status, 200) << r->body;
  json out = json::parse(r->body)["outputs"][0];
  ASSERT_EQ(out["shape"], json::array({3, 10}));
  auto model = server_->find("images");
  ASSERT_TRUE(model.is_ok());
  ASSERT_EQ((*model)->image_inputs().count("input"), 1u);
  auto x = decode_images((*model)->image_inputs().at("input"), {jpegs[0], jpegs[1], jpegs[2]}, "");
  ASSERT_TRUE(x.is_ok()) << x.status().to_string();
  auto want = offline_->create_context()->run({{"input", *x}});
  ASSERT_TRUE(want.is_ok());
  const Tensor& logits = want->at("logits");
  for (int64_t i = 0; i < 30; ++i)
    EXPECT_NEAR(out["data"][i].get<double>(), logits.at_double(i), 1e-4) << i;
  // The metadata says BYTES; one image as [1]; a corrupt second image; BYTES where the model
  // takes tensors; tensors where it takes images; more images than max_batch_size.
  auto meta = json::parse(client_->Get("/v2/models/images")->body);
  EXPECT_EQ(meta["inputs"][0]["datatype"], "BYTES") << meta.dump();
  EXPECT_EQ(post(binary_request("images", {jpegs[1]}, "[1]"), "images")->status, 200);
  const std::string cut = jpegs[1].substr(0, 50);
  r = post(binary_request("images", {jpegs[0], cut, jpegs[2]}, "[3, 1]"), "images");
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(error_of(r).find("input 'input' image 1 of 3"), std::string::npos) << error_of(r);
  r = post(binary_request("fashion", {jpegs[0]}, "[1, 1]"), "fashion");
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(error_of(r).find("TYPE_STRING"), std::string::npos) << error_of(r);
  r = client_->Post("/v2/models/images/infer", infer_body(1, 1).dump(), "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(error_of(r).find("takes BYTES"), std::string::npos) << error_of(r);
  std::vector<std::string_view> nine(9, jpegs[0]);
  r = post(binary_request("images", nine, "[9, 1]"), "images");
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(error_of(r).find("max_batch_size"), std::string::npos) << error_of(r);
  // Length prefixes that do not add up, and JSON strings that are not images.
  auto bad = binary_request("images", {jpegs[0]}, "[2, 1]");
  r = post(bad, "images");
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(error_of(r).find("1 BYTES elements where the shape holds 2"), std::string::npos)
      << error_of(r);
  r = client_->Post(
      "/v2/models/images/infer",
      R"({"inputs": [{"name": "input", "datatype": "BYTES", "shape": [1], "data": ["not an image"]}]})",
      "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(error_of(r).find("input 'input'"), std::string::npos) << error_of(r);
}

// Triton's GPU gauges, per GPU UUID, from NVML (the fake one: two GPUs, the second without
// power readings, whose line is left out rather than written as 0).
TEST_F(Http, GpuMetricsFromNvml) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "the server reads this machine's own GPUs";
  ASSERT_EQ(server_->gpus().size(), 2u) << server_->gpus_note();
  const std::string m = client_->Get("/metrics")->body;
  const std::string a = "{gpu_uuid=\"GPU-00000000-1111-2222-3333-444444444444\"}";
  const std::string b = "{gpu_uuid=\"GPU-55555555-6666-7777-8888-999999999999\"}";
  EXPECT_NE(m.find("# TYPE nv_gpu_utilization gauge\nnv_gpu_utilization" + a + " 0.42"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("nv_gpu_memory_total_bytes" + a + " 85899345920\n"), std::string::npos) << m;
  EXPECT_NE(m.find("nv_gpu_memory_used_bytes" + a + " 3221225472\n"), std::string::npos) << m;
  EXPECT_NE(m.find("nv_gpu_memory_used_bytes" + b + " 536870912\n"), std::string::npos) << m;
  EXPECT_NE(m.find("nv_gpu_power_usage" + a + " 312.5\n"), std::string::npos) << m;
  EXPECT_EQ(m.find("nv_gpu_power_usage" + b), std::string::npos) << m;
}

// The live page: HTML from the server itself, reading only the server's own endpoints.
TEST_F(Http, LivePageAtRoot) {
  auto r = client_->Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(r->body.find("<title>kiln serve</title>"), std::string::npos);
  for (const char* endpoint : {"\"/metrics\"", "\"/v2/repository/index\"", "/classify"})
    EXPECT_NE(r->body.find(endpoint), std::string::npos) << endpoint;
  EXPECT_EQ(r->body.find("http://"), std::string::npos) << "the page loads nothing from outside";
  EXPECT_EQ(r->body.find("https://"), std::string::npos) << "the page loads nothing from outside";
}

TEST_F(Http, MetricsInTritonsNames) {
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(client_->Post("/v2/models/fashion/infer", infer_body(i, 2).dump(), "application/json")
                  ->status,
              200);
  ASSERT_EQ(client_->Post("/v2/models/fashion/infer", "{}", "application/json")->status, 400);
  auto r = client_->Get("/metrics");
  ASSERT_EQ(r->status, 200);
  const std::string& m = r->body;
  for (const char* line : {
           "nv_inference_request_success{model=\"fashion\",version=\"1\"} 3",
           "nv_inference_count{model=\"fashion\",version=\"1\"} 6",
           "nv_inference_request_failure{model=\"fashion\",version=\"1\",reason=\"OTHER\"} 1",
           "nv_inference_pending_request_count{model=\"fashion\",version=\"1\"} 0",
           "# TYPE nv_inference_queue_duration_us counter",
           "nv_inference_request_summary_us{model=\"fashion\",version=\"1\",quantile=\"0.99\"}",
           "nv_inference_request_summary_us_count{model=\"fashion\",version=\"1\"} 3",
           "kiln_batch_size_bucket{model=\"fashion\",version=\"1\",le=\"2\"}",
           "kiln_batch_size_bucket{model=\"fashion\",version=\"1\",le=\"+Inf\"}",
           "kiln_batch_size_sum{model=\"fashion\",version=\"1\"} 6",
       })
    EXPECT_NE(m.find(line), std::string::npos) << line << "\n" << m;
  EXPECT_NE(m.find("nv_inference_exec_count{model=\"fashion\",version=\"1\"}"), std::string::npos);
  // A batch's run split as Triton splits it: its rows joined (input), the outputs read out of
  // the plan's memory (output: the CPU copies nothing from a device, so only that), the rest
  // (infer). The device's own compute is counted too.
  auto value = [&](const std::string& family) {
    const std::string key = family + "{model=\"fashion\",version=\"1\"} ";
    const size_t at = m.find(key);
    return at == std::string::npos ? -1.0 : std::stod(m.substr(at + key.size()));
  };
  EXPECT_GT(value("nv_inference_compute_input_duration_us"), 0) << m;
  EXPECT_GT(value("nv_inference_compute_infer_duration_us"), 0) << m;
  EXPECT_GE(value("nv_inference_compute_output_duration_us"), 0) << m;
  EXPECT_LT(value("nv_inference_compute_output_duration_us"),
            value("nv_inference_compute_infer_duration_us"))
      << m;
  EXPECT_GT(value("kiln_device_compute_duration_us"), 0) << m;
  EXPECT_EQ(value("kiln_device_order_wait_duration_us"), 0) << m;
  // input's split: on the CPU the join alone (a CPU engine reads its inputs in place).
  EXPECT_GT(value("kiln_input_join_duration_us"), 0) << m;
  EXPECT_NEAR(value("kiln_input_join_duration_us"), value("nv_inference_compute_input_duration_us"),
              1.0)
      << m;
  for (const char* f : {"kiln_input_staging_wait_duration_us",
                        "kiln_input_staging_copy_duration_us", "kiln_input_h2d_duration_us"})
    EXPECT_EQ(value(f), 0) << f << "\n" << m;
  // Each batch size's plan, built at load (none since: the requests brought those sizes).
  EXPECT_GE(value("kiln_plan_builds"), 1) << m;
}

TEST(Quantile, NearestRank) {
  EXPECT_EQ(quantile({}, 0.5), 0);
  EXPECT_EQ(quantile({5, 1, 3, 2, 4}, 0.5), 3);
  EXPECT_EQ(quantile({5, 1, 3, 2, 4}, 0.99), 5);
  EXPECT_EQ(quantile({7}, 0.9), 7);
}

TEST_F(Http, RepositoryIndexLoadUnload) {
  auto index = client_->Post("/v2/repository/index", "{}", "application/json");
  ASSERT_EQ(index->status, 200);
  json list = json::parse(index->body);
  ASSERT_EQ(list.size(), 5u);
  EXPECT_EQ(list[0]["name"], "broken");
  EXPECT_EQ(list[0]["state"], "UNAVAILABLE");
  EXPECT_NE(list[0]["reason"].get<std::string>().find("sequence_batching"), std::string::npos);
  EXPECT_EQ(list[2]["name"], "fashion");
  EXPECT_EQ(list[2]["state"], "READY");
  auto ready_only = json::parse(
      client_->Post("/v2/repository/index", "{\"ready\": true}", "application/json")->body);
  EXPECT_EQ(ready_only.size(), 4u);  // deep, fashion, images and patient

  EXPECT_EQ(client_->Post("/v2/repository/models/fashion/unload", "", "application/json")->status,
            200);
  EXPECT_EQ(client_->Post("/v2/models/fashion/infer", infer_body(1, 1).dump(), "application/json")
                ->status,
            404);
  EXPECT_EQ(client_->Get("/v2/models/fashion/ready")->status, 400);
  EXPECT_EQ(client_->Post("/v2/repository/models/fashion/load", "", "application/json")->status,
            200);
  EXPECT_EQ(client_->Post("/v2/models/fashion/infer", infer_body(1, 1).dump(), "application/json")
                ->status,
            200);
  auto missing = client_->Post("/v2/repository/models/nothing/load", "", "application/json");
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(error_of(missing).find("no model 'nothing'"), std::string::npos);
  EXPECT_EQ(client_->Get("/v2/no/such/endpoint")->status, 404);
}

}  // namespace
}  // namespace kiln::server
