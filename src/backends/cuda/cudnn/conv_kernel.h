// The cuDNN Conv kernel (internal to cudnn/): its tactics and state, shared by the files
// that implement it:
//   conv.cc             prepare, constants, the choice between paths, the factory;
//   conv_legacy.cc      the legacy cudnnConvolution* API (algorithms, fused bias + ReLU);
//   conv_graph_path.cc  the backend (graph) API: engines from heuristics, optionally on a
//                       channel-padded input (pad_channels.h).
//
// Layouts: NHWC activations and KRSC filters in fp16/tf32 (tensor cores); in strict fp32
// precision NCHW (kPlain) and KCRS, where cuDNN's FMA kernels are at home.
//
// Each path is a candidate of its own in the kernel registry ("cudnn": legacy, "cudnn-graph"),
// beside kiln's depthwise kernel ("kiln-depthwise"): each times its own algorithms or engines
// and reports its best (timed_ms), and the planner keeps the fastest candidate.
// EngineOptions::cudnn_conv_path (CudaBuildContext::conv_path) can restrict the choice to one
// path, for tests and diagnosis: the other declines.
#pragma once

#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/cudnn/conv_descs.h"
#include "backends/cuda/cudnn/conv_graph.h"
#include "backends/cuda/tactic_timing.h"
#include "ir/graph.h"
#include "ops/conv.h"

namespace kiln {

enum class ConvPath : uint8_t { kLegacy, kGraph };

constexpr size_t kConvAlign = 256;
inline size_t conv_align_up(size_t n) { return (n + kConvAlign - 1) / kConvAlign * kConvAlign; }

// One way of running the conv.
struct ConvTactic {
  ConvPath path = ConvPath::kLegacy;
  // Legacy: one cudnnConvolutionBiasActivationForward. Graph: bias, residual and (where
  // graph_fuses) the activation are pointwise ops of the graph.
  bool fused = false;
  bool padded = false;  // graph: input channels zero-padded to a multiple of 8
  // Legacy.
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t algo_ws = 0;
  // Graph.
  std::shared_ptr<ConvPlan> plan;
  size_t workspace = 0;  // everything the tactic needs, crop / padded input included
  float ms = -1;         // < 0: not timed
};

// Buffers of the real shapes for timing candidates.
struct ConvScratch {
  ScratchBuffer x, y, r, ws;
  size_t ws_bytes = 0;
  Status reserve_ws(size_t bytes) {
    if (bytes <= ws_bytes && ws.get()) return Status::ok();
    KILN_RETURN_IF_ERROR(ws.alloc(bytes));
    ws_bytes = bytes;
    return Status::ok();
  }
};

class CudnnConvKernel final : public CudaKernel {
 public:
  // `path`: kLegacy or kGraph, the one path this kernel runs.
  CudnnConvKernel(const Node& node, ConvAttrs attrs, int bias, Precision precision,
                  CudnnConvPath path)
      : name_(node.name),
        attrs_(std::move(attrs)),
        epilogue_(node.epilogue),
        bias_(bias),
        layout_(precision == Precision::kFp32 ? Layout::kPlain : Layout::kNHWC),
        path_(path) {}

  Layout input_layout(int i, Layout offered) const override {
    return i == 0 || i == epilogue_.residual_input ? layout_ : Layout::kPlain;
  }
  bool reads_on_host(int i) const override { return i == 1 || (bias_ >= 0 && i == bias_); }
  // In place over the residual on the legacy path only: fused, cudnnConvolutionBiasActivation-
  // Forward reads z before writing y per element; unfused, the conv accumulates onto the
  // residual (beta = 1) and the epilogue adds no residual (see launch_legacy()). The graph
  // path's engines promise no such order: measured on an H100, runtime-fused engines (4, 7
  // "rtc") writing over their own residual input gave answers 10-60% off at batch 500, varying
  // from run to run (CudaFashionAccuracy.RepeatedRunsAgreeWithFp32), so they write elsewhere.
  int inplace_input() const override {
    return path_ == CudnnConvPath::kLegacy ? epilogue_.residual_input : -1;
  }
  size_t workspace_bytes() const override { return tactic_.workspace; }
  std::string tactic() const override { return tactic_text_; }
  // The chosen tactic's time (ms), < 0 when it was not timed.
  float tactic_ms() const { return tactic_.ms; }
  float timed_ms() const override { return tactic_.ms; }
  CudnnConvPath path() const { return path_; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override;
  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    const int r = epilogue_.residual_input;
    return launch(run.cudnn, run.stream, in[0]->data, out[0]->data, r >= 0 ? in[r]->data : nullptr,
                  run.workspace, tactic_);
  }

