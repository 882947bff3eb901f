#include "cli_common.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include "kiln/calibration.h"

namespace kiln::cli {

void print_error(const std::string& message) {
  std::string one_line = message;
  for (char& c : one_line)
    if (c == '\n' || c == '\r') c = ' ';
  std::fprintf(stderr, "kiln: error: %s\n", one_line.c_str());
}

int fail(const Status& status) {
  print_error(status.message());
  return status.code() == StatusCode::kUnsupported ? kExitUsage : kExitBadInput;
}

int usage_error(const std::string& message) {
  print_error(message);
  return kExitUsage;
}

int resolved_threads(const GlobalOptions& global) {
  if (global.engine.threads > 0) return global.engine.threads;
  unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}

void print_calibration_progress(const CalibrationProgress& p) {
  constexpr int kWidth = 30;
  const double total = static_cast<double>(std::max<int64_t>(p.samples_total, 1));
  const int filled = static_cast<int>(kWidth * std::min(1.0, p.samples_done / total));
  std::string bar(static_cast<size_t>(filled), '=');
  bar.resize(kWidth, ' ');
  // Seconds per sample so far, over both passes: what is left of this pass and the next.
  const double done = (p.pass - 1) * total + static_cast<double>(p.samples_done);
  const double rate = p.seconds > 0 ? done / p.seconds : 0;
  const double left = rate > 0 ? (p.passes * total - done) / rate : 0;
  std::fprintf(stderr,
               "\rkiln: calibrating [%s] %lld/%lld samples, %.1f/s, %.1f s left (pass %d of %d)",
               bar.c_str(), static_cast<long long>(p.samples_done),
               static_cast<long long>(p.samples_total), rate, left, p.pass, p.passes);
  if (p.pass == p.passes && p.samples_done >= p.samples_total) std::fprintf(stderr, "\n");
}

Status calibrate_first(const std::string& path, EngineOptions& options) {
  if (!precision_is_8bit(options.precision) || options.calibration_data.empty() ||
      is_plan_file(path))
    return Status::ok();
  if (!options.calibration_cache.empty() && std::filesystem::exists(options.calibration_cache))
    return Status::ok();
  KILN_ASSIGN_OR_RETURN(auto engine, Engine::load(path, calibration_engine_options(options)));
  KILN_ASSIGN_OR_RETURN(auto source, open_calibration_data(options.calibration_data, *engine));
  if (options.calibration_cache.empty())
    options.calibration_cache =
        (std::filesystem::temp_directory_path() / ("kiln-" + std::to_string(::getpid()) + ".calib"))
            .string();
  KILN_ASSIGN_OR_RETURN(CalibrationResult r,
                        calibrate(*engine, *source, options, print_calibration_progress));
  if (r.samples < options.calibration_samples)
    std::fprintf(stderr, "kiln: note: calibrated on %lld samples, fewer than the %d asked\n",
                 static_cast<long long>(r.samples), options.calibration_samples);
  if (!r.minmax_values.empty())
    std::fprintf(stderr,
                 "kiln: note: entropy: %zu feature vectors (one element per channel, such as "
                 "'%s') take min-max scales\n",
                 r.minmax_values.size(), r.minmax_values.front().c_str());
  if (r.skipped)
    std::fprintf(stderr, "kiln: note: %lld unreadable samples skipped\n",
                 static_cast<long long>(r.skipped));
  return Status::ok();
}

Result<std::shared_ptr<Engine>> load_engine(const std::string& path, const GlobalOptions& global,
                                            const std::vector<std::string>& fp32_values,
                                            const std::function<void(EngineOptions&)>& adjust) {
  double t0 = now_seconds();
  EngineOptions options = global.engine;
  options.fp32_values.insert(options.fp32_values.end(), fp32_values.begin(), fp32_values.end());
  if (adjust) adjust(options);
  const bool temporary_cache = options.calibration_cache.empty();
  KILN_RETURN_IF_ERROR(calibrate_first(path, options));
  auto engine = Engine::load(path, options);
  if (temporary_cache && !options.calibration_cache.empty())
    std::remove(options.calibration_cache.c_str());
  if (engine.is_ok())
    for (const std::string& line : (*engine)->report().fp32_kept)
      std::fprintf(stderr, "kiln: note: %s\n", line.c_str());
  if (engine.is_ok()) {
    const QuantizationReport& q = (*engine)->report().quantization;
    const char* format = precision_name((*engine)->options().precision);
    size_t kernels = 0;
    for (const auto& l : q.layers) kernels += l.runs == format;
    if (!q.method.empty())
      std::fprintf(stderr,
                   "kiln: %s: %zu layers quantized (%zu on 8-bit operands, %zu simulated in "
                   "float: quantize, then dequantize), %zu in float; %s scales from %s\n",
                   format, q.layers.size(), kernels, q.layers.size() - kernels,
                   q.float_layers.size(), q.method.c_str(), q.source.c_str());
  }
  if (engine.is_ok())
    spdlog::info("loaded {} in {:.1f} ms ({} nodes)", path, (now_seconds() - t0) * 1e3,
                 (*engine)->stats().num_nodes);
  return engine;
}

// Up to `batches` batches of the calibration samples for the comparison: those after the
// ones calibration takes where the data holds more (held aside), else the same ones (said).
Result<std::vector<std::map<std::string, Tensor>>> held_aside_samples(const Engine& fp32,
                                                                      const EngineOptions& o,
                                                                      int batches,
                                                                      std::string* what) {
  KILN_ASSIGN_OR_RETURN(auto source, open_calibration_data(o.calibration_data, fp32));
  int64_t skipped = 0;
  while (skipped < o.calibration_samples) {
    KILN_ASSIGN_OR_RETURN(auto b, source->next(static_cast<int>(std::min<int64_t>(
                                      o.calibration_batch, o.calibration_samples - skipped))));
    if (b.empty()) break;
    skipped += b.begin()->second.shape()[0];
  }
  *what = "samples of " + source->describe() + " after the " + std::to_string(skipped) +
          " calibration takes";
  KILN_ASSIGN_OR_RETURN(auto kept, next_batches(*source, batches, o.calibration_batch));
  if (!kept.empty()) return kept;
  KILN_RETURN_IF_ERROR(source->rewind());
  *what = "the calibration samples of " + source->describe() +
          " themselves (none is left over to hold aside)";
  return next_batches(*source, batches, o.calibration_batch);
}

void print_quantization(const QuantizationReport& q, Precision format) {
  if (q.method.empty()) return;
  std::printf("\n%s quantization: %s scales from %s", precision_name(format), q.method.c_str(),
              q.source.c_str());
  if (q.calibration_seconds > 0) std::printf(" in %.1f s", q.calibration_seconds);
  std::printf("\n  %-32s %-7s %-32s %12s  %s\n", "layer", "op", "input", "amax", "runs");
  for (const auto& l : q.layers)
    std::printf("  %-32s %-7s %-32s %12.6g  %s\n", l.node.c_str(), l.op.c_str(), l.input.c_str(),
                l.amax, l.runs.c_str());
  for (const std::string& line : q.float_layers) std::printf("  in float: %s\n", line.c_str());
}

Result<std::vector<std::map<std::string, Tensor>>> next_batches(CalibrationSource& source,
                                                                int batches, int batch) {
  std::vector<std::map<std::string, Tensor>> r;
  for (int k = 0; k < batches; ++k) {
    KILN_ASSIGN_OR_RETURN(auto b, source.next(batch));
    if (b.empty()) break;
    r.push_back(std::move(b));
  }
  return r;
}

Result<std::vector<float>> parse_floats(const std::string& text, const std::string& what) {
  std::vector<float> r;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    char* stop = nullptr;
    float v = std::strtof(item.c_str(), &stop);
    if (item.empty() || stop != item.c_str() + item.size())
      return invalid_argument(what + ": '" + text + "' is not a number or a comma-separated list");
    r.push_back(v);
    start = end + 1;
  }
  return r;
}

