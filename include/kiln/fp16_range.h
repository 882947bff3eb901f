// The fp16 range guard: which values of a model leave float16's range, found by running the
// model in float32 on sample inputs.
//
//   auto fp32 = kiln::Engine::load("model.onnx", {});          // a CPU fp32 engine
//   auto report = kiln::check_fp16_range(**fp32, samples);
//   for (const auto& f : report->findings) ...                  // describe(f) says what
//
// float16 holds |x| <= 65504 and normal values down to 2^-14 (6.1e-5). A value whose largest
// magnitude exceeds 65504 becomes inf in an fp16 engine; one whose non-zero values mostly sit
// below 2^-14 loses them to subnormals and zero. Both are silent in fp16 itself. Keeping such
// layers in float32 is the remedy (per-node precision).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/engine.h"

namespace kiln {

struct Fp16RangeFinding {
  enum class Kind { kOverflow, kUnderflow };
  Kind kind = Kind::kOverflow;
  std::string value, node, op;
  double max_abs = 0;                // the largest |x| over the samples
  double below_normal_fraction = 0;  // of the non-zero elements, over the samples
};

struct Fp16RangeReport {
  std::vector<Fp16RangeFinding> findings;  // overflows first, then by severity
  int samples = 0;
  int64_t values_checked = 0;
};

// A value is reported when its max |x| over the samples exceeds 65504, or when more than
// `underflow_fraction` of its non-zero elements are below 2^-14.
inline constexpr double kFp16Max = 65504.0;
inline constexpr double kFp16UnderflowFraction = 0.5;

// Runs `fp32_engine` (a CPU engine, float32) on every sample and reports the values that
// leave fp16's range.
Result<Fp16RangeReport> check_fp16_range(const Engine& fp32_engine,
                                         const std::vector<std::map<std::string, Tensor>>& samples,
                                         double underflow_fraction = kFp16UnderflowFraction);

// One line: "node 'conv7' (Conv): output 'x' reaches 3.6e+07, beyond fp16's 65504".
std::string describe(const Fp16RangeFinding& f);

}  // namespace kiln
