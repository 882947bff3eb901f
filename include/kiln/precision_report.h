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
  // The float values the node reads (through an 8-bit Q → DQ pair: the value quantized), by
  // name: where the error came in is the first node over budget whose inputs are within it.
  std::vector<std::string> inputs;
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

// Where the error comes in: the layers over budget whose inputs are all within it (or not
// compared), in execution order. A layer's error includes everything upstream of it, so these
// are the layers to name, or to keep at a higher precision.
std::vector<LayerError> error_origins(const PrecisionReport& report);

// The precision a reduced engine keeps a layer at (by measured error, or by name: kiln
// --keep): fp16 for a CUDA int8 or fp8 engine, fp32 otherwise.
Precision higher_precision(const EngineOptions& reduced);

// Fallback by measured error: the layers of a reduced engine (`reduced.precision` fp16, bf16,
// int8 or fp8) to keep at the next higher precision so that no layer's error against fp32 on
// `samples` exceeds `max_layer_error`, found in rounds. Each round builds the engine of
// `model_path` with the overrides so far, compares it with `fp32` (compare_precision), and keeps
// the layers where the error comes in: each node over budget whose inputs are all within it
// (for int8 and fp8, the quantized layers among it and its producers, the only ones an override
// moves); where such a layer is kept already, its error is what its inputs carry, and the
// nearest layers upstream not kept yet are kept. It stops when no layer is over budget, when a
// round finds nothing more to keep, or after `max_rounds`, keeping layers at
// higher_precision(reduced).
struct ErrorFallback {
  PrecisionMap overrides;         // the options' own, plus one per layer kept
  std::vector<std::string> kept;  // "conv7 (Conv): 3.2e-02 > 1.0e-02, round 1", in order
  PrecisionReport report;         // the last round's comparison
  int rounds = 0;
};
Result<ErrorFallback> keep_layers_within_error(
    const std::string& model_path, const EngineOptions& reduced, const Engine& fp32,
    const std::vector<std::map<std::string, Tensor>>& samples, double max_layer_error,
    int max_rounds = 4);

}  // namespace kiln
