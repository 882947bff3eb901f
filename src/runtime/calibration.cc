// calibrate(): two passes of an fp32 engine over the samples, observing the values an int8
// engine quantizes (kiln/calibration.h); and where an int8 build gets its magnitudes.
#include "kiln/calibration.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>

#include "passes/pass.h"
#include "quant/calibrator.h"
#include "runtime/context_plans.h"
#include "runtime/engine_impl.h"
#include "runtime/int8_build.h"

namespace kiln {

namespace {

using Clock = std::chrono::steady_clock;

// Pass 1 keeps each wanted value's largest magnitude, pass 2 (once `ranges` are set) its
// histogram over [0, that magnitude].
class MagnitudeObserver final : public RunObserver {
 public:
  // `values` of `g`. A value a reshape makes (a kernel that only renames its input's bytes,
  // which runs as no step) holds the elements of the value it reshapes: it is counted when
  // that one is seen.
  MagnitudeObserver(const Graph& g, const std::vector<std::string>& values) {
    for (const std::string& name : values) {
      max_[name];
      const Value* v = g.find_value(name);
      while (v && v->producer && is_reshape(v->producer->op)) v = v->producer->input(0);
      if (v && v->name != name) same_as_[v->name].push_back(name);
    }
  }
  // From here on, histograms over each value's magnitude of pass 1.
  void start_histograms() {
    for (const auto& [name, m] : max_) hist_.emplace(name, quant::AbsHistogram(m.amax));
  }
  Status observe(const Node& node, size_t i, const TensorRef& ref, ContextDevice& device) override {
    const Value* v = node.outputs[i];
    if (!v || v->dtype != DataType::kFloat32) return Status::ok();
    if (!max_.count(v->name) && !same_as_.count(v->name)) return Status::ok();
    KILN_ASSIGN_OR_RETURN(const Tensor t, observed_float32(ref, device, scratch_));
    add(v->name, t);
    return Status::ok();
  }
  // A value's elements (a graph input's samples, which no node writes, are given so).
  void add(const std::string& name, const Tensor& t) {
    auto same = same_as_.find(name);
    if (same != same_as_.end())
      for (const std::string& other : same->second) add_one(other, t);
    add_one(name, t);
  }
  const std::map<std::string, quant::AbsMax>& maxima() const { return max_; }
  static bool is_reshape(OpKind op) {
    return op == OpKind::Reshape || op == OpKind::Flatten || op == OpKind::Squeeze ||
           op == OpKind::Unsqueeze;
  }
  const quant::AbsHistogram* histogram(const std::string& name) const {
    auto it = hist_.find(name);
    return it == hist_.end() ? nullptr : &it->second;
  }
  const std::set<std::string>& seen() const { return seen_; }
  // Whether `name` was seen as a feature vector: one element per channel and sample ([N, C],
  // or [N, C, 1, 1] after a global pooling).
  bool vector(const std::string& name) const { return vectors_.count(name) > 0; }

 private:
  void add_one(const std::string& name, const Tensor& t) {
    auto it = max_.find(name);
    if (it == max_.end() || t.dtype() != DataType::kFloat32) return;
    const Shape& s = t.shape();
    if (s.size() >= 2 && s[0] > 0 && s[1] > 0 && t.numel() == s[0] * s[1]) vectors_.insert(name);
    if (hist_.empty())
      it->second.add(t.data<float>(), t.numel());
    else
      hist_.at(name).add(t.data<float>(), t.numel());
    seen_.insert(name);
  }

