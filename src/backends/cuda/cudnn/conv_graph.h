// A 2-D convolution (and its fused epilogue) through cuDNN's backend (graph) API:
//   Y = act(conv(X, W) + B + Z)
// as one operation graph: a CONVOLUTION_FORWARD into a virtual float tensor, then
// pointwise ADD (bias, broadcast over [1,K,1,1]), ADD (the residual Z) and the activation,
// each stage virtual but the last. Engines come from cuDNN's heuristics (mode A, then the
// fallback list); each engine config is finalized into an execution plan and run with a
// variant pack of the device pointers.
//
// 8-bit operands (`operand` kFloat8E4M3): X and W hold e4m3 codes, the conv sums their products
// in float, and `channel_scale` multiplies the sums by S [1,K,1,1] (float32: the input's scale
// times each output channel's weight scale) before the bias; Y, B and Z keep `dtype`.
//
// Tensors use the logical NCHW dims with NHWC or NCHW strides; the filter KRSC or KCRS to
// match. Padding is ONNX's own pre/post pads (the backend API takes them asymmetric).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/cuda/cudnn/backend_desc.h"
#include "ir/epilogue.h"
#include "kiln/status.h"
#include "kiln/tensor.h"
#include "ops/conv.h"

namespace kiln {

struct ConvGraphSpec {
  DataType dtype = DataType::kFloat32;      // X, W, B, Z, Y
  DataType operand = DataType::kUndefined;  // X and W where not `dtype` (kFloat8E4M3)
  bool channel_scale = false;               // the sums times S[k] first (float32)
  bool nhwc = true;
  int64_t n = 0, c = 0, h = 0, w = 0;   // X
  int64_t k = 0, cg = 0, r = 0, s = 0;  // W: out channels, channels per group, kernel
  int64_t ho = 0, wo = 0;               // Y
  int64_t pre[2] = {0, 0}, post[2] = {0, 0}, stride[2] = {1, 1}, dilation[2] = {1, 1};
  bool bias = false;
  bool residual = false;
  Activation act = Activation::kNone;  // only activations graph_fuses() accepts
  float alpha = 0.f, beta = 0.f;
};

// The spec's shapes of a 2-D conv resolved by conv_geometry (ops/conv.h): X, W, Y, pads,
// strides and dilations; no epilogue.
ConvGraphSpec conv_graph_spec(const ConvGeometry& g, DataType dtype, bool nhwc);

// True when the activation has a pointwise mode in the backend API.
bool graph_fuses(Activation a);

// The uids of the variant pack.
enum ConvGraphUid : int64_t { kUidX = 1, kUidW = 2, kUidY = 3, kUidB = 4, kUidZ = 5, kUidS = 6 };

// One engine configuration the heuristics returned, with what identifies it again.
struct ConvEngineCfg {
  std::shared_ptr<BackendDesc> cfg;
  int mode = 0;         // cudnnBackendHeurMode_t
  int rank = 0;         // index in that mode's result list
  int64_t engine = -1;  // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
  bool tensor_core = false;
  bool runtime_compiled = false;  // finalizing its plan compiles a kernel (slow to build)
};

// An operation graph and its descriptors; kept alive as long as any plan made from it.
class ConvGraph {
 public:
  Status build(cudnnHandle_t handle, const ConvGraphSpec& spec);
  // Up to `max` configs of heuristic `mode`, in its order; with `strict_fp32`, engines
  // whose numerical notes say tensor cores or down-converted inputs (TF32) are left out, and
  // without `runtime_compiled`, those that compile their kernel at finalize.
  Result<std::vector<ConvEngineCfg>> engine_configs(cudnnBackendHeurMode_t mode, bool strict_fp32,
                                                    int max, bool runtime_compiled = true) const;
  const ConvGraphSpec& spec() const { return spec_; }

 private:
  Result<const BackendDesc*> tensor(int64_t uid, DataType dt, bool is_virtual, bool filter,
                                    bool per_channel);
  Result<const BackendDesc*> pointwise(cudnnPointwiseMode_t mode, const BackendDesc* x,
                                       const BackendDesc* b, const BackendDesc* y);
  ConvGraphSpec spec_;
  std::vector<std::unique_ptr<BackendDesc>> owned_;  // tensors, op descriptors
  std::vector<const BackendDesc*> ops_;
  BackendDesc graph_;
};

// A finalized execution plan and the graph and config it was made from.
struct ConvPlan {
  std::shared_ptr<ConvGraph> graph;
  ConvEngineCfg cfg;
  BackendDesc plan;
  size_t workspace = 0;
};
Result<std::unique_ptr<ConvPlan>> make_conv_plan(cudnnHandle_t handle,
                                                 std::shared_ptr<ConvGraph> graph,
                                                 const ConvEngineCfg& cfg);

// Runs the plan; b, z and s only when the spec has them. Host work only besides the launch
// (a variant pack is built per call), so it can be captured in a CUDA graph.
Status execute_conv_plan(cudnnHandle_t handle, const ConvPlan& p, const void* x, const void* w,
                         void* y, const void* b, const void* z, void* workspace,
                         const void* s = nullptr);

}  // namespace kiln
