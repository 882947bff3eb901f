// `kiln perf -m MODEL [-i http|grpc] [-u HOST:PORT] [--metrics-url HOST:PORT]
// [--concurrency-range A:B[:STEP] | --request-rate-range A:B[:STEP] [--request-distribution
// constant|poisson] [--max-threads N]] [--duration S] [--binary] [--batch N] [--images DIR] [--json
// FILE]
// [--csv FILE]`: a load generator for a KServe v2 server (kiln serve, Triton) over HTTP or gRPC,
// in perf_analyzer's manner: for each concurrency, that many clients send requests back to back
// for --duration seconds; for each request rate, requests start on a schedule (evenly spaced,
// or Poisson arrivals) from a pool of --max-threads senders, and those that start more than
// 1 ms late (every sender busy) are counted; it reports throughput, latency percentiles, and the
// server's queue and compute time and average batch size read from its /metrics before and after.
// Inputs are random values of the datatypes the model's metadata names (FP32, UINT8), raw over
// gRPC, JSON or binary over HTTP; BYTES inputs (encoded images) carry the files of --images DIR.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "cli_common.h"
#include "kiln_grpc_client.h"

namespace kiln::cli {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct PerfOptions {
  std::string model, protocol = "http", url, metrics_url, range = "1", json_out, csv_out;
  std::string rate_range, distribution = "constant", images;
  int max_threads = 64;
  double duration = 5;
  int batch = 1;
  bool binary = false;
};

struct Level {
  int concurrency = 0;  // clients (with a request rate: sender threads)
  double rate = 0;      // requests per second scheduled (0: back to back)
  int64_t late = 0;     // scheduled requests that started more than 1 ms late
  int64_t ok = 0, failed = 0;
  double seconds = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, send_us = 0;
  // The server's figures per request (its /metrics): queued, then its batch's run as Triton
  // splits it (input: rows joined and copied in; infer; output: copies back), and of infer the
  // device's own compute and its wait for another instance's.
  double server_queue_us = 0, server_input_us = 0, server_compute_us = 0, server_output_us = 0;
  double server_device_us = 0, server_wait_us = 0, avg_batch = 0;
  // Of input: rows joined, staging buffers waited for, copied into, and the copy to the device.
  double server_join_us = 0, server_staging_wait_us = 0, server_staging_copy_us = 0,
         server_h2d_us = 0;
  double plan_builds = 0;  // plans the server built during the level (requests waited for them)
};

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// The sums of the model's counters in a /metrics text (name → value).
std::map<std::string, double> scrape(httplib::Client& c, const std::string& model) {
  std::map<std::string, double> m;
  auto r = c.Get("/metrics");
  if (!r || r->status != 200) return m;
  const std::regex line("^(\\w+)\\{model=\"" + model + "\"[^}]*\\} ([0-9.eE+-]+)$");
  std::istringstream in(r->body);
  for (std::string l; std::getline(in, l);) {
    std::smatch s;
    if (std::regex_match(l, s, line) && l.find("quantile") == std::string::npos &&
        l.find("le=") == std::string::npos)
      m[s[1].str()] += std::stod(s[2].str());
  }
  return m;
}

// The encoded images (.jpg, .jpeg, .png) of `dir`, by name; an error where there are none.
Result<std::vector<std::string>> read_images(const std::string& dir) {
  std::vector<std::filesystem::path> paths;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
    if (e.is_regular_file() && (ext == ".jpg" || ext == ".jpeg" || ext == ".png"))
      paths.push_back(e.path());
  }
  if (ec) return not_found("--images " + dir + ": " + ec.message());
  if (paths.empty()) return not_found("--images " + dir + ": no .jpg, .jpeg or .png files");
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> images;
  for (const auto& p : paths) {
    std::ifstream f(p, std::ios::binary);
    images.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  return images;
}

// Random inputs for the model's inputs (metadata shapes, -1 → batch): FP32 normal values,
// UINT8 uniform 0..255; BYTES (encoded images) from `images`, `batch` of them in turn; other
// datatypes are refused, naming the input.
Status fill_inputs(std::vector<server::WireTensor>& inputs, int batch,
                   const std::vector<std::string>& images) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_int_distribution<int> byte(0, 255);
  for (server::WireTensor& in : inputs) {
    int64_t n = 1;
    for (int64_t& d : in.shape) {
      if (d < 0) d = batch;
      n *= d;
    }
    if (in.datatype == "FP32") {
      std::vector<float> v(static_cast<size_t>(n));
      for (float& x : v) x = normal(gen);
      in.bytes.assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
    } else if (in.datatype == "UINT8") {
      in.bytes.resize(static_cast<size_t>(n));
      for (char& c : in.bytes) c = static_cast<char>(byte(gen));
    } else if (in.datatype == "BYTES") {
      if (images.empty())
        return invalid_argument("input '" + in.name +
                                "' takes encoded images (BYTES): give them with --images DIR");
      std::vector<std::string_view> some;
      for (int64_t i = 0; i < n; ++i)
        some.emplace_back(images[static_cast<size_t>(i) % images.size()]);
      in.bytes = server::join_bytes_elements(some);
    } else {
      return invalid_argument("kiln perf sends FP32, UINT8 or BYTES (--images) inputs; input '" +
                              in.name + "' is " + in.datatype);
    }
  }
  return Status::ok();
}

