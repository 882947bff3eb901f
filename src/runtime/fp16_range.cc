// check_fp16_range: per-value statistics of fp32 runs (Context::value_stats), merged over
// the samples and judged against float16's range.
#include "kiln/fp16_range.h"

#include <algorithm>
#include <cstdio>

namespace kiln {

Result<Fp16RangeReport> check_fp16_range(const Engine& fp32_engine,
                                         const std::vector<std::map<std::string, Tensor>>& samples,
                                         double underflow_fraction) {
  if (fp32_engine.options().device != Device::kCpu)
    return invalid_argument("the fp16 range check runs a CPU float32 engine");
  if (samples.empty()) return invalid_argument("the fp16 range check needs at least one sample");
  struct Merged {
    ValueStats s;
    int64_t nonzero = 0, below = 0;
  };
  std::vector<Merged> merged;
  std::map<std::string, size_t> index;
  auto ctx = fp32_engine.create_context();
  for (size_t k = 0; k < samples.size(); ++k) {
    auto stats = ctx->value_stats(samples[k]);
    if (!stats.is_ok())
      return stats.status().with_context("fp16 range check, sample " + std::to_string(k + 1));
    for (const ValueStats& s : *stats) {
      auto [it, fresh] = index.emplace(s.value, merged.size());
      if (fresh) merged.push_back({s, 0, 0});
      Merged& m = merged[it->second];
      m.s.max_abs = std::max(m.s.max_abs, s.max_abs);
      m.nonzero += s.nonzero;
      m.below += s.below_fp16_normal;
    }
  }
  Fp16RangeReport r;
  r.samples = static_cast<int>(samples.size());
  r.values_checked = static_cast<int64_t>(merged.size());
  for (const Merged& m : merged) {
    Fp16RangeFinding f;
    f.value = m.s.value;
    f.node = m.s.node;
    f.op = m.s.op;
    f.max_abs = m.s.max_abs;
    f.below_normal_fraction = m.nonzero ? static_cast<double>(m.below) / m.nonzero : 0.0;
    if (f.max_abs > kFp16Max) {
      f.kind = Fp16RangeFinding::Kind::kOverflow;
      r.findings.push_back(f);
    } else if (f.below_normal_fraction > underflow_fraction) {
      f.kind = Fp16RangeFinding::Kind::kUnderflow;
      r.findings.push_back(f);
    }
  }
  // Overflows first (largest first): they turn into inf; then the worst underflows.
  std::stable_sort(r.findings.begin(), r.findings.end(),
                   [](const Fp16RangeFinding& a, const Fp16RangeFinding& b) {
                     if (a.kind != b.kind) return a.kind == Fp16RangeFinding::Kind::kOverflow;
                     if (a.kind == Fp16RangeFinding::Kind::kOverflow) return a.max_abs > b.max_abs;
                     return a.below_normal_fraction > b.below_normal_fraction;
                   });
  return r;
}

std::string describe(const Fp16RangeFinding& f) {
  char buf[160];
  if (f.kind == Fp16RangeFinding::Kind::kOverflow)
    std::snprintf(buf, sizeof buf, "reaches %.3g, beyond fp16's 65504", f.max_abs);
  else
    std::snprintf(buf, sizeof buf,
                  "has %.0f%% of its non-zero values below fp16's smallest normal 6.1e-05 "
                  "(largest %.3g)",
                  100 * f.below_normal_fraction, f.max_abs);
  return "node '" + f.node + "' (" + f.op + "): output '" + f.value + "' " + buf;
}

}  // namespace kiln
