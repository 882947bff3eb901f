// `kiln bench MODEL [--batch N] [--warmup S] [--duration S] [--shape NAME=DIMS] [--json F]`:
// latency and throughput on random inputs.
//
// Runs for `warmup` seconds untimed, then times single runs until `duration` seconds have
// passed (at least 3 runs). Latency is per run (one batch); throughput is
// batch·runs / wall time of the timed phase. A symbolic batch dimension takes --batch;
// other symbolic dimensions need --shape.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "kiln/cli_common.h"

namespace kiln::cli {

namespace {

struct BenchOptions {
  std::string model;
  int64_t batch = 0;  // 0: not given
  double warmup = 1.0;
  double duration = 3.0;
  std::vector<std::string> shapes;
  std::string json;
  uint32_t seed = 1;
};

// Uniform random values valid for the dtype; integers stay small and non-negative so that
// index-like inputs are in range for typical models.
Status fill_random(Tensor& t, std::mt19937& gen) {
  std::uniform_real_distribution<float> real(-1.f, 1.f);
  std::uniform_int_distribution<int> small(0, 7);
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype()) {
      case DataType::kFloat32: t.data<float>()[i] = real(gen); break;
      case DataType::kFloat64: t.data<double>()[i] = real(gen); break;
      case DataType::kFloat16:  // random halves in [1, 2): exponent 15, random mantissa
      case DataType::kBFloat16:
        t.data<uint16_t>()[i] = static_cast<uint16_t>(
            t.dtype() == DataType::kFloat16 ? 0x3C00 | (gen() & 0x3FF) : 0x3F80 | (gen() & 0x7F));
        break;
      case DataType::kBool: t.data<uint8_t>()[i] = gen() & 1; break;
      case DataType::kUInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(gen()); break;
      case DataType::kInt8: t.data<int8_t>()[i] = static_cast<int8_t>(small(gen)); break;
      case DataType::kInt16: t.data<int16_t>()[i] = static_cast<int16_t>(small(gen)); break;
      case DataType::kUInt16: t.data<uint16_t>()[i] = static_cast<uint16_t>(small(gen)); break;
      case DataType::kInt32: t.data<int32_t>()[i] = small(gen); break;
      case DataType::kUInt32: t.data<uint32_t>()[i] = small(gen); break;
      case DataType::kInt64: t.data<int64_t>()[i] = small(gen); break;
      case DataType::kUInt64: t.data<uint64_t>()[i] = small(gen); break;
      default: return unsupported(std::string("cannot make random ") + dtype_name(t.dtype()));
    }
  }
  return Status::ok();
}

// The concrete shape of each input: --shape overrides, else the declared shape with a
// symbolic dim 0 set to the batch. Errors are usage errors.
Result<std::map<std::string, Shape>> input_shapes(const Engine& e, const BenchOptions& o) {
  std::map<std::string, Shape> given;
  for (const std::string& spec : o.shapes) {
    size_t eq = spec.find('=');
    std::string name = eq == std::string::npos ? "" : spec.substr(0, eq);
    if (name.empty()) {
      if (e.inputs().size() != 1)
        return invalid_argument("--shape " + spec + ": name the input (--shape NAME=DIMS)");
      name = e.inputs()[0].name;
    }
    KILN_ASSIGN_OR_RETURN(given[name],
                          parse_dims(spec.substr(eq == std::string::npos ? 0 : eq + 1)));
  }
  std::map<std::string, Shape> shapes;
  for (const TensorInfo& info : e.inputs()) {
    if (auto it = given.find(info.name); it != given.end()) {
      shapes[info.name] = it->second;
      given.erase(it);
      continue;
    }
    if (!info.has_shape)
      return invalid_argument("input '" + info.name +
                              "' has no declared shape; give one with "
                              "--shape " +
                              info.name + "=1x3x224x224");
    Shape s;
    for (size_t d = 0; d < info.dims.size(); ++d) {
      if (d == 0 && info.dims[0] >= 0 && o.batch > 0 && o.batch != info.dims[0])
        return invalid_argument("input '" + info.name + "' has a fixed batch of " +
                                std::to_string(info.dims[0]) + "; --batch " +
                                std::to_string(o.batch) + " cannot be used");
      if (info.dims[d] >= 0) {
        s.push_back(info.dims[d]);
      } else if (d == 0) {
        s.push_back(o.batch > 0 ? o.batch : 1);
      } else {
        return invalid_argument(
            "input '" + info.name + "' " + declared_shape(info) + " has symbolic dimension " +
            std::to_string(d) +
            (info.dim_params[d].empty() ? "" : " ('" + info.dim_params[d] + "')") +
            "; give the shape with --shape " + info.name + "=1x3x224x224");
      }
    }
    shapes[info.name] = s;
  }
  if (!given.empty())
    return invalid_argument("--shape names unknown input '" + given.begin()->first + "'");
  return shapes;
}