// The model's inputs from its HTTP metadata.
std::vector<server::WireTensor> http_inputs(const json& meta) {
  std::vector<server::WireTensor> list;
  for (const json& in : meta["inputs"])
    list.push_back({in["name"], in["datatype"], in["shape"].get<std::vector<int64_t>>(), ""});
  return list;
}

// One HTTP request body for `inputs`: JSON, or binary (the JSON header's length second).
Result<std::pair<std::string, int64_t>> make_body(const std::vector<server::WireTensor>& inputs,
                                                  bool binary) {
  json list = json::array();
  std::string raw;
  for (const server::WireTensor& in : inputs) {
    json input = {{"name", in.name}, {"datatype", in.datatype}, {"shape", in.shape}};
    if (binary) {
      input["parameters"] = {{"binary_data_size", in.bytes.size()}};
      raw += in.bytes;
    } else if (in.datatype == "BYTES") {
      return invalid_argument("input '" + in.name +
                              "': encoded images travel as binary data (--binary, or -i grpc)");
    } else if (in.datatype == "FP32") {
      std::vector<float> v(in.bytes.size() / sizeof(float));
      std::memcpy(v.data(), in.bytes.data(), in.bytes.size());
      input["data"] = v;
    } else {
      input["data"] = std::vector<uint8_t>(in.bytes.begin(), in.bytes.end());
    }
    list.push_back(input);
  }
  json body = {{"inputs", list}};
  if (binary) body["parameters"] = {{"binary_data_output", true}};
  const std::string header = body.dump();
  return std::make_pair(header + raw, binary ? static_cast<int64_t>(header.size()) : -1);
}

// Sends one request and says whether it was answered; one per client thread.
using Send = std::function<bool()>;
using MakeSend = std::function<Send(int client)>;

// When each request of a rate level starts: evenly spaced, or Poisson arrivals (exponential
// gaps, a fixed seed), covering `seconds`.
std::vector<double> schedule(double rate, double seconds, bool poisson) {
  std::vector<double> at;
  std::mt19937 gen(11);
  std::exponential_distribution<double> gap(rate);
  for (double t = 0; t < seconds; t += poisson ? gap(gen) : 1.0 / rate) at.push_back(t);
  return at;
}

