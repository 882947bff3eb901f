// The fp16 range guard for the CLI: before an fp16 engine is built, benchmarked or inspected,
// the model runs in float32 on the CPU on sample inputs and the values that would leave
// float16's range are named (kiln/fp16_range.h). The samples are --calib's where given (the
// first 16, as the model will see them), else random inputs, which the report says: a trained
// net fed real images reaches ranges random inputs do not.
#include <algorithm>
#include <cstdio>

#include "cli_common.h"
#include "kiln/calibration.h"
#include "kiln/fp16_range.h"

namespace kiln::cli {

void print_fp16_findings(std::FILE* out, const std::vector<Fp16RangeFinding>& f) {
  const size_t shown = std::min<size_t>(f.size(), 10);
  for (size_t i = 0; i < shown; ++i) std::fprintf(out, "  %s\n", describe(f[i]).c_str());
  if (f.size() > shown) std::fprintf(out, "  ... and %zu more\n", f.size() - shown);
}

namespace {

// Up to 16 samples of --calib, in batches of at most 4.
Result<std::vector<std::map<std::string, Tensor>>> calibration_samples(const Engine& engine,
                                                                       const std::string& data) {
  KILN_ASSIGN_OR_RETURN(auto source, open_calibration_data(data, engine));
  return next_batches(*source, 4, 4);
}

}  // namespace

Result<Fp16RangeReport> fp16_range_report(const std::string& model, const GlobalOptions& g,
                                          int64_t batch, const std::vector<std::string>& shapes,
                                          std::string* on) {
  EngineOptions o;
  o.device = Device::kCpu;
  o.threads = g.engine.threads;
  o.input_mean = g.engine.input_mean;  // how --calib's images are normalized
  o.input_std = g.engine.input_std;
  o.calibration_resize = g.engine.calibration_resize;
  KILN_ASSIGN_OR_RETURN(auto engine, Engine::load(model, o));
  if (!g.engine.calibration_data.empty()) {
    KILN_ASSIGN_OR_RETURN(auto samples, calibration_samples(*engine, g.engine.calibration_data));
    *on = "samples of " + g.engine.calibration_data;
    return check_fp16_range(*engine, samples);
  }
  *on = "random inputs; --calib DIR|FILE.npy checks inputs like the real ones";
  // A value's range is a property of each image, not of the batch: at most two images a sample
  // keep the check's cost independent of --batch (at batch 64 ConvNeXt-T's float32 run on the
  // CPU took minutes before an fp16 bench could start).
  const int64_t images = std::min<int64_t>(batch, 2);
  std::vector<std::map<std::string, Tensor>> samples;
  for (uint32_t seed : {101u, 102u}) {
    KILN_ASSIGN_OR_RETURN(auto feeds, random_inputs(*engine, images, shapes, seed));
    samples.push_back(std::move(feeds));
  }
  return check_fp16_range(*engine, samples);
}

std::vector<std::string> print_fp16_range(const std::string& model, const GlobalOptions& g,
                                          int64_t batch, const std::vector<std::string>& shapes,
                                          bool always) {
  std::string on;
  auto report = fp16_range_report(model, g, batch, shapes, &on);
  if (!report.is_ok()) {
    std::fprintf(stderr, "kiln: warning: fp16 range check not run: %s\n",
                 report.status().to_string().c_str());
    return {};
  }
  const auto& f = report->findings;
  if (f.empty()) {
    if (always)
      std::printf("fp16 range: all %lld float values inside fp16's range (float32 run on %d %s)\n",
                  static_cast<long long>(report->values_checked), report->samples, on.c_str());
    return {};
  }
  std::FILE* out = always ? stdout : stderr;
  const bool kept = g.cuda() && !g.no_fp16_fallback;
  std::fprintf(out,
               "%sfp16 range: %zu of %lld float values leave fp16's range (float32 run on %d "
               "%s); %s:\n",
               always ? "" : "kiln: warning: ", f.size(),
               static_cast<long long>(report->values_checked), report->samples, on.c_str(),
               kept ? "the layers writing and reading them are kept in fp32 (--no-fp16-fallback "
                      "runs them in fp16)"
                    : "in fp16 they become inf or lose their values");
  print_fp16_findings(out, f);
  std::vector<std::string> values;
  for (const Fp16RangeFinding& x : f) values.push_back(x.value);
  return values;
}

std::vector<std::string> fp16_guard(const std::string& model, const GlobalOptions& g, int64_t batch,
                                    const std::vector<std::string>& shapes) {
  if (!g.cuda() || g.engine.precision != Precision::kFp16 || is_plan_file(model)) return {};
  std::vector<std::string> values = print_fp16_range(model, g, batch, shapes, false);
  if (g.no_fp16_fallback) return {};
  return values;
}

}  // namespace kiln::cli
