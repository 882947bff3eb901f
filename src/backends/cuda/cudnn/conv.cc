// Conv through cuDNN's convolution API, NHWC activations, KRSC filters packed at prepare.
//
// The epilogue y = act(conv(x) + bias + residual) runs, by the chosen tactic, either
//  - fused: one cudnnConvolutionBiasActivationForward (ReLU, or identity, which cuDNN runs
//    only with IMPLICIT_PRECOMP_GEMM), the residual as z with alpha2 = 1; or
//  - unfused: cudnnConvolutionForward, then one launch_epilogue for bias + residual + act
//    (every other activation; or where timing says the fused call is slower).
// When cuDNN's symmetric padding cannot express ONNX's pads directly (conv_descs.h), cuDNN
// writes a larger tensor into the workspace and cudnnAddTensor copies the window out.
//
// Tactics: with ctx.time_tactics, cudnnFindConvolutionForwardAlgorithmEx picks the best
// plain algorithm on scratch buffers of the real shapes, then the fused call is timed over
// the feasible algorithms, and the faster sequence is kept and recorded in ctx.tactics.
// Without, cuDNN's heuristic order is tried until a candidate runs.
#include <algorithm>
#include <cstdint>
#include <sstream>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/cudnn/conv_descs.h"
#include "backends/cuda/kernels/launch.h"
#include "backends/cuda/tactic_timing.h"

namespace kiln {
namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// One way of running the conv.
struct ConvTactic {
  bool fused = false;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t algo_ws = 0;
  float ms = -1;  // < 0: not timed
};

class CudnnConvKernel final : public CudaKernel {
 public:
  CudnnConvKernel(const Node& node, ConvAttrs attrs, int bias)
      : name_(node.name), attrs_(std::move(attrs)), epilogue_(node.epilogue), bias_(bias) {}

  Layout input_layout(int i, Layout offered) const override {
    return i == 0 || i == epilogue_.residual_input ? Layout::kNHWC : Layout::kPlain;
  }
  bool reads_on_host(int i) const override { return i == 1 || (bias_ >= 0 && i == bias_); }
  // Fused: cuDNN reads z before writing y per element; unfused: the conv accumulates onto
  // the residual (beta = 1) and the epilogue adds no residual (see launch_conv()).
  int inplace_input() const override { return epilogue_.residual_input; }
  size_t workspace_bytes() const override { return workspace_; }
  std::string tactic() const override { return tactic_text_; }

  Status prepare(const std::vector<DevDesc>& in, std::vector<DevDesc>& out,
                 CudaBuildContext& ctx) override;
  Status enqueue(const std::vector<const DevTensor*>& in, const std::vector<DevTensor*>& out,
                 const CudaRunContext& run) override {
    const int r = epilogue_.residual_input;
    return launch_conv(run.cudnn, run.stream, in[0]->data, out[0]->data,
                       r >= 0 ? in[r]->data : nullptr, run.workspace, tactic_);
  }

 private:
  bool has_epilogue() const {
    return bias_ >= 0 || epilogue_.residual_input >= 0 || epilogue_.act != Activation::kNone;
  }
  bool fusable() const {
    return !pads_.crop && (epilogue_.act == Activation::kRelu ||
                           (epilogue_.act == Activation::kNone && has_epilogue()));
  }
  Status launch_conv(cudnnHandle_t h, cudaStream_t stream, const void* x, void* y,
                     const void* residual, void* ws, const ConvTactic& t) const;
  Status set_math(cudnnMathType_t m) const {
    KILN_CUDNN(cudnnSetConvolutionMathType(d_.conv, m));
    return Status::ok();
  }
  Status choose(CudaBuildContext& ctx, const std::string& key);
  Status upload_constants(const std::vector<DevDesc>& in, CudaBuildContext& ctx);

