// Graph optimization passes. Each pass rewrites the graph in place and returns whether it
// changed anything; a pass whose preconditions fail on a pattern leaves that pattern as it
// is (never an error for a graph it merely cannot improve). Errors are for graphs the
// reference kernels reject while folding. pipeline.cc lists the order in one place.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/images.h"
#include "kiln/options.h"
#include "kiln/report.h"
#include "kiln/status.h"

namespace kiln {

// What optimize_graph did, for `kiln inspect --passes`.
struct PassReport {
  struct Step {
    std::string pass;
    int64_t nodes_after = 0;
  };
  int64_t nodes_before = 0;
  std::vector<Step> steps;
  // One line per fused group: "conv1 + bn1 + relu1 → Conv[+ residual → Relu]".
  std::vector<std::string> fused_groups;
  // Each node fused away: the group's surviving node (its first) and its fused_groups line.
  struct FusedInto {
    std::string node;
    size_t group = 0;
  };
  std::map<std::string, FusedInto> fused_into;
  // Int8 engines: what quantize_int8 did.
  QuantizationReport quantization;
};

// Whether `v` is one of g's outputs (Value::is_graph_output is set only after the passes).
inline bool is_graph_output(const Graph& g, const Value* v) {
  return std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end();
}
// Whether `v` is one of g's inputs.
inline bool is_graph_input(const Graph& g, const Value* v) {
  return std::find(g.inputs().begin(), g.inputs().end(), v) != g.inputs().end();
}

// The single node reading `v`, when `v` is a private intermediate (one use, not a graph
// output); nullptr otherwise.
inline Node* sole_consumer(const Graph& g, const Value* v) {
  if (!v || v->consumers.size() != 1 || is_graph_output(g, v)) return nullptr;
  return v->consumers[0];
}

// The driver of a pattern fusion anchored on nodes of kind `op`: calls fuse(node) on each such
// node present when it starts (nodes the fusions make are not visited), then, when any call
// returned true, re-sorts the graph and drops the values nothing uses any more.
template <class Fuse>
Result<bool> fuse_each(Graph& g, OpKind op, Fuse&& fuse) {
  std::vector<Node*> anchors;
  for (const auto& n : g.nodes())
    if (n->op == op) anchors.push_back(n.get());
  bool changed = false;
  for (Node* n : anchors) changed |= fuse(n);
  if (changed) {
    KILN_RETURN_IF_ERROR(g.topo_sort());
    g.remove_unused_values();
  }
  return changed;
}

// Identity and inference-mode Dropout (mask unused) removed, their uses rewired.
Result<bool> remove_identity(Graph& g);
// Removes `n`, a node whose output 0 equals its input 0, its readers reading the input. A graph
// output keeps its name (the input takes it) where the input is a plain intermediate; else `n`
// stays and this returns false.
bool bypass_node(Graph& g, Node* n);
// A graph stored in float16 computes in float32 (widen_float16.cc): float16 constants and
// values inside the graph widened, the Casts between them removed, float16 graph inputs and
// outputs kept behind Casts. The engine's precision then decides the arithmetic.
Result<bool> widen_float16(Graph& g);
// Nodes with all-constant inputs (and Shape of static shapes, Constant nodes) replaced by
// constant values computed on the reference kernels.
Result<bool> fold_constants(Graph& g);
// BatchNormalization folded into the preceding Conv/Gemm, or turned into Mul + Add.
// `groups` (optional) receives "conv + bn" name lists for the report.
Result<bool> fold_batch_norm(Graph& g, std::vector<std::vector<std::string>>* groups = nullptr);
// An inference BatchNormalization as a per-channel affine map (fold_batch_norm.cc), for the
// passes that fold or fuse one: false unless its scale, B, mean and var are float32 constants
// of `c` values and no optional output is read.
struct BatchNormParams {
  std::vector<float> scale;  // s = gamma / sqrt(var + eps)
  std::vector<float> shift;  // beta - mean·s
  std::vector<float> mean, beta;
};
bool batch_norm_params(const Node& bn, int64_t c, BatchNormParams* p);
// Reshape(x, s5) → Transpose(perm [0, 2, 1, 3, 4]) → Reshape(s4), ShuffleNet's channel
// shuffle, → one ChannelShuffle(x, s5, s4) (ops/channel_shuffle.h), which kernels run in the
// layout its neighbours use. `groups` (optional) receives {shuffle, transpose, reshape} per fusion.
Result<bool> fuse_channel_shuffle(Graph& g,
                                  std::vector<std::vector<std::string>>* groups = nullptr);
// Conv/ConvTranspose/Gemm/MatMul + residual Add and/or activation → node.epilogue.
Result<bool> fuse_epilogue(Graph& g, std::vector<std::vector<std::string>>* groups = nullptr);
// For every engine, after optimize_graph: Mul + Add by per-channel constants (a standalone
// BatchNormalization as fold_batch_norm leaves it), and a Relu after them, → one
// BatchNormalization (mean 0, var 1, epsilon 0) with the Relu as its epilogue. `groups`
// (optional) receives {new node, mul, add[, relu]} per fusion.
Result<bool> fuse_channel_affine(Graph& g, std::vector<std::vector<std::string>>* groups = nullptr);
// For CUDA engines, after fuse_channel_affine: a channel Concat of rank-4 float32 tensors
// read only by a standalone BatchNormalization (optionally + Relu) carries the norm as a
// channel-affine epilogue (DenseNet: the concatenation is written once, not twice).
// `groups` (optional) receives {concat, norm} per fusion.
Result<bool> fuse_concat_affine(Graph& g, std::vector<std::vector<std::string>>* groups = nullptr);
// For CUDA engines: GlobalAveragePool → Conv 1×1 [+ act] → Conv 1×1 [+ act] → Mul(x, ·), the
// squeeze-and-excitation block, → one SqueezeExcite (ops/squeeze_excite.h). `groups`
// (optional) receives {new node (the Mul's name), pool, conv1, conv2} per fusion.
Result<bool> fuse_squeeze_excite(Graph& g, std::vector<std::vector<std::string>>* groups = nullptr);
// Nodes whose outputs reach no graph output removed, then unused values.
Result<bool> eliminate_dead_nodes(Graph& g);
// Before the optimizer, for EngineOptions::input_format other than float32 NCHW: each rank-4
// float32 graph input takes 8-bit pixels (NCHW or NHWC) and the graph normalizes them as
// (pixel / 255 − mean) / std per channel (`mean`/`stdev` empty: the model's kiln.mean and
// kiln.std metadata, else ImageNet's for 3 channels, else 0 and 1). An error names an input
// whose channel count is unknown or a mean/std of the wrong length.
Result<bool> normalize_image_inputs(Graph& g, InputFormat format, const std::vector<float>& mean,
                                    const std::vector<float>& stdev);
// image_normalization (kiln/images.h) gives the mean and std it normalizes with.

// For int8 engines, after every other pass (quantize_int8.cc): each Conv, Gemm and MatMul of
// constant float32 weights reads its float32 input through QuantizeLinear → DequantizeLinear
// (int8, zero point 0, scale amax / 127 from `amax`, by input value name; one pair per value)
// and its weights rounded to int8 per output channel (symmetric, max|w| / 127), as float. A
// layer whose input has no positive finite amax, or whose weights are not a float32 constant,
// stays in float, and so does a layer `keep` names (EngineOptions::precision_overrides: a node
// kept at a higher precision, by name or by measured error). `report` (optional) gets each
// layer quantized and each left in float, why. `format` kFp8: float8 e4m3 codes (scale
// amax / 448) and weights on the per-channel e4m3 grid (max|w| / 448) instead.
Result<bool> quantize_int8(Graph& g, const std::map<std::string, double>& amax,
                           QuantizationReport* report = nullptr, const PrecisionMap* keep = nullptr,
                           Precision format = Precision::kInt8);
// After quantize_int8 (fuse_int8_conv.cc): each Conv, Gemm or MatMul reading its input through
// an 8-bit Q → DQ pair (per tensor) with weights on a per-output-channel int8 grid reads the pair's
// float input instead, the rounding carried as Epilogue::input_scale and weight_scales, for an
// 8-bit kernel. Changes no number. `report` (optional): its layers so fused run "int8".
Result<bool> fuse_int8_conv(Graph& g, QuantizationReport* report = nullptr);
// After quantize_int8 on an fp8 engine (fuse_fp8_conv.cc): each Conv reading DequantizeLinear
// of e4m3 codes (per tensor) with weights on a per-channel e4m3 grid reads the codes, the
// scales carried as Epilogue::input_scale and weight_scales, for an fp8 kernel. Changes no
// number. `report` (optional): its layers so fused run "fp8".
Result<bool> fuse_fp8_conv(Graph& g, QuantizationReport* report = nullptr);
// The values quantize_int8 needs an amax for: the inputs of the layers it quantizes, in order.
std::vector<std::string> int8_calibration_values(const Graph& g);

// Structural checks after each pass cost a graph walk: on in debug builds (tests set
// EngineOptions::verify_passes, since they build in Release too).
#ifdef NDEBUG
inline constexpr bool kVerifyEachPass = false;
#else
inline constexpr bool kVerifyEachPass = true;
#endif

// Runs every pass pipeline.cc lists for an engine with `options` (its device, input format,
// whether to optimize), in order; verify_graph after each one with options.verify_passes, and
// always in debug builds (kVerifyEachPass). `amax` (int8 engines: each value's calibrated
// magnitude) adds quantize_int8 last, even without the optimizer, with codes of `format`
// (kInt8 or kFp8).
Status optimize_graph(Graph& g, const EngineOptions& options, PassReport* report = nullptr,
                      const std::map<std::string, double>* amax = nullptr,
                      Precision format = Precision::kInt8);

}  // namespace kiln
