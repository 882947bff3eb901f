// The Conv of an fp8 engine (passes/fuse_fp8_conv.cc): input 0 holds float8 e4m3 codes
// (Epilogue::input_scale), the weights lie on a per-channel e4m3 grid (weight_scales), and the
// epilogue (bias, residual, activation) follows in the activation dtype. One kernel, candidate
// "cudnn-fp8" of the registry, with two ways of running and the faster kept by timing:
//
//   native     cuDNN's fp8 tensor-core convolution through the graph API: codes and weight
//              codes in, float sums times S[m] = input_scale · weight_scales[m], then bias,
//              residual and activation in the graph (conv_graph.h), fp16 out;
//   dequantize the codes widened to the activation dtype (code · input_scale) into the
//              workspace, then cuDNN's fp16 graph convolution on weights W[m] as the float
//              values they stand for. Always available (any group, any channel count), so an
//              fp8 engine never falls back to the host.
//
// Candidates: the first kHeur configs of heuristic mode A of each way (the fallback list where
// mode A has none), finalized within the workspace limit and timed on buffers of the real
// shapes, the dequantize way with its widening included. Untimed, the first native plan, else
// the first dequantize one.
#include <algorithm>
#include <climits>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/cudnn/conv_descs.h"
#include "backends/cuda/cudnn/conv_graph.h"
#include "backends/cuda/kernels/fp8.h"
#include "backends/cuda/tactic_timing.h"
#include "core/half.h"
#include "ops/conv.h"

namespace kiln {
namespace {

constexpr int kHeur = 6;

struct Fp8ConvTactic {
  bool native = false;
  std::shared_ptr<ConvPlan> plan;
  size_t workspace = 0;  // the plan's, behind the widened input when !native
  float ms = -1;
};

class CudnnFp8ConvKernel final : public CudaKernel {
 public:
  CudnnFp8ConvKernel(const Node& node, ConvAttrs attrs, int bias)
      : name_(node.name), attrs_(std::move(attrs)), e_(node.epilogue), bias_(bias) {}

  Layout input_layout(int i, Layout) const override {
    return i == 0 || i == e_.residual_input ? Layout::kNHWC : Layout::kPlain;
  }
  bool reads_on_host(int i) const override { return i == 1 || (bias_ >= 0 && i == bias_); }
  // Never over its residual input: cuDNN's graph engines promise no read-before-write order
  // (conv_kernel.h says what was measured).
  int inplace_input() const override { return -1; }
  size_t workspace_bytes() const override { return tactic_.workspace; }
  float timed_ms() const override { return tactic_.ms; }
  std::string tactic() const override {
    if (!tactic_.plan) return "cudnn-fp8";
    return std::string("cudnn-fp8 ") + (tactic_.native ? "native" : "dequantize+fp16") +
           " engine " + std::to_string(tactic_.plan->cfg.engine);
  }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override;
  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    const int r = e_.residual_input;
    return launch(run.cudnn, run.stream, in[0]->data, out[0]->data, r >= 0 ? in[r]->data : nullptr,
                  run.workspace, tactic_);
  }

 private:
  size_t widened_bytes() const {
    return (static_cast<size_t>(x_numel_) * dtype_size(act_) + 255) / 256 * 256;
  }
  ConvGraphSpec spec(bool native) const;
  Status upload(const std::vector<TensorDesc>& in, CudaBuildContext& ctx);
  // Appends each way's plans (timed where ctx.time_tactics).
  Status candidates(CudaBuildContext& ctx, bool native, std::vector<Fp8ConvTactic>& out);
  Status launch(cudnnHandle_t h, cudaStream_t stream, const void* x, void* y, const void* z,
                void* ws, const Fp8ConvTactic& t) const {
    if (t.native)
      return execute_conv_plan(h, *t.plan, x, filter_codes_, y, bias_act_, z, ws, scales_);
    KILN_RETURN_IF_ERROR(launch_dequantize_fp8(static_cast<const uint8_t*>(x), ws, act_, x_numel_,
                                               e_.input_scale, stream));
    return execute_conv_plan(h, *t.plan, ws, filter_act_, y, bias_act_, z,
                             static_cast<uint8_t*>(ws) + widened_bytes());
  }