  std::string name_;
  ConvAttrs attrs_;
  Epilogue epilogue_;
  int bias_;
  CudnnConvDescs d_;
  CudnnPadMapping pads_;
  DevDesc x_desc_, y_desc_;
  int full_dims_[4] = {0, 0, 0, 0};  // cuDNN's output n, c, h, w
  cudnnMathType_t requested_math_ = CUDNN_DEFAULT_MATH;
  const void* filter_ = nullptr;
  const void* bias_act_ = nullptr;   // activation dtype, zeros when absent (fused call)
  const float* bias_f32_ = nullptr;  // float32 or nullptr (launch_epilogue)
  ConvTactic tactic_;
  size_t workspace_ = 0;
  std::string tactic_text_;
};

Status CudnnConvKernel::launch_conv(cudnnHandle_t h, cudaStream_t stream, const void* x, void* y,
                                    const void* residual, void* ws, const ConvTactic& t) const {
  const float one = 1.f, zero = 0.f;
  if (t.fused) {
    // y = act(conv(x) + alpha2·z + bias); without a residual z is y with alpha2 = 0.
    const float alpha2 = residual ? 1.f : 0.f;
    KILN_CUDNN(cudnnConvolutionBiasActivationForward(
        h, &one, d_.x, x, d_.w, filter_, d_.conv, t.algo, ws, t.algo_ws, &alpha2, d_.y,
        residual ? residual : y, d_.bias, bias_act_, d_.act, d_.y, y));
    return Status::ok();
  }
  // In place over the residual: accumulate onto it, and the epilogue adds no residual.
  const bool in_place = residual && residual == y;
  const float* beta = in_place ? &one : &zero;
  if (!pads_.crop) {
    KILN_CUDNN(cudnnConvolutionForward(h, &one, d_.x, x, d_.w, filter_, d_.conv, t.algo, ws,
                                       t.algo_ws, beta, d_.y, y));
  } else {
    uint8_t* full = static_cast<uint8_t*>(ws) + align_up(t.algo_ws);
    KILN_CUDNN(cudnnConvolutionForward(h, &one, d_.x, x, d_.w, filter_, d_.conv, t.algo, ws,
                                       t.algo_ws, &zero, d_.y_full, full));
    const size_t esize = dtype_size(y_desc_.dtype);
    const size_t off =
        (static_cast<size_t>(pads_.offset[0]) * full_dims_[3] + pads_.offset[1]) * full_dims_[1];
    KILN_CUDNN(cudnnAddTensor(h, &one, d_.y_crop, full + off * esize, beta, d_.y, y));
  }
  if (!has_epilogue()) return Status::ok();
  return launch_epilogue(y_desc_, y, bias_f32_, in_place ? nullptr : residual, epilogue_.act,
                         epilogue_.alpha, epilogue_.beta, stream);
}

Status CudnnConvKernel::upload_constants(const std::vector<DevDesc>& in, CudaBuildContext& ctx) {
  const DataType dt = x_desc_.dtype;
  const std::string dn = dtype_name(dt);
  std::vector<uint8_t> packed = pack_filter_krsc(*in[1].value, dt);
  KILN_ASSIGN_OR_RETURN(void* f, ctx.weights->upload(name_ + "/filter/" + dn + "/krsc",
                                                     packed.data(), packed.size()));
  filter_ = f;
  const int64_t m = y_desc_.shape[1];
  std::vector<float> bias(static_cast<size_t>(m), 0.f);
  if (bias_ >= 0) bias = in[bias_].value->to_floats();
  if (fusable()) {
    std::vector<uint8_t> b = encode_floats(bias, dt);
    KILN_ASSIGN_OR_RETURN(
        void* p, ctx.weights->upload(name_ + "/bias/" + dn + (bias_ < 0 ? "/zero" : ""), b.data(),
                                     b.size()));
    bias_act_ = p;
  }
  if (bias_ >= 0) {
    KILN_ASSIGN_OR_RETURN(void* p, ctx.weights->upload(name_ + "/bias/float32", bias.data(),
                                                       bias.size() * sizeof(float)));
    bias_f32_ = static_cast<const float*>(p);
  }
  return Status::ok();
}

Status CudnnConvKernel::prepare(const std::vector<DevDesc>& in, std::vector<DevDesc>& out,
                                CudaBuildContext& ctx) {
  if (in.size() < 2 || !in[0].present() || !in[1].present())
    return invalid_argument("Conv needs X and W");
  const DevDesc& x = in[0];
  if (x.dtype != DataType::kFloat32 && x.dtype != DataType::kFloat16)
    return unsupported(std::string("Conv on ") + dtype_name(x.dtype) + " (cuDNN: float32/16)");
  if (x.shape.size() != 4)
    return unsupported("Conv input " + shape_str(x.shape) + ": cuDNN kernel takes 2-D convs");
  if (x.layout != Layout::kNHWC) return invalid_argument("Conv input must arrive in NHWC");
  if (!in[1].value || (bias_ >= 0 && !in[bias_].value))
    return unsupported("Conv weight and bias must be constants");
  KILN_ASSIGN_OR_RETURN(ConvGeometry g, conv_geometry(attrs_, x.shape, in[1].shape));
  if (bias_ >= 0 && in[bias_].shape != Shape{g.out_channels})
    return invalid_argument("bias " + shape_str(in[bias_].shape) + " must be [" +
                            std::to_string(g.out_channels) + "]");
  x_desc_ = x;
  y_desc_ = DevDesc{x.dtype, g.output_shape(), Layout::kNHWC, nullptr};
  const int r = epilogue_.residual_input;
  if (r >= 0) {
    if (r >= static_cast<int>(in.size()) || in[r].shape != y_desc_.shape ||
        in[r].dtype != x.dtype || in[r].layout != Layout::kNHWC)
      return invalid_argument("epilogue residual must match the output " +
                              shape_str(y_desc_.shape) + " in NHWC");
  }
  for (int64_t v : y_desc_.shape)
    if (v <= 0 || v > INT32_MAX) return invalid_argument("Conv output " + shape_str(y_desc_.shape));
  out[0] = y_desc_;

  pads_ = map_conv_padding(g);
  const cudnnDataType_t cdt = cudnn_dtype(x.dtype);
  const auto i32 = [](int64_t v) { return static_cast<int>(v); };
  KILN_RETURN_IF_ERROR(d_.create());
  KILN_CUDNN(cudnnSetTensor4dDescriptor(d_.x, CUDNN_TENSOR_NHWC, cdt, i32(g.batch),
                                        i32(g.in_channels), i32(g.in_spatial[0]),
                                        i32(g.in_spatial[1])));
  KILN_CUDNN(cudnnSetFilter4dDescriptor(d_.w, cdt, CUDNN_TENSOR_NHWC, i32(g.out_channels),
                                        i32(in[1].shape[1]), i32(g.kernel[0]), i32(g.kernel[1])));
  KILN_CUDNN(cudnnSetConvolution2dDescriptor(
      d_.conv, pads_.pad[0], pads_.pad[1], i32(g.strides[0]), i32(g.strides[1]),
      i32(g.dilations[0]), i32(g.dilations[1]), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  KILN_CUDNN(cudnnSetConvolutionGroupCount(d_.conv, i32(g.group)));
  // fp16: tensor cores; tf32: cuDNN's default (TF32 allowed); fp32: plain FMA, no TF32.
  requested_math_ = x.dtype == DataType::kFloat16 ? CUDNN_TENSOR_OP_MATH
                    : ctx.allow_tf32()            ? CUDNN_DEFAULT_MATH
                                                  : CUDNN_FMA_MATH;
  KILN_RETURN_IF_ERROR(set_math(requested_math_));
  const int n = i32(g.batch), m = i32(g.out_channels);
  const int ho = i32(g.out_spatial[0]), wo = i32(g.out_spatial[1]);
  KILN_CUDNN(cudnnSetTensor4dDescriptor(d_.y, CUDNN_TENSOR_NHWC, cdt, n, m, ho, wo));
  KILN_CUDNN(cudnnGetConvolution2dForwardOutputDim(d_.conv, d_.x, d_.w, &full_dims_[0],
                                                   &full_dims_[1], &full_dims_[2], &full_dims_[3]));
  KILN_CUDNN(cudnnSetTensor4dDescriptor(d_.y_full, CUDNN_TENSOR_NHWC, cdt, full_dims_[0],
                                        full_dims_[1], full_dims_[2], full_dims_[3]));
  const int fh = full_dims_[2], fw = full_dims_[3];
  if (fh != ho || fw != wo) pads_.crop = true;
  KILN_CUDNN(cudnnSetTensor4dDescriptorEx(d_.y_crop, cdt, n, m, ho, wo, fh * fw * m, 1, fw * m, m));
  KILN_CUDNN(cudnnSetTensor4dDescriptor(d_.bias, CUDNN_TENSOR_NCHW, cdt, 1, m, 1, 1));
  KILN_CUDNN(cudnnSetActivationDescriptor(
      d_.act,
      epilogue_.act == Activation::kRelu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
      CUDNN_NOT_PROPAGATE_NAN, 0.0));
  KILN_RETURN_IF_ERROR(upload_constants(in, ctx));

  const std::string key =
      conv_tactic_key(g, ctx.precision, x.dtype, epilogue_, bias_ >= 0, ctx.workspace_limit);
  return choose(ctx, key).with_context(name_ + " (Conv " + shape_str(x.shape) + " * " +
                                       shape_str(in[1].shape) + ", NHWC " + dtype_name(x.dtype) +
                                       ")");
}

Status CudnnConvKernel::choose(CudaBuildContext& ctx, const std::string& key) {
  const size_t full_bytes = pads_.crop
                                ? static_cast<size_t>(full_dims_[0]) * full_dims_[1] *
                                      full_dims_[2] * full_dims_[3] * dtype_size(y_desc_.dtype)
                                : 0;
  auto finish = [&](const ConvTactic& t, bool cached) -> Status {
    tactic_ = t;
    KILN_RETURN_IF_ERROR(set_math(t.math));
    workspace_ = pads_.crop ? align_up(t.algo_ws) + full_bytes : t.algo_ws;
    std::ostringstream s;
    s << "cudnn " << cudnn_algo_name(t.algo) << (t.fused ? " fused " : " + ")
      << (t.fused          ? activation_name(epilogue_.act)
          : has_epilogue() ? "epilogue"
                           : "no epilogue");
    if (t.ms >= 0)
      s << " (" << t.ms << " ms" << (cached ? ", cached" : "") << ")";
    else
      s << " (heuristic)";
    tactic_text_ = s.str();
    return Status::ok();
  };
  const cudnnTensorDescriptor_t conv_y = pads_.crop ? d_.y_full : d_.y;
  std::string cached;
  if (ctx.time_tactics && ctx.tactics->get(key, &cached)) {
    ConvTactic t;
    int fused = 0, algo = 0, math = 0;
    std::istringstream is(cached);
    if (is >> fused >> algo >> math >> t.ms) {
      t.fused = fused != 0;
      t.algo = static_cast<cudnnConvolutionFwdAlgo_t>(algo);
      t.math = static_cast<cudnnMathType_t>(math);
      KILN_RETURN_IF_ERROR(set_math(t.math));
      KILN_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(ctx.cudnn, d_.x, d_.w, d_.conv, conv_y,
                                                         t.algo, &t.algo_ws));
      return finish(t, true);
    }
  }

  // Scratch buffers of the real shapes: X, the output (cuDNN's full one when cropping), the
  // residual, and a workspace for the largest feasible candidate.
  int max_algos = 0;
  KILN_CUDNN(cudnnGetConvolutionForwardAlgorithmMaxCount(ctx.cudnn, &max_algos));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(max_algos));
  int found = 0;
  KILN_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(ctx.cudnn, d_.x, d_.w, d_.conv, conv_y,
                                                    max_algos, &found, perf.data()));
  std::vector<ConvTactic> heuristic;
  size_t max_ws = 0;
  for (int i = 0; i < found; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ctx.workspace_limit) continue;
    heuristic.push_back({false, perf[i].algo, requested_math_, perf[i].memory, -1});
    max_ws = std::max(max_ws, perf[i].memory);
  }
  if (heuristic.empty()) return unsupported("cuDNN offers no algorithm within the workspace limit");
  ScratchBuffer sx, sy, sr, sws;
  KILN_RETURN_IF_ERROR(sx.alloc_random(x_desc_.dtype, x_desc_.numel(), 1));
  const int64_t full_numel =
      static_cast<int64_t>(full_dims_[0]) * full_dims_[1] * full_dims_[2] * full_dims_[3];
  KILN_RETURN_IF_ERROR(sy.alloc_random(y_desc_.dtype, std::max(y_desc_.numel(), full_numel), 2));
  const bool res = epilogue_.residual_input >= 0;
  if (res) KILN_RETURN_IF_ERROR(sr.alloc_random(y_desc_.dtype, y_desc_.numel(), 3));
  KILN_RETURN_IF_ERROR(sws.alloc(align_up(max_ws) + full_bytes));
  auto try_run = [&](ConvTactic& t, bool timed) -> Status {
    KILN_RETURN_IF_ERROR(set_math(t.math));
    auto launch = [&] {
      return launch_conv(ctx.cudnn, ctx.stream, sx.get(), sy.get(), sr.get(), sws.get(), t);
    };
    if (!timed) {
      KILN_RETURN_IF_ERROR(launch());
      KILN_CUDA(cudaStreamSynchronize(ctx.stream));
      return Status::ok();
    }
    KILN_ASSIGN_OR_RETURN(t.ms, time_launches(ctx.stream, launch));
    return Status::ok();
  };
  // Fused candidates: identity only runs with IMPLICIT_PRECOMP_GEMM.
  std::vector<ConvTactic> fused;
  if (fusable()) {
    for (ConvTactic t : heuristic) {
      if (epilogue_.act == Activation::kNone &&
          t.algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
        continue;
      t.fused = true;
      fused.push_back(t);
    }
  }

  if (!ctx.time_tactics) {
    for (std::vector<ConvTactic>* list : {&fused, &heuristic})
      for (ConvTactic& t : *list) {
        if (try_run(t, false).is_ok()) return finish(t, false);
        cudaGetLastError();  // a failed candidate's launch error is not this kernel's
      }
    return unsupported("no cuDNN algorithm ran for this convolution");
  }

  // Plain conv: cuDNN times every algorithm itself; should that call fail, the heuristic
  // candidates are timed here instead.
  std::vector<cudnnConvolutionFwdAlgoPerf_t> timed(static_cast<size_t>(max_algos));
  KILN_RETURN_IF_ERROR(set_math(requested_math_));
  const cudnnStatus_t find = cudnnFindConvolutionForwardAlgorithmEx(
      ctx.cudnn, d_.x, sx.get(), d_.w, filter_, d_.conv, conv_y, sy.get(), max_algos, &found,
      timed.data(), sws.get(), align_up(max_ws));
  std::vector<ConvTactic> plain;
  if (find == CUDNN_STATUS_SUCCESS) {
    for (int i = 0; i < found; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& p = timed[i];
      if (p.status != CUDNN_STATUS_SUCCESS || p.memory > align_up(max_ws)) continue;
      // fp32 keeps FMA math whatever cuDNN reports, so that no candidate runs in TF32.
      plain.push_back({false, p.algo,
                       requested_math_ == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : p.mathType, p.memory,
                       p.time});
    }
  } else {
    cudaGetLastError();
    plain = heuristic;
  }
  ConvTactic best;
  bool have = false;
  for (ConvTactic& t : plain) {
    // The whole unfused sequence (conv + crop + epilogue) is what competes with fused calls;
    // cuDNN's own timing stands when the conv is all there is.
    const bool own_timing = t.ms < 0 || has_epilogue() || pads_.crop || !fused.empty();
    if (own_timing && !try_run(t, true).is_ok()) {
      cudaGetLastError();
      continue;
    }
    if (!have || t.ms < best.ms) best = t;
    have = true;
    if (find == CUDNN_STATUS_SUCCESS) break;  // sorted by cuDNN's time: the first that runs
  }
  for (ConvTactic& t : fused) {
    if (!try_run(t, true).is_ok()) {
      cudaGetLastError();
      continue;
    }
    if (!have || t.ms < best.ms) best = t;
    have = true;
  }
  if (!have) return unsupported("no cuDNN algorithm ran for this convolution");
  std::ostringstream v;
  v << (best.fused ? 1 : 0) << " " << static_cast<int>(best.algo) << " "
    << static_cast<int>(best.math) << " " << best.ms;
  ctx.tactics->put(key, v.str());
  return finish(best, false);
}

