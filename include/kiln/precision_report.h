// Where a reduced-precision engine (fp16, bf16, int8) loses accuracy: every layer's output
// against the fp32 engine's on the same samples, measured, not guessed from ranges.
//
//   auto fp32 = kiln::Engine::load("model.onnx", {});
//   auto int8 = kiln::Engine::load("model.onnx", int8_options);
//   auto report = kiln::compare_precision(**int8, **fp32, samples);
//   for (const auto& l : report->layers) if (l.over_budget) ...
//
// Use samples like the ones the engine will see (the calibration data, or held-aside
// images): random inputs reach other ranges than real ones do.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/engine.h"

namespace kiln {

struct LayerError {
  std::string value, node, op;  // the value compared and the node of the reduced engine
  // Over every sample: ||reduced − fp32|| / ||fp32|| (0 where both are all zeros) and the
  // cosine of the two (1 where both are all zeros).
  double relative_l2 = 0;
  double cosine = 1;
  bool over_budget = false;  // relative_l2 > PrecisionReport::max_layer_error
};

struct PrecisionReport {
  std::string precision;  // the reduced engine's
  int samples = 0;        // batches compared
  double max_layer_error = 0;
  // Every float value both engines compute, in the reduced engine's execution order (values
  // one engine fuses away are left out).
  std::vector<LayerError> layers;
  // The graph outputs (by the same measure), and the ones lost: fp32 gives nonzero values
  // and the reduced engine all zeros, or values that are not finite. Never silent.
  std::vector<LayerError> outputs;
  std::vector<std::string> lost;
};

inline constexpr double kDefaultMaxLayerError = 0.01;

// Runs both engines on every sample (the same inputs) and compares every value they share by
// name, and every graph output.
Result<PrecisionReport> compare_precision(const Engine& reduced, const Engine& fp32,
                                          const std::vector<std::map<std::string, Tensor>>& samples,
                                          double max_layer_error = kDefaultMaxLayerError);

}  // namespace kiln