Result<Shape> parse_dims(const std::string& text) {
  Shape s;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of("x,", start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    if (item.empty() || item.size() > 12 ||
        item.find_first_not_of("0123456789") != std::string::npos)
      return invalid_argument("'" + text + "' is not a shape like 1x3x224x224");
    s.push_back(std::stoll(item));
    start = end + 1;
  }
  return s;
}

std::string declared_shape(const TensorInfo& info) {
  if (!info.has_shape) return "[?]";
  std::string r = "[";
  for (size_t i = 0; i < info.dims.size(); ++i) {
    if (i) r += ",";
    r += info.dims[i] >= 0 ? std::to_string(info.dims[i])
                           : (info.dim_params[i].empty() ? "?" : info.dim_params[i]);
  }
  return r + "]";
}

std::string sanitize_file_name(const std::string& name) {
  std::string r = name;
  for (char& c : r) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) c = '_';
  }
  // "." and ".." would name directories.
  if (r.empty() || r.find_first_not_of('.') == std::string::npos) r = "_" + r;
  return r;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double percentile(const std::vector<double>& sorted, double p) {
  size_t rank = static_cast<size_t>(std::ceil(p / 100 * sorted.size()));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

Result<std::vector<int>> parse_gpu_list(const std::string& text, int visible) {
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string seen = visible == 0
                               ? "no CUDA GPU is visible"
                               : std::to_string(visible) + " CUDA GPU" + (visible == 1 ? "" : "s") +
                                     " visible (0 to " + std::to_string(visible - 1) + ")";
  const std::string where =
      seen + (env ? std::string(", CUDA_VISIBLE_DEVICES=") + env : std::string());
  std::vector<int> r;
  if (text == "all") {
    if (visible == 0) return invalid_argument("--gpus all: " + where);
    for (int i = 0; i < visible; ++i) r.push_back(i);
    return r;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    char* stop = nullptr;
    const long v = std::strtol(item.c_str(), &stop, 10);
    if (item.empty() || stop != item.c_str() + item.size() || v < 0 || v > 1023)
      return invalid_argument("--gpus '" + text + "': '" + item +
                              "' is not a GPU index (expected all, or 0,1,...)");
    r.push_back(static_cast<int>(v));
    start = end + 1;
  }
  for (int v : r)
    if (v >= visible)
      return invalid_argument("--gpus '" + text + "': there is no GPU " + std::to_string(v) + "; " +
                              where);
  return r;
}

}  // namespace kiln::cli