  std::map<std::string, quant::AbsMax> max_;
  std::map<std::string, std::vector<std::string>> same_as_;  // value → reshapes of it wanted
  std::map<std::string, quant::AbsHistogram> hist_;
  std::set<std::string> seen_;
  std::set<std::string> vectors_;
  std::vector<uint8_t> scratch_;
};

// One pass over at most `limit` samples; returns how many ran.
Result<int64_t> run_pass(Context& ctx, CalibrationSource& source, MagnitudeObserver& observer,
                         int64_t limit, int batch, CalibrationProgress progress,
                         const std::function<void(const CalibrationProgress&)>& report,
                         Clock::time_point t0) {
  KILN_RETURN_IF_ERROR_CTX(source.rewind(), "calibration samples " + source.describe());
  int64_t done = 0;
  while (done < limit) {
    const int want = static_cast<int>(std::min<int64_t>(batch, limit - done));
    KILN_ASSIGN_OR_RETURN(auto inputs, source.next(want));
    if (inputs.empty()) break;
    int64_t n = -1;
    for (const auto& [name, t] : inputs) {
      const int64_t rows = t.shape().empty() ? 0 : t.shape()[0];
      if (rows < 1 || rows > want || (n >= 0 && rows != n))
        return invalid_argument("calibration samples " + source.describe() + ": input '" + name +
                                "' has " + std::to_string(rows) + " samples in a batch of " +
                                std::to_string(want) + " asked" +
                                (n >= 0 ? ", another input " + std::to_string(n) : ""));
      n = rows;
      observer.add(name, t);
    }
    context_impl(ctx).observer = &observer;
    auto out = ctx.run(inputs);
    context_impl(ctx).observer = nullptr;
    KILN_RETURN_IF_ERROR_CTX(out.status(), "calibration run on samples " + std::to_string(done) +
                                               " to " + std::to_string(done + n - 1) + " of " +
                                               source.describe());
    done += n;
    progress.samples_done = done;
    progress.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (report) report(progress);
  }
  return done;
}

// FNV-1a over the model's bytes: what a kiln cache names the model by.
std::string fingerprint(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace

quant::CalibrationTable expected_calibration(const Engine& engine, const EngineOptions& options) {
  quant::CalibrationTable t;
  auto spec = quant::parse_calibration_method(options.calibration_method,
                                              options.precision == Precision::kFp8);
  t.method = spec.is_ok() ? spec->name() : options.calibration_method;
  t.model = fingerprint(engine_impl(engine).model_bytes);
  for (const TensorInfo& in : engine.inputs()) {
    std::string dims;
    for (int64_t d : in.dims) dims += (dims.empty() ? "" : ",") + (d < 0 ? "?" : std::to_string(d));
    t.inputs +=
        (t.inputs.empty() ? "" : " ") + in.name + ":" + dtype_name(in.dtype) + "[" + dims + "]";
  }
  return t;
}

std::vector<std::string> calibration_values(const Engine& engine) {
  return int8_calibration_values(*engine_impl(engine).graph);
}

EngineOptions calibration_engine_options(const EngineOptions& options) {
  EngineOptions o = options;
  o.precision = Precision::kFp32;
  o.precision_overrides.clear();
  o.fp32_values.clear();
  o.shape_profiles.clear();
  o.shape_ranges.clear();
  o.only_profile_shapes = false;
  o.cuda_graph = false;
  o.time_tactics = false;  // the fp32 kernels' first choice
  return o;
}

Result<std::vector<CalibrationResult>> calibrate_methods(
    const Engine& fp32_engine, CalibrationSource& source, const EngineOptions& options,
    const std::vector<std::string>& methods,
    const std::function<void(const CalibrationProgress&)>& progress) {
  if (fp32_engine.options().precision != Precision::kFp32)
    return invalid_argument(std::string("calibrate: the engine must compute in fp32, not ") +
                            precision_name(fp32_engine.options().precision));
  if (methods.empty()) return invalid_argument("calibrate: no calibration method");
  std::vector<quant::CalibrationSpec> specs;
  bool histograms = false;
  for (const std::string& m : methods) {
    KILN_ASSIGN_OR_RETURN(quant::CalibrationSpec spec,
                          quant::parse_calibration_method(m, options.precision == Precision::kFp8));
    specs.push_back(spec);
    histograms = histograms || specs.back().needs_histogram();
  }
  const std::vector<std::string> values = calibration_values(fp32_engine);
  if (values.empty())
    return invalid_argument(
        "calibrate: the model has no layer an int8 engine quantizes (Conv, Gemm, or MatMul of "
        "constant weights, reading float32)");
  const auto t0 = Clock::now();
  auto ctx = fp32_engine.create_context();
  MagnitudeObserver observer(*engine_impl(fp32_engine).graph, values);
  const int passes = histograms ? 2 : 1;
  CalibrationProgress p{1, passes, 0, options.calibration_samples, 0};
  KILN_ASSIGN_OR_RETURN(const int64_t samples,
                        run_pass(*ctx, source, observer, options.calibration_samples,
                                 options.calibration_batch, p, progress, t0));
  if (samples == 0)
    return invalid_argument("calibrate: no samples in " + source.describe() +
                            (source.skipped()
                                 ? " (" + std::to_string(source.skipped()) + " could not be read)"
                                 : std::string()));
  if (passes == 2) {
    observer.start_histograms();
    p = {2, passes, 0, samples, 0};
    KILN_ASSIGN_OR_RETURN(
        const int64_t again,
        run_pass(*ctx, source, observer, samples, options.calibration_batch, p, progress, t0));
    if (again != samples)
      return internal_error("calibrate: " + source.describe() + " gave " + std::to_string(samples) +
                            " samples, then " + std::to_string(again));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<CalibrationResult> results;
  for (const quant::CalibrationSpec& spec : specs) {
    CalibrationResult& r = results.emplace_back();
    r.method = spec.name();
    r.samples = samples;
    r.skipped = source.skipped();
    r.seconds = seconds;
    for (const std::string& v : values) {
      if (!observer.seen().count(v))
        return internal_error("calibrate: value '" + v + "' was never seen computed");
      const quant::AbsMax& m = observer.maxima().at(v);
      // Entropy clips the few large elements of a feature vector, which carry its signal
      // (a pooled ResNet-18 feature clipped at 7% of its largest: logits 85% off): min-max.
      if (spec.method == quant::CalibrationMethod::kEntropy && observer.vector(v)) {
        r.amax[v] = m.amax;
        r.minmax_values.push_back(v);
        continue;
      }
      r.amax[v] = quant::choose_amax(spec, m.amax, observer.histogram(v));
    }
  }
  return results;
}

Status save_calibration(const Engine& fp32_engine, const EngineOptions& options,
                        CalibrationResult& result) {
  if (options.calibration_cache.empty())
    return invalid_argument("save_calibration: no calibration_cache named");
  quant::CalibrationTable t = expected_calibration(fp32_engine, options);
  t.samples = result.samples;
  t.amax = result.amax;
  KILN_RETURN_IF_ERROR(
      quant::write_calibration_cache(options.calibration_cache, t, quant::CacheFormat::kKiln));
  result.cache = options.calibration_cache;
  return Status::ok();
}

Result<CalibrationResult> calibrate(
    const Engine& fp32_engine, CalibrationSource& source, const EngineOptions& options,
    const std::function<void(const CalibrationProgress&)>& progress) {
  KILN_ASSIGN_OR_RETURN(
      std::vector<CalibrationResult> r,
      calibrate_methods(fp32_engine, source, options, {options.calibration_method}, progress));
  if (!options.calibration_cache.empty())
    KILN_RETURN_IF_ERROR(save_calibration(fp32_engine, options, r[0]));
  return std::move(r[0]);
}

Result<quant::CalibrationTable> int8_calibration(const std::string& model_bytes,
                                                 const std::string& model_dir,
                                                 const EngineOptions& options,
                                                 QuantizationReport& report) {
  KILN_ASSIGN_OR_RETURN(
      auto fp32, Engine::from_bytes(model_bytes, calibration_engine_options(options), model_dir));
  quant::CalibrationTable expected = expected_calibration(*fp32, options);
  const std::vector<std::string> values = calibration_values(*fp32);
  const std::string& cache = options.calibration_cache;
  if (!cache.empty() && std::filesystem::exists(cache)) {
    KILN_ASSIGN_OR_RETURN(quant::CalibrationTable t, quant::read_calibration_cache(cache));
    KILN_RETURN_IF_ERROR(quant::check_cache_matches(t, expected, values));
    report.method = t.method;
    report.samples = t.samples;
    report.source = "cache " + cache + (t.format == quant::CacheFormat::kKiln ? "" : " (TensorRT)");
    return t;
  }
  if (options.calibration_data.empty())
    return invalid_argument(
        std::string("precision ") + precision_name(options.precision) +
        " needs calibration samples (--calib DIR|FILE.npy, "
        "EngineOptions::calibration_data) or the cache of an earlier calibration "
        "(--calib-cache FILE)" +
        (cache.empty() ? std::string() : ": '" + cache + "' does not exist"));
  KILN_ASSIGN_OR_RETURN(auto source, open_calibration_data(options.calibration_data, *fp32));
  KILN_ASSIGN_OR_RETURN(CalibrationResult r, calibrate(*fp32, *source, options));
  report.method = r.method;
  report.samples = r.samples;
  report.calibration_seconds = r.seconds;
  report.source = "calibrated on " + std::to_string(r.samples) + " samples of " +
                  source->describe() +
                  (r.skipped ? " (" + std::to_string(r.skipped) + " unreadable, skipped)" : "");
  expected.samples = r.samples;
  expected.amax = std::move(r.amax);
  return expected;
}

}  // namespace kiln