Level run_level(const PerfOptions& o, httplib::Client& metrics, const MakeSend& make_send,
                int concurrency, double rate = 0) {
  Level level;
  level.concurrency = concurrency;
  level.rate = rate;
  auto before = scrape(metrics, o.model);
  std::vector<std::vector<double>> latencies(static_cast<size_t>(concurrency));
  std::atomic<int64_t> ok{0}, failed{0}, late{0};
  std::atomic<size_t> next{0};
  const std::vector<double> at =
      rate > 0 ? schedule(rate, o.duration, o.distribution == "poisson") : std::vector<double>{};
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = start + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(o.duration));
  // The next request's start: now (back to back), or its scheduled time; false when done.
  auto wait_turn = [&]() {
    if (rate <= 0) return Clock::now() < end;
    const size_t k = next++;
    if (k >= at.size()) return false;
    const auto t =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(at[k]));
    std::this_thread::sleep_until(t);
    if (Clock::now() - t > std::chrono::milliseconds(1)) ++late;
    return true;
  };
  std::vector<std::thread> clients;
  for (int c = 0; c < concurrency; ++c)
    clients.emplace_back([&, c] {
      const Send send = make_send(c);
      while (wait_turn()) {
        const auto t0 = Clock::now();
        const bool answered = send();
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        if (answered) {
          ++ok;
          latencies[static_cast<size_t>(c)].push_back(us);
        } else {
          ++failed;
        }
      }
    });
  for (auto& t : clients) t.join();
  level.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& v : latencies) all.insert(all.end(), v.begin(), v.end());
  level.ok = ok;
  level.failed = failed;
  level.late = late;
  level.p50 = percentile(all, 0.5);
  level.p90 = percentile(all, 0.9);
  level.p95 = percentile(all, 0.95);
  level.p99 = percentile(all, 0.99);
  auto after = scrape(metrics, o.model);
  const double n = after["nv_inference_request_success"] - before["nv_inference_request_success"];
  const double execs = after["nv_inference_exec_count"] - before["nv_inference_exec_count"];
  if (n > 0) {
    auto per_request = [&](const char* metric) { return (after[metric] - before[metric]) / n; };
    level.server_queue_us = per_request("nv_inference_queue_duration_us");
    level.server_input_us = per_request("nv_inference_compute_input_duration_us");
    level.server_compute_us = per_request("nv_inference_compute_infer_duration_us");
    level.server_output_us = per_request("nv_inference_compute_output_duration_us");
    level.server_device_us = per_request("kiln_device_compute_duration_us");
    level.server_wait_us = per_request("kiln_device_order_wait_duration_us");
    level.server_join_us = per_request("kiln_input_join_duration_us");
    level.server_staging_wait_us = per_request("kiln_input_staging_wait_duration_us");
    level.server_staging_copy_us = per_request("kiln_input_staging_copy_duration_us");
    level.server_h2d_us = per_request("kiln_input_h2d_duration_us");
  }
  level.plan_builds = after["kiln_plan_builds"] - before["kiln_plan_builds"];
  if (execs > 0)
    level.avg_batch = (after["nv_inference_count"] - before["nv_inference_count"]) / execs;
  return level;
}

// HOST and PORT of a HOST:PORT, or false.
bool split_url(const std::string& url, std::string* host, int* port) {
  const auto colon = url.rfind(':');
  if (colon == std::string::npos) return false;
  *host = url.substr(0, colon);
  *port = std::atoi(url.c_str() + colon + 1);
  return *port > 0;
}

