// The legacy cuDNN convolution path of the Conv kernel (conv_kernel.h):
//  - fused: one cudnnConvolutionBiasActivationForward (ReLU, or identity, which cuDNN runs
//    only with IMPLICIT_PRECOMP_GEMM), the residual as z with alpha2 = 1; or
//  - unfused: cudnnConvolutionForward, then one launch_epilogue for bias + residual + act.
// When cuDNN's symmetric padding cannot express ONNX's pads directly (conv_descs.h), cuDNN
// writes a larger tensor into the workspace and cudnnAddTensor copies the window out.
// Timing: cudnnFindConvolutionForwardAlgorithmEx for the plain conv (the whole unfused
// sequence is then timed here when there is more to it), every feasible fused call.
#include <algorithm>
#include <cstdint>
#include <istream>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cudnn/conv_kernel.h"
#include "backends/cuda/kernels/launch.h"

namespace kiln {

Status CudnnConvKernel::setup_legacy(const TensorDesc& x, const TensorDesc& w,
                                     CudaBuildContext& ctx) {
  const ConvGeometry& g = geo_;
  pads_ = map_conv_padding(g);
  const cudnnDataType_t cdt = cudnn_dtype(x.dtype);
  const cudnnTensorFormat_t fmt = nhwc() ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  const auto i32 = [](int64_t v) { return static_cast<int>(v); };
  KILN_RETURN_IF_ERROR(d_.create());
  KILN_CUDNN(cudnnSetTensor4dDescriptor(d_.x, fmt, cdt, i32(g.batch), i32(g.in_channels),
                                        i32(g.in_spatial[0]), i32(g.in_spatial[1])));
  KILN_CUDNN(cudnnSetFilter4dDescriptor(d_.w, cdt, fmt, i32(g.out_channels), i32(w.shape[1]),
                                        i32(g.kernel[0]), i32(g.kernel[1])));
  KILN_CUDNN(cudnnSetConvolution2dDescriptor(
      d_.conv, pads_.pad[0], pads_.pad[1], i32(g.strides[0]), i32(g.strides[1]),
      i32(g.dilations[0]), i32(g.dilations[1]), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  KILN_CUDNN(cudnnSetConvolutionGroupCount(d_.conv, i32(g.group)));
  // fp16/bf16: tensor cores; tf32: cuDNN's default (TF32 allowed); fp32: plain FMA, no TF32.
  requested_math_ = x.dtype != DataType::kFloat32 ? CUDNN_TENSOR_OP_MATH
                    : ctx.allow_tf32()            ? CUDNN_DEFAULT_MATH
                                                  : CUDNN_FMA_MATH;
  KILN_RETURN_IF_ERROR(set_math(requested_math_));
  const int n = i32(g.batch), m = i32(g.out_channels);
  const int ho = i32(g.out_spatial[0]), wo = i32(g.out_spatial[1]);
  KILN_CUDNN(cudnnSetTensor4dDescriptor(d_.y, fmt, cdt, n, m, ho, wo));
  KILN_CUDNN(cudnnGetConvolution2dForwardOutputDim(d_.conv, d_.x, d_.w, &full_dims_[0],
                                                   &full_dims_[1], &full_dims_[2], &full_dims_[3]));
  KILN_CUDNN(cudnnSetTensor4dDescriptor(d_.y_full, fmt, cdt, full_dims_[0], full_dims_[1],
                                        full_dims_[2], full_dims_[3]));
  const int fh = full_dims_[2], fw = full_dims_[3];
  if (fh != ho || fw != wo) pads_.crop = true;
  if (nhwc())
    KILN_CUDNN(
        cudnnSetTensor4dDescriptorEx(d_.y_crop, cdt, n, m, ho, wo, fh * fw * m, 1, fw * m, m));
  else
    KILN_CUDNN(
        cudnnSetTensor4dDescriptorEx(d_.y_crop, cdt, n, m, ho, wo, m * fh * fw, fh * fw, fw, 1));
  full_bytes_ = pads_.crop ? static_cast<size_t>(full_dims_[0]) * full_dims_[1] * full_dims_[2] *
                                 full_dims_[3] * dtype_size(x.dtype)
                           : 0;
  KILN_CUDNN(cudnnSetTensor4dDescriptor(d_.bias, CUDNN_TENSOR_NCHW, cdt, 1, m, 1, 1));
  KILN_CUDNN(cudnnSetActivationDescriptor(
      d_.act,
      epilogue_.act == Activation::kRelu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
      CUDNN_NOT_PROPAGATE_NAN, 0.0));
  return Status::ok();
}

Status CudnnConvKernel::launch_legacy(cudnnHandle_t h, cudaStream_t stream, const void* x, void* y,
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
    uint8_t* full = static_cast<uint8_t*>(ws) + conv_align_up(t.algo_ws);
    KILN_CUDNN(cudnnConvolutionForward(h, &one, d_.x, x, d_.w, filter_, d_.conv, t.algo, ws,
                                       t.algo_ws, &zero, d_.y_full, full));
    const size_t esize = dtype_size(y_desc_.dtype);
    const size_t pixel = static_cast<size_t>(pads_.offset[0]) * full_dims_[3] + pads_.offset[1];
    const size_t off = nhwc() ? pixel * full_dims_[1] : pixel;
    KILN_CUDNN(cudnnAddTensor(h, &one, d_.y_crop, full + off * esize, beta, d_.y, y));
  }
  if (!has_epilogue()) return Status::ok();
  return launch_epilogue(y_desc_, y, bias_f32_, in_place ? nullptr : residual, epilogue_.act,
                         epilogue_.alpha, epilogue_.beta, stream);
}

bool CudnnConvKernel::legacy_from_cache(CudaBuildContext& ctx, std::istream& is, ConvTactic& t) {
  int fused = 0, algo = 0, math = 0;
  if (!(is >> fused >> algo >> math >> t.ms)) return false;
  t.path = ConvPath::kLegacy;
  t.fused = fused != 0;
  t.algo = static_cast<cudnnConvolutionFwdAlgo_t>(algo);
  t.math = static_cast<cudnnMathType_t>(math);
  if (!set_math(t.math).is_ok()) return false;
  if (cudnnGetConvolutionForwardWorkspaceSize(ctx.cudnn, d_.x, d_.w, d_.conv,
                                              pads_.crop ? d_.y_full : d_.y, t.algo,
                                              &t.algo_ws) != CUDNN_STATUS_SUCCESS)
    return false;
  t.workspace = pads_.crop ? conv_align_up(t.algo_ws) + full_bytes_ : t.algo_ws;
  return true;
}

Status CudnnConvKernel::legacy_candidates(CudaBuildContext& ctx, ConvScratch& s,
                                          std::vector<ConvTactic>& out) {
  const cudnnTensorDescriptor_t conv_y = pads_.crop ? d_.y_full : d_.y;
  int max_algos = 0;
  KILN_CUDNN(cudnnGetConvolutionForwardAlgorithmMaxCount(ctx.cudnn, &max_algos));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(max_algos));
  int found = 0;
  KILN_RETURN_IF_ERROR(set_math(requested_math_));
  KILN_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(ctx.cudnn, d_.x, d_.w, d_.conv, conv_y,
                                                    max_algos, &found, perf.data()));
  auto with_ws = [&](ConvTactic t) {
    t.path = ConvPath::kLegacy;
    t.workspace = pads_.crop ? conv_align_up(t.algo_ws) + full_bytes_ : t.algo_ws;
    return t;
  };
  std::vector<ConvTactic> heuristic;
  size_t max_ws = 0;
  for (int i = 0; i < found; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ctx.workspace_limit) continue;
    ConvTactic t;
    t.algo = perf[i].algo;
    t.math = requested_math_;
    t.algo_ws = perf[i].memory;
    heuristic.push_back(with_ws(t));
    max_ws = std::max(max_ws, perf[i].memory);
  }
  if (heuristic.empty()) return unsupported("cuDNN offers no algorithm within the workspace limit");
  KILN_RETURN_IF_ERROR(s.reserve_ws(conv_align_up(max_ws) + full_bytes_));
  auto try_run = [&](ConvTactic& t, bool timed) -> Status {
    KILN_RETURN_IF_ERROR(set_math(t.math));
    auto launch = [&] {
      return launch_legacy(ctx.cudnn, ctx.stream, s.x.get(), s.y.get(), s.r.get(), s.ws.get(), t);
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
        if (try_run(t, false).is_ok()) {
          out.push_back(t);
          return Status::ok();
        }
        cudaGetLastError();  // a failed candidate's launch error is not this kernel's
      }
    return unsupported("no legacy cuDNN algorithm ran");
  }
  // Plain conv: cuDNN times every algorithm itself; should that call fail, the heuristic
  // candidates are timed here instead.
  std::vector<cudnnConvolutionFwdAlgoPerf_t> timed(static_cast<size_t>(max_algos));
  KILN_RETURN_IF_ERROR(set_math(requested_math_));
  // With a candidate limit the first heuristic candidates are timed here instead.
  const cudnnStatus_t find =
      ctx.max_tactics ? CUDNN_STATUS_NOT_SUPPORTED
                      : cudnnFindConvolutionForwardAlgorithmEx(
                            ctx.cudnn, d_.x, s.x.get(), d_.w, filter_, d_.conv, conv_y, s.y.get(),
                            max_algos, &found, timed.data(), s.ws.get(), conv_align_up(max_ws));
  std::vector<ConvTactic> plain;
  if (find == CUDNN_STATUS_SUCCESS) {
    for (int i = 0; i < found; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& p = timed[i];
      if (p.status != CUDNN_STATUS_SUCCESS || p.memory > conv_align_up(max_ws)) continue;
      ConvTactic t;
      t.algo = p.algo;
      // fp32 keeps FMA math whatever cuDNN reports, so that no candidate runs in TF32.
      t.math = requested_math_ == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : p.mathType;
      t.algo_ws = p.memory;
      t.ms = p.time;
      plain.push_back(with_ws(t));
    }
  } else {
    cudaGetLastError();
    plain = heuristic;
    plain.resize(ctx.tactic_count(plain.size()));
  }
  fused.resize(ctx.tactic_count(fused.size()));
  // All timed candidates compete (the caller trades time for workspace); the whole unfused
  // sequence is timed here when there is more to it than the conv.
  const bool own_timing = has_epilogue() || pads_.crop;
  for (ConvTactic& t : plain) {
    if ((own_timing || t.ms < 0) && !try_run(t, true).is_ok()) {
      cudaGetLastError();
      continue;
    }
    out.push_back(t);
  }
  for (ConvTactic& t : fused) {
    if (!try_run(t, true).is_ok()) {
      cudaGetLastError();
      continue;
    }
    out.push_back(t);
  }
  return Status::ok();
}

}  // namespace kiln