double percentile(const std::vector<double>& sorted, double p) {
  size_t rank = static_cast<size_t>(std::ceil(p / 100 * sorted.size()));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

int run(const BenchOptions& o, const GlobalOptions& g) {
  if (o.warmup < 0 || o.duration < 0) return usage_error("--warmup/--duration must be >= 0");
  auto engine_or = load_engine(o.model, g);
  if (!engine_or.is_ok()) return fail(engine_or.status());
  const Engine& e = **engine_or;

  auto shapes = input_shapes(e, o);
  if (!shapes.is_ok()) return usage_error(shapes.status().message());
  std::map<std::string, Tensor> feeds;
  std::mt19937 gen(o.seed);
  for (const TensorInfo& info : e.inputs()) {
    Tensor t(info.dtype, shapes->at(info.name));
    Status s = fill_random(t, gen);
    if (!s.is_ok()) return fail(s.with_context("input '" + info.name + "'"));
    feeds[info.name] = t;
  }
  // Images per run: the first input's leading dimension.
  int64_t batch = 1;
  if (!e.inputs().empty() && !shapes->at(e.inputs()[0].name).empty())
    batch = shapes->at(e.inputs()[0].name)[0];

  auto ctx = e.create_context();
  double start = now_seconds();
  int warmup_runs = 0;
  while (o.warmup > 0 && (warmup_runs == 0 || now_seconds() - start < o.warmup)) {
    auto r = ctx->run(feeds);
    if (!r.is_ok()) return fail(r.status());
    ++warmup_runs;
  }
  spdlog::info("warmup: {} runs in {:.2f} s", warmup_runs, now_seconds() - start);

  std::vector<double> lat_ms;
  start = now_seconds();
  while (lat_ms.size() < 3 || now_seconds() - start < o.duration) {
    double t0 = now_seconds();
    auto r = ctx->run(feeds);
    double t1 = now_seconds();
    if (!r.is_ok()) return fail(r.status());
    lat_ms.push_back((t1 - t0) * 1e3);
  }
  double total = now_seconds() - start;
  std::sort(lat_ms.begin(), lat_ms.end());
  double med = percentile(lat_ms, 50), p90 = percentile(lat_ms, 90), p99 = percentile(lat_ms, 99);
  double ips = static_cast<double>(batch) * lat_ms.size() / total;
  int threads = resolved_threads(g);

  std::printf("%-24s %-6s %5s %7s %6s %9s %9s %9s %9s %12s\n", "model", "device", "batch",
              "threads", "runs", "min ms", "median ms", "p90 ms", "p99 ms", "images/s");
  std::string name = std::filesystem::path(o.model).filename().string();
  std::printf("%-24s %-6s %5lld %7d %6zu %9.4g %9.4g %9.4g %9.4g %12.1f\n", name.c_str(),
              g.device.c_str(), static_cast<long long>(batch), threads, lat_ms.size(), lat_ms[0],
              med, p90, p99, ips);

  if (!o.json.empty()) {
    nlohmann::json j = {
        {"model", o.model},
        {"device", g.device},
        {"precision", "fp32"},
        {"batch", batch},
        {"threads", threads},
        {"runs", lat_ms.size()},
        {"throughput_ips", ips},
        {"latency_ms", {{"min", lat_ms[0]}, {"median", med}, {"p90", p90}, {"p99", p99}}},
        {"kiln_version", KILN_VERSION},
    };
    std::ofstream f(o.json);
    f << j.dump(2) << "\n";
    f.close();
    if (!f) return fail(not_found("cannot write '" + o.json + "'"));
  }
  return kExitOk;
}

}  // namespace

Command add_bench_command(CLI::App& root, const GlobalOptions& global) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* app = root.add_subcommand("bench", "measure latency and throughput on random inputs");
  app->add_option("model", o->model, "the .onnx model")->required();
  app->add_option("-b,--batch", o->batch, "batch size for a symbolic batch dimension (default 1)")
      ->check(CLI::PositiveNumber);
  app->add_option("--warmup", o->warmup, "seconds of untimed runs first")->capture_default_str();
  app->add_option("--duration", o->duration, "seconds of timed runs (at least 3 runs)")
      ->capture_default_str();
  app->add_option("--shape", o->shapes, "NAME=1x3x224x224: an input's shape (for symbolic dims)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app->add_option("--json", o->json, "also write the results as JSON to this file");
  app->add_option("--seed", o->seed, "random input seed")->capture_default_str();
  return {app, [o, &global] { return run(*o, global); }};
}

}  // namespace kiln::cli