  std::string name_;
  ConvAttrs attrs_;
  Epilogue e_;
  int bias_;
  ConvGeometry geo_;
  DataType act_ = DataType::kFloat16;
  int64_t x_numel_ = 0, y_numel_ = 0;
  const void* filter_codes_ = nullptr;  // KRSC e4m3 codes of W[m] / weight_scales[m]
  const void* filter_act_ = nullptr;    // KRSC W in the activation dtype
  const void* bias_act_ = nullptr;      // [M] in the activation dtype, or null
  const void* scales_ = nullptr;        // [M] float32: input_scale · weight_scales[m]
  Fp8ConvTactic tactic_;
};

ConvGraphSpec CudnnFp8ConvKernel::spec(bool native) const {
  ConvGraphSpec s = conv_graph_spec(geo_, act_, true);
  s.operand = native ? DataType::kFloat8E4M3 : DataType::kUndefined;
  s.channel_scale = native;
  s.bias = bias_ >= 0;
  s.residual = e_.residual_input >= 0;
  s.act = e_.act;
  s.alpha = e_.alpha;
  s.beta = e_.beta;
  return s;
}

Status CudnnFp8ConvKernel::upload(const std::vector<TensorDesc>& in, CudaBuildContext& ctx) {
  const Tensor& w = *in[1].value;
  const int64_t m = w.dim(0), inner = w.numel() / m;
  if (static_cast<int64_t>(e_.weight_scales.size()) != m)
    return invalid_argument(std::to_string(e_.weight_scales.size()) + " weight scales for " +
                            std::to_string(m) + " output channels");
  // The codes: W[m] / weight_scales[m], on the e4m3 grid by construction.
  Tensor scaled(DataType::kFloat32, w.shape());
  const std::vector<float> wv = w.to_floats();
  for (int64_t k = 0; k < m; ++k)
    for (int64_t i = 0; i < inner; ++i)
      scaled.data<float>()[k * inner + i] = wv[k * inner + i] / e_.weight_scales[k];
  const std::vector<uint8_t> f32 = pack_filter_krsc(scaled, DataType::kFloat32);
  std::vector<uint8_t> codes(f32.size() / 4);
  store_floats(reinterpret_cast<const float*>(f32.data()), codes.size(), DataType::kFloat8E4M3,
               codes.data());
  KILN_ASSIGN_OR_RETURN(
      void* c, ctx.weights->upload(name_ + "/filter/fp8/krsc", codes.data(), codes.size()));
  filter_codes_ = c;
  const std::vector<uint8_t> act = pack_filter_krsc(w, act_);
  const std::string dn = dtype_name(act_);
  KILN_ASSIGN_OR_RETURN(
      void* f, ctx.weights->upload(name_ + "/filter/" + dn + "/krsc", act.data(), act.size()));
  filter_act_ = f;
  std::vector<float> scales(static_cast<size_t>(m));
  for (int64_t k = 0; k < m; ++k) scales[k] = e_.input_scale * e_.weight_scales[k];
  KILN_ASSIGN_OR_RETURN(void* s, ctx.weights->upload(name_ + "/fp8_scales", scales.data(),
                                                     scales.size() * sizeof(float)));
  scales_ = s;
  if (bias_ >= 0) {
    const std::vector<uint8_t> b = encode_floats(in[bias_].value->to_floats(), act_);
    KILN_ASSIGN_OR_RETURN(void* p, ctx.weights->upload(name_ + "/bias/" + dn, b.data(), b.size()));
    bias_act_ = p;
  }
  return Status::ok();
}

Status CudnnFp8ConvKernel::candidates(CudaBuildContext& ctx, bool native,
                                      std::vector<Fp8ConvTactic>& out) {
  auto graph = std::make_shared<ConvGraph>();
  KILN_RETURN_IF_ERROR(graph->build(ctx.cudnn, spec(native)));
  std::vector<ConvEngineCfg> cfgs;
  for (auto mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    auto got = graph->engine_configs(mode, false, kHeur);
    if (got.is_ok()) cfgs.insert(cfgs.end(), got->begin(), got->end());
    if (!cfgs.empty()) break;
  }
  const size_t extra = native ? 0 : widened_bytes();
  ScratchBuffer x, y, z, ws;
  if (ctx.time_tactics) {
    // Any byte is a code (0x7f/0xff are NaN, which changes no time).
    KILN_RETURN_IF_ERROR(x.alloc_random(DataType::kFloat16, (x_numel_ + 1) / 2, 1));
    KILN_RETURN_IF_ERROR(y.alloc(static_cast<size_t>(y_numel_) * dtype_size(act_)));
    if (e_.residual_input >= 0) KILN_RETURN_IF_ERROR(z.alloc_random(act_, y_numel_, 3));
  }
  size_t tried = 0;
  for (const ConvEngineCfg& c : cfgs) {
    if (tried >= ctx.tactic_count(cfgs.size())) break;
    auto plan = make_conv_plan(ctx.cudnn, graph, c);
    if (!plan.is_ok() || (*plan)->workspace + extra > ctx.workspace_limit) continue;
    ++tried;
    Fp8ConvTactic t;
    t.native = native;
    t.workspace = (*plan)->workspace + extra;
    t.plan = std::move(*plan);
    if (ctx.time_tactics) {
      KILN_RETURN_IF_ERROR(ws.alloc(t.workspace));
      auto ms = time_launches(ctx.stream, [&] {
        return launch(ctx.cudnn, ctx.stream, x.get(), y.get(), z.get(), ws.get(), t);
      });
      if (!ms.is_ok()) continue;
      t.ms = *ms;
    }
    out.push_back(std::move(t));
  }
  return Status::ok();
}

Status CudnnFp8ConvKernel::prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                                   CudaBuildContext& ctx) {
  const TensorDesc& x = in[0];
  if (x.dtype != DataType::kFloat8E4M3)
    return unsupported(std::string("input 0 is ") + dtype_name(x.dtype) + ", not fp8 codes");
  if (!in[1].value) return unsupported("the weights are not known at build");
  KILN_ASSIGN_OR_RETURN(geo_, conv_geometry(attrs_, x.shape, in[1].shape));
  if (geo_.spatial_rank() != 2) return unsupported("only 2-D convs");
  if (e_.act != Activation::kNone && !graph_fuses(e_.act))
    return unsupported(std::string("cannot fuse ") + activation_name(e_.act));
  act_ = ctx.act_dtype();
  x_numel_ = x.numel();
  const Shape ys = geo_.output_shape();
  y_numel_ = shape_numel(ys);
  KILN_RETURN_IF_ERROR(upload(in, ctx));
  std::vector<Fp8ConvTactic> cands;
  std::string why;
  // Native needs whole groups of 16 bytes of channels per tap (fp8 tensor cores); cuDNN says
  // where it has no engine.
  if (geo_.group == 1) {
    Status s = candidates(ctx, true, cands);
    if (!s.is_ok()) why = "native: " + s.message();
  }
  if (ctx.time_tactics || cands.empty()) {
    Status s = candidates(ctx, false, cands);
    if (!s.is_ok()) why += (why.empty() ? "" : "; ") + ("dequantize: " + s.message());
  }
  if (cands.empty())
    return unsupported("no cuDNN plan for the fp8 conv " + shape_str(x.shape) + " * " +
                       shape_str(in[1].shape) + (why.empty() ? "" : ": " + why));
  const Fp8ConvTactic* best = &cands.front();
  for (const Fp8ConvTactic& t : cands)
    if (t.ms >= 0 && (best->ms < 0 || t.ms < best->ms)) best = &t;
  tactic_ = *best;
  out[0] = TensorDesc{act_, ys, nullptr, Layout::kNHWC};
  return Status::ok();
}

