// `kiln perf -m MODEL [-u HOST:PORT] [--concurrency-range A:B[:STEP]] [--duration S]
// [--binary] [--batch N] [--json FILE] [--csv FILE]`: a load generator for a KServe v2 HTTP
// server (kiln serve, Triton), in perf_analyzer's manner: for each concurrency, that many
// clients send requests back to back for --duration seconds; it reports throughput, latency
// percentiles, and the server's queue and compute time and average batch size read from its
// /metrics before and after.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "cli_common.h"

namespace kiln::cli {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct PerfOptions {
  std::string model, url = "localhost:8000", range = "1", json_out, csv_out;
  double duration = 5;
  int batch = 1;
  bool binary = false;
};

struct Level {
  int concurrency = 0;
  int64_t ok = 0, failed = 0;
  double seconds = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, send_us = 0;
  double server_queue_us = 0, server_compute_us = 0, avg_batch = 0;
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

// One request body for the model's inputs (random values), JSON or binary.
Result<std::pair<std::string, int64_t>> make_body(const json& meta, int batch, bool binary) {
  json inputs = json::array();
  std::string raw;
  std::mt19937 gen(7);
  std::normal_distribution<float> d(0.f, 1.f);
  for (const json& in : meta["inputs"]) {
    json shape = in["shape"];
    int64_t n = 1;
    for (json& s : shape) {
      if (s.get<int64_t>() < 0) s = batch;
      n *= s.get<int64_t>();
    }
    if (in["datatype"] != "FP32")
      return invalid_argument("kiln perf sends FP32 inputs; input '" +
                              in["name"].get<std::string>() + "' is " +
                              in["datatype"].get<std::string>());
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = d(gen);
    json input = {{"name", in["name"]}, {"datatype", "FP32"}, {"shape", shape}};
    if (binary) {
      input["parameters"] = {{"binary_data_size", n * 4}};
      raw.append(reinterpret_cast<const char*>(v.data()), v.size() * 4);
    } else {
      input["data"] = v;
    }
    inputs.push_back(input);
  }
  json body = {{"inputs", inputs}};
  if (binary) body["parameters"] = {{"binary_data_output", true}};
  const std::string header = body.dump();
  return std::make_pair(header + raw, binary ? static_cast<int64_t>(header.size()) : -1);
}

Level run_level(const PerfOptions& o, const std::string& host, int port, const std::string& body,
                int64_t header_length, int concurrency) {
  Level level;
  level.concurrency = concurrency;
  httplib::Client metrics(host, port);
  auto before = scrape(metrics, o.model);
  std::vector<std::vector<double>> latencies(static_cast<size_t>(concurrency));
  std::atomic<int64_t> ok{0}, failed{0};
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = start + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(o.duration));
  std::vector<std::thread> clients;
  const std::string path = "/v2/models/" + o.model + "/infer";
  for (int c = 0; c < concurrency; ++c)
    clients.emplace_back([&, c] {
      httplib::Client cl(host, port);
      httplib::Headers headers;
      if (header_length >= 0)
        headers.emplace("Inference-Header-Content-Length", std::to_string(header_length));
      while (Clock::now() < end) {
        const auto t0 = Clock::now();
        auto r = cl.Post(path, headers, body, "application/octet-stream");
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        if (r && r->status == 200) {
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
  level.p50 = percentile(all, 0.5);
  level.p90 = percentile(all, 0.9);
  level.p95 = percentile(all, 0.95);
  level.p99 = percentile(all, 0.99);
  auto after = scrape(metrics, o.model);
  const double n = after["nv_inference_request_success"] - before["nv_inference_request_success"];
  const double execs = after["nv_inference_exec_count"] - before["nv_inference_exec_count"];
  if (n > 0) {
    level.server_queue_us =
        (after["nv_inference_queue_duration_us"] - before["nv_inference_queue_duration_us"]) / n;
    level.server_compute_us = (after["nv_inference_compute_infer_duration_us"] -
                               before["nv_inference_compute_infer_duration_us"]) /
                              n;
  }
  if (execs > 0)
    level.avg_batch = (after["nv_inference_count"] - before["nv_inference_count"]) / execs;
  return level;
}

int run(const PerfOptions& o) {
  const auto colon = o.url.rfind(':');
  if (colon == std::string::npos) return usage_error("-u " + o.url + ": HOST:PORT");
  const std::string host = o.url.substr(0, colon);
  const int port = std::atoi(o.url.c_str() + colon + 1);
  int lo = 1, hi = 1, step = 1;
  if (std::sscanf(o.range.c_str(), "%d:%d:%d", &lo, &hi, &step) < 1 || lo < 1 || step < 1)
    return usage_error("--concurrency-range " + o.range + ": START[:END[:STEP]], from 1");
  if (std::count(o.range.begin(), o.range.end(), ':') == 0) hi = lo;
  hi = std::max(hi, lo);
  httplib::Client client(host, port);
  auto meta = client.Get("/v2/models/" + o.model);
  if (!meta) return fail(unavailable("no answer from " + o.url));
  if (meta->status != 200)
    return fail(not_found("model '" + o.model + "' at " + o.url + ": " + meta->body));
  auto body = make_body(json::parse(meta->body), o.batch, o.binary);
  if (!body.is_ok()) return fail(body.status());
  std::vector<Level> levels;
  std::printf("%11s %10s %10s %10s %10s %10s %12s %12s %9s %7s\n", "concurrency", "infer/s",
              "p50 us", "p90 us", "p95 us", "p99 us", "queue us", "compute us", "avg batch",
              "failed");
  for (int c = lo; c <= hi; c += step) {
    Level l = run_level(o, host, port, body->first, body->second, c);
    std::printf("%11d %10.1f %10.0f %10.0f %10.0f %10.0f %12.0f %12.0f %9.2f %7lld\n", c,
                l.ok * o.batch / l.seconds, l.p50, l.p90, l.p95, l.p99, l.server_queue_us,
                l.server_compute_us, l.avg_batch, static_cast<long long>(l.failed));
    levels.push_back(l);
  }
  if (!o.json_out.empty()) {
    json j = json::array();
    for (const Level& l : levels)
      j.push_back({{"concurrency", l.concurrency},
                   {"infer_per_s", l.ok * o.batch / l.seconds},
                   {"p50_us", l.p50},
                   {"p90_us", l.p90},
                   {"p95_us", l.p95},
                   {"p99_us", l.p99},
                   {"server_queue_us", l.server_queue_us},
                   {"server_compute_us", l.server_compute_us},
                   {"avg_batch", l.avg_batch},
                   {"ok", l.ok},
                   {"failed", l.failed}});
    std::ofstream(o.json_out) << j.dump(2) << "\n";
  }
  if (!o.csv_out.empty()) {
    std::ofstream csv(o.csv_out);
    csv << "concurrency,infer_per_s,p50_us,p90_us,p95_us,p99_us,server_queue_us,"
           "server_compute_us,avg_batch,failed\n";
    for (const Level& l : levels)
      csv << l.concurrency << "," << l.ok * o.batch / l.seconds << "," << l.p50 << "," << l.p90
          << "," << l.p95 << "," << l.p99 << "," << l.server_queue_us << "," << l.server_compute_us
          << "," << l.avg_batch << "," << l.failed << "\n";
  }
  return kExitOk;
}

}  // namespace

Command add_perf_command(CLI::App& root, const GlobalOptions&) {
  auto o = std::make_shared<PerfOptions>();
  CLI::App* app = root.add_subcommand(
      "perf", "load a KServe v2 HTTP server (kiln serve, Triton) at rising concurrency");
  app->add_option("-m,--model", o->model, "the model's name on the server")->required();
  app->add_option("-u,--url", o->url, "HOST:PORT of the HTTP endpoint")->capture_default_str();
  app->add_option("--concurrency-range", o->range,
                  "START[:END[:STEP]]: clients sending requests back to back")
      ->capture_default_str();
  app->add_option("--duration", o->duration, "seconds per concurrency")->capture_default_str();
  app->add_option("--batch", o->batch, "rows per request")->capture_default_str();
  app->add_flag("--binary", o->binary, "binary tensor data in and out (else JSON)");
  app->add_option("--json", o->json_out, "write the levels as JSON");
  app->add_option("--csv", o->csv_out, "write the levels as CSV");
  return {app, [o] { return run(*o); }};
}

}  // namespace kiln::cli