int run(const PerfOptions& o) {
  if (o.protocol != "http" && o.protocol != "grpc")
    return usage_error("-i " + o.protocol + ": http or grpc");
  const bool grpc = o.protocol == "grpc";
  const std::string url = !o.url.empty() ? o.url : grpc ? "localhost:8001" : "localhost:8000";
  std::string host;
  int port = 0;
  if (!split_url(url, &host, &port)) return usage_error("-u " + url + ": HOST:PORT");
  // The server's /metrics: the HTTP endpoint, or for gRPC the metrics port (8002) of its host.
  std::string metrics_host = host;
  int metrics_port = grpc ? 8002 : port;
  if (!o.metrics_url.empty() && !split_url(o.metrics_url, &metrics_host, &metrics_port))
    return usage_error("--metrics-url " + o.metrics_url + ": HOST:PORT");
  // The levels: concurrencies, or request rates (each with max_threads senders).
  const bool by_rate = !o.rate_range.empty();
  const std::string& range = by_rate ? o.rate_range : o.range;
  double lo = 1, hi = 1, step = 1;
  const int parsed = std::sscanf(range.c_str(), "%lf:%lf:%lf", &lo, &hi, &step);
  if (parsed < 1 || lo <= 0 || step <= 0 || (!by_rate && lo < 1))
    return usage_error(std::string(by_rate ? "--request-rate-range " : "--concurrency-range ") +
                       range + ": START[:END[:STEP]], above 0");
  if (parsed == 1) hi = lo;
  hi = std::max(hi, lo);
  if (o.distribution != "constant" && o.distribution != "poisson")
    return usage_error("--request-distribution " + o.distribution + ": constant or poisson");
  if (o.max_threads < 1) return usage_error("--max-threads: 1 or more");
  const int most_clients = by_rate ? o.max_threads : static_cast<int>(hi);

  std::vector<server::WireTensor> inputs;
  std::unique_ptr<server::GrpcInferClient> grpc_client;
  if (grpc) {
    // A connection per 16 clients, so that one HTTP/2 connection does not bound the load.
    auto c = server::GrpcInferClient::connect(url, o.model, std::max(1, (most_clients + 15) / 16));
    if (!c.is_ok()) return fail(c.status());
    grpc_client = std::move(*c);
    auto listed = grpc_client->inputs();
    if (!listed.is_ok()) return fail(listed.status().with_context(url));
    inputs = std::move(*listed);
  } else {
    httplib::Client client(host, port);
    auto meta = client.Get("/v2/models/" + o.model);
    if (!meta) return fail(unavailable("no answer from " + url));
    if (meta->status != 200)
      return fail(not_found("model '" + o.model + "' at " + url + ": " + meta->body));
    inputs = http_inputs(json::parse(meta->body));
  }
  std::vector<std::string> images;
  if (!o.images.empty()) {
    auto read = read_images(o.images);
    if (!read.is_ok()) return fail(read.status());
    images = std::move(*read);
  }
  if (Status filled = fill_inputs(inputs, o.batch, images); !filled.is_ok()) return fail(filled);
  std::pair<std::string, int64_t> body;
  if (!grpc) {
    auto made = make_body(inputs, o.binary);
    if (!made.is_ok()) return fail(made.status());
    body = std::move(*made);
  }
  MakeSend make_send = [&](int c) -> Send {
    if (grpc) return [&, c] { return grpc_client->infer(inputs, c).is_ok(); };
    auto cl = std::make_shared<httplib::Client>(host, port);
    httplib::Headers headers;
    if (body.second >= 0)
      headers.emplace("Inference-Header-Content-Length", std::to_string(body.second));
    const std::string path = "/v2/models/" + o.model + "/infer";
    return [&body, cl, headers, path] {
      auto r = cl->Post(path, headers, body.first, "application/octet-stream");
      return r && r->status == 200;
    };
  };
  httplib::Client metrics(metrics_host, metrics_port);
  std::vector<Level> levels;
  std::printf("%11s %10s %10s %10s %10s %10s %9s %9s %9s %9s %9s %9s %7s %7s\n",
              by_rate ? "request/s" : "concurrency", "infer/s", "p50 us", "p90 us", "p95 us",
              "p99 us", "queue us", "input us", "infer us", "output us", "device us", "avg batch",
              "failed", "late");
  for (double v = lo; v <= hi + 1e-9; v += step) {
    Level l = by_rate ? run_level(o, metrics, make_send, o.max_threads, v)
                      : run_level(o, metrics, make_send, static_cast<int>(v));
    std::printf(
        "%11.6g %10.1f %10.0f %10.0f %10.0f %10.0f %9.0f %9.0f %9.0f %9.0f %9.0f %9.2f %7lld "
        "%7lld\n",
        v, l.ok * o.batch / l.seconds, l.p50, l.p90, l.p95, l.p99, l.server_queue_us,
        l.server_input_us, l.server_compute_us, l.server_output_us, l.server_device_us, l.avg_batch,
        static_cast<long long>(l.failed), static_cast<long long>(l.late));
    levels.push_back(l);
  }
  if (!o.json_out.empty()) {
    json j = json::array();
    for (const Level& l : levels)
      j.push_back({{"concurrency", l.concurrency},
                   {"request_rate", l.rate},
                   {"late", l.late},
                   {"infer_per_s", l.ok * o.batch / l.seconds},
                   {"p50_us", l.p50},
                   {"p90_us", l.p90},
                   {"p95_us", l.p95},
                   {"p99_us", l.p99},
                   {"server_queue_us", l.server_queue_us},
                   {"server_input_us", l.server_input_us},
                   {"server_compute_us", l.server_compute_us},
                   {"server_output_us", l.server_output_us},
                   {"server_device_compute_us", l.server_device_us},
                   {"server_device_wait_us", l.server_wait_us},
                   {"server_input_join_us", l.server_join_us},
                   {"server_input_staging_wait_us", l.server_staging_wait_us},
                   {"server_input_staging_copy_us", l.server_staging_copy_us},
                   {"server_input_h2d_us", l.server_h2d_us},
                   {"avg_batch", l.avg_batch},
                   {"server_plan_builds", l.plan_builds},
                   {"ok", l.ok},
                   {"failed", l.failed}});
    std::ofstream(o.json_out) << j.dump(2) << "\n";
  }
  if (!o.csv_out.empty()) {
    std::ofstream csv(o.csv_out);
    csv << "concurrency,request_rate,infer_per_s,p50_us,p90_us,p95_us,p99_us,server_queue_us,"
           "server_compute_us,avg_batch,failed,late\n";
    for (const Level& l : levels)
      csv << l.concurrency << "," << l.rate << "," << l.ok * o.batch / l.seconds << "," << l.p50
          << "," << l.p90 << "," << l.p95 << "," << l.p99 << "," << l.server_queue_us << ","
          << l.server_compute_us << "," << l.avg_batch << "," << l.failed << "," << l.late << "\n";
  }
  return kExitOk;
}

}  // namespace