 private:
  bool nhwc() const { return layout_ == Layout::kNHWC; }
  bool has_epilogue() const {
    return bias_ >= 0 || epilogue_.residual_input >= 0 || epilogue_.act != Activation::kNone;
  }
  bool fusable() const {
    return !pads_.crop && (epilogue_.act == Activation::kRelu ||
                           (epilogue_.act == Activation::kNone && has_epilogue()));
  }
  // Input channels padded to a multiple of 8 would let tensor-core kernels run.
  bool paddable() const { return nhwc() && geo_.group == 1 && geo_.in_channels % 8 != 0; }
  int64_t padded_channels() const { return (geo_.in_channels + 7) / 8 * 8; }
  size_t padded_x_bytes() const {
    return static_cast<size_t>(x_desc_.numel() / geo_.in_channels * padded_channels()) *
           dtype_size(x_desc_.dtype);
  }

  Status launch(cudnnHandle_t h, cudaStream_t stream, const void* x, void* y, const void* residual,
                void* ws, const ConvTactic& t) const {
    return t.path == ConvPath::kGraph ? launch_graph(h, stream, x, y, residual, ws, t)
                                      : launch_legacy(h, stream, x, y, residual, ws, t);
  }
  Status launch_legacy(cudnnHandle_t h, cudaStream_t stream, const void* x, void* y,
                       const void* residual, void* ws, const ConvTactic& t) const;
  Status launch_graph(cudnnHandle_t h, cudaStream_t stream, const void* x, void* y,
                      const void* residual, void* ws, const ConvTactic& t) const;
  Status set_math(cudnnMathType_t m) const {
    KILN_CUDNN(cudnnSetConvolutionMathType(d_.conv, m));
    return Status::ok();
  }
  Status setup_legacy(const TensorDesc& x, const TensorDesc& w, CudaBuildContext& ctx);
  Status upload_constants(const std::vector<TensorDesc>& in, CudaBuildContext& ctx);
  Status choose(CudaBuildContext& ctx, const std::string& key);
  Status alloc_scratch(ConvScratch& s) const;
  // Appends the candidates of each path: timed when ctx.time_tactics (those that ran), else
  // untimed in heuristic order.
  Status legacy_candidates(CudaBuildContext& ctx, ConvScratch& s, std::vector<ConvTactic>& out);
  Status graph_candidates(CudaBuildContext& ctx, ConvScratch& s, std::vector<ConvTactic>& out);
  // Rebuilds a tactic from its cache entry; false when it no longer applies.
  bool legacy_from_cache(CudaBuildContext& ctx, std::istream& is, ConvTactic& t);
  bool graph_from_cache(CudaBuildContext& ctx, std::istream& is, ConvTactic& t);
  std::string cache_value(const ConvTactic& t) const;
  Result<std::shared_ptr<ConvGraph>> build_graph(cudnnHandle_t h, bool fused, bool padded) const;
  Result<std::unique_ptr<ConvPlan>> plan_for(cudnnHandle_t h, bool fused, bool padded, int mode,
                                             int rank, int64_t engine, bool strict,
                                             bool runtime_compiled) const;
  Status finish(const ConvTactic& t, bool cached);

  std::string name_;
  ConvAttrs attrs_;
  Epilogue epilogue_;
  int bias_;
  Layout layout_;
  CudnnConvPath path_;
  ConvGeometry geo_;
  CudnnConvDescs d_;
  CudnnPadMapping pads_;
  TensorDesc x_desc_, y_desc_;
  int full_dims_[4] = {0, 0, 0, 0};  // cuDNN's output n, c, h, w
  size_t full_bytes_ = 0;            // cuDNN's output when cropping
  cudnnMathType_t requested_math_ = CUDNN_DEFAULT_MATH;
  bool strict_fp32_ = false;
  CudnnConvPath path_choice_ = CudnnConvPath::kAuto;
  const void* filter_ = nullptr;
  const void* filter_padded_ = nullptr;  // KRSC with padded_channels(), when paddable()
  const void* bias_act_ = nullptr;       // activation dtype, zeros when absent
  const float* bias_f32_ = nullptr;      // float32 or nullptr (launch_epilogue)
  ConvTactic tactic_;
  std::string tactic_text_;
};

// Wraps `direct` in a kernel that also tries the space-to-depth rewrite of a stride-2 conv
// with few input channels (conv_s2d.cc), when the node's attributes allow it; else returns
// `direct` as is.
std::unique_ptr<CudaKernel> maybe_space_to_depth(const Node& node, const ConvAttrs& attrs, int bias,
                                                 Precision precision,
                                                 std::unique_ptr<CudnnConvKernel> direct);

// kiln's NHWC depthwise kernel (depthwise_conv.cu) for a depthwise conv (group == C == M) of
// an NHWC precision; kUnsupported for any other conv.
Result<std::unique_ptr<CudaKernel>> make_depthwise_conv(const Node& node, const ConvAttrs& attrs,
                                                        int bias, Precision precision);

}  // namespace kiln