Result<std::unique_ptr<CudaKernel>> make_cudnn_conv(const Node& node, Precision precision) {
  if (node.inputs.size() < 2 || !node.inputs[0] || !node.inputs[1])
    return unsupported("Conv without X or W");
  const Value* w = node.inputs[1];
  if (!w->is_constant()) return unsupported("Conv weight is not a constant (cuDNN packs it)");
  if (w->constant.rank() != 4)
    return unsupported("Conv with W " + shape_str(w->constant.shape()) + ": only 2-D convs");
  if (!dtype_is_float(w->constant.dtype()) || w->constant.dtype() == DataType::kFloat64)
    return unsupported(std::string("Conv weight of ") + dtype_name(w->constant.dtype()));
  const DataType xt = node.inputs[0]->dtype;
  if (xt != DataType::kFloat32 && xt != DataType::kFloat16)
    return unsupported(std::string("Conv on ") + dtype_name(xt) + " (cuDNN: float32/16)");
  int bias = -1;
  if (node.inputs.size() > 2 && node.inputs[2] && node.epilogue.residual_input != 2) {
    bias = 2;
    if (!node.inputs[2]->is_constant()) return unsupported("Conv bias is not a constant");
  }
  KILN_ASSIGN_OR_RETURN(ConvAttrs attrs, parse_conv_attrs(node.attrs));
  if (!attrs.kernel_shape.empty() && attrs.kernel_shape.size() != 2)
    return unsupported("Conv kernel_shape of rank " + std::to_string(attrs.kernel_shape.size()));
  return std::unique_ptr<CudaKernel>(new CudnnConvKernel(node, std::move(attrs), bias));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(Conv, make_cudnn_conv);

}  // namespace kiln