Command add_perf_command(CLI::App& root, const GlobalOptions&) {
  auto o = std::make_shared<PerfOptions>();
  CLI::App* app = root.add_subcommand(
      "perf",
      "load a KServe v2 server (kiln serve, Triton) over HTTP or gRPC at rising concurrency");
  app->add_option("-m,--model", o->model, "the model's name on the server")->required();
  app->add_option("-i,--protocol", o->protocol, "http or grpc")->capture_default_str();
  app->add_option("-u,--url", o->url,
                  "HOST:PORT of the endpoint (default localhost:8000, gRPC localhost:8001)");
  app->add_option("--metrics-url", o->metrics_url,
                  "HOST:PORT serving /metrics (default: the HTTP endpoint; for gRPC, port 8002 "
                  "of its host)");
  app->add_option("--concurrency-range", o->range,
                  "START[:END[:STEP]]: clients sending requests back to back")
      ->capture_default_str();
  app->add_option("--request-rate-range", o->rate_range,
                  "START[:END[:STEP]] requests per second, started on a schedule (instead of "
                  "--concurrency-range)");
  app->add_option("--request-distribution", o->distribution,
                  "with --request-rate-range: constant or poisson arrivals")
      ->capture_default_str();
  app->add_option("--max-threads", o->max_threads,
                  "with --request-rate-range: the senders (a request that finds all busy starts "
                  "late)")
      ->capture_default_str();
  app->add_option("--duration", o->duration, "seconds per level")->capture_default_str();
  app->add_option("--batch", o->batch, "rows per request")->capture_default_str();
  app->add_option("--images", o->images,
                  "a folder of .jpg/.jpeg/.png files, sent as BYTES to inputs that take encoded "
                  "images (binary HTTP or gRPC)");
  app->add_flag("--binary", o->binary, "HTTP: binary tensor data in and out (else JSON)");
  app->add_option("--json", o->json_out, "write the levels as JSON");
  app->add_option("--csv", o->csv_out, "write the levels as CSV");
  return {app, [o] { return run(*o); }};
}

}  // namespace kiln::cli