Result<std::unique_ptr<Kernel>> make_fp8_conv(const Node& node, const KernelParams&) {
  if (!node.epilogue.int8() || !node.inputs[0] || node.inputs[0]->dtype != DataType::kFloat8E4M3)
    return unsupported("not an fp8 conv (fuse_fp8_conv makes them)");
  const Value* w = node.input(1);
  if (!w || !w->is_constant() || w->constant.rank() != 4 ||
      w->constant.dtype() != DataType::kFloat32)
    return unsupported("fp8 conv weights must be a float32 4-D constant");
  if (node.epilogue.affine_input >= 0 || node.epilogue.bias_input >= 0)
    return unsupported("fp8 conv with a channel affine or bias epilogue");
  int bias = -1;
  if (node.inputs.size() > 2 && node.inputs[2] && node.epilogue.residual_input != 2) {
    bias = 2;
    if (!node.inputs[2]->is_constant()) return unsupported("Conv bias is not a constant");
  }
  KILN_ASSIGN_OR_RETURN(ConvAttrs attrs, parse_conv_attrs(node.attrs));
  return std::unique_ptr<Kernel>(std::make_unique<CudnnFp8ConvKernel>(node, attrs, bias));
}

[[maybe_unused]] const bool registered =
    register_cuda_kernel(OpKind::Conv, make_fp8_conv, "cudnn-fp8");

}  // namespace
}  // namespace kiln
