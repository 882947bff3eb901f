// Depthwise Conv (group == C == M, W [C, 1, R, S]) in NHWC, kiln's own kernel with the epilogue
// fused: y = act(Σ x·w + bias[c] + residual). cuDNN 9 has no fast NHWC depthwise kernel: its
// graph engine 0 took 0.86 ms for MobileNetV3-Large's 64-channel 3×3 conv at 112² and batch 64
// on an H200, where reading and writing the tensors once takes about 0.05 ms.
//
// One thread computes V consecutive channels (one 16-byte load of x) of one output pixel,
// walking the R×S taps; a warp covers neighbouring pixels of one row, so the taps' re-reads of x
// hit L1. Weights are packed [R·S][C] in the activation dtype (a 16-byte load per tap, like
// x), bias in float; the sum is kept in float. (Tiles of 2–4 pixels per thread, with the
// weights and a stride-1 row's input columns loaded once per tile, measured 1.3–1.5× slower on
// the H200: the registers they hold cut the occupancy this memory-bound kernel lives on.)
//
// A candidate of its own for Conv ("kiln-depthwise", asked before cuDNN's): with tactic timing
// the planner times it beside the cuDNN paths and keeps the fastest; without timing it runs.
// It declines strict fp32 (NCHW) plans and a cuDNN path forced by
// EngineOptions::cudnn_conv_path.

#include <cuda_fp16.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cudnn/conv_kernel.h"
#include "backends/cuda/kernels/elementwise.cuh"
#include "backends/cuda/kernels/structured.cuh"

namespace kiln {
namespace {

struct DwGeo {
  int n, c, h, w, oh, ow, r, s, sh, sw, ph, pw, dh, dw;
  Activation act;
  float alpha, beta;
};

// One thread: V channels of one output pixel. Weights in the activation dtype (16 bytes a
// pack in fp16, as x), bias in float, the sum in float. I: the index type (32-bit where every
// element offset fits).
template <class T, int V, class I>
__global__ void depthwise_conv_kernel(const T* __restrict__ x, const T* __restrict__ wt,
                                      const float* __restrict__ bias, const T* __restrict__ res,
                                      T* __restrict__ y, DwGeo g, I total) {
  const I cpacks = static_cast<I>(g.c / V);
  for (I p = blockIdx.x * I{blockDim.x} + threadIdx.x; p < total;
       p += I{gridDim.x} * I{blockDim.x}) {
    const I cp = p % cpacks;
    I t = p / cpacks;
    const int ox = static_cast<int>(t % static_cast<I>(g.ow));
    t /= static_cast<I>(g.ow);
    const int oy = static_cast<int>(t % static_cast<I>(g.oh));
    const I b = t / static_cast<I>(g.oh);
    const int c0 = static_cast<int>(cp) * V;
    float acc[V], xv[V], wv[V];
    cuda::load_pack<float, V>(bias + c0, acc);
    const T* xb = x + b * static_cast<I>(g.h) * g.w * g.c + c0;
    for (int r = 0; r < g.r; ++r) {
      const int iy = oy * g.sh - g.ph + r * g.dh;
      if (iy < 0 || iy >= g.h) continue;
      for (int s = 0; s < g.s; ++s) {
        const int ix = ox * g.sw - g.pw + s * g.dw;
        if (ix < 0 || ix >= g.w) continue;
        cuda::load_pack<T, V>(xb + (static_cast<I>(iy) * g.w + ix) * g.c, xv);
        cuda::load_pack<T, V>(wt + (r * g.s + s) * g.c + c0, wv);
#pragma unroll
        for (int k = 0; k < V; ++k) acc[k] = fmaf(xv[k], wv[k], acc[k]);
      }
    }
    const I o = p * V;  // NHWC output: (pixel, channel) in the thread order
    if (res) {
      cuda::load_pack<T, V>(res + o, xv);
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] += xv[k];
    }
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] = cuda::activate_rt(g.act, acc[k], g.alpha, g.beta);
    cuda::store_pack<T, V>(y + o, acc);
  }
}

class DepthwiseConvKernel final : public CudaKernel {
 public:
  DepthwiseConvKernel(const Node& node, ConvAttrs attrs, int bias)
      : name_(node.name), attrs_(std::move(attrs)), epilogue_(node.epilogue), bias_(bias) {}

  Layout input_layout(int i, Layout) const override {
    return i == 0 || i == epilogue_.residual_input ? Layout::kNHWC : Layout::kPlain;
  }
  bool reads_on_host(int i) const override { return i == 1 || (bias_ >= 0 && i == bias_); }
  // Each element's residual is read before its output is written.
  int inplace_input() const override { return epilogue_.residual_input; }
  std::string tactic() const override { return tactic_; }
  float timed_ms() const override { return ms_; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override {
    ms_ = -1;
    if (ctx.conv_path != CudnnConvPath::kAuto)
      return unsupported(std::string("cudnn_conv_path=") + cudnn_conv_path_name(ctx.conv_path) +
                         " asks for cuDNN");
    KILN_RETURN_IF_ERROR(prepare_own(in, out, ctx));
    if (ctx.time_tactics) {
      KILN_ASSIGN_OR_RETURN(ms_, time_own(ctx));
    }
    tactic_ = own_text(ms_);
    return Status::ok();
  }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    const int r = epilogue_.residual_input;
    return launch(in[0]->data, r >= 0 ? in[r]->data : nullptr, out[0]->data, run.stream);
  }

 private:
  Status prepare_own(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                     CudaBuildContext& ctx) {
    if (in.size() < 2 || !in[0].present() || !in[1].value)
      return unsupported("depthwise Conv needs X and a constant W");
    const TensorDesc& x = in[0];
    KILN_RETURN_IF_ERROR(cuda::check_act_dtype(x.dtype, "input 0"));
    if (x.shape.size() != 4 || x.layout != Layout::kNHWC)
      return invalid_argument("depthwise Conv input must be 4-D NHWC, got " + shape_str(x.shape) +
                              " " + layout_name(x.layout));
    KILN_ASSIGN_OR_RETURN(ConvGeometry g, conv_geometry(attrs_, x.shape, in[1].shape));
    if (g.group != g.in_channels || g.out_channels != g.in_channels)
      return unsupported("not a depthwise conv (group " + std::to_string(g.group) + ", C " +
                         std::to_string(g.in_channels) + ", M " + std::to_string(g.out_channels) +
                         ")");
    const Shape y_shape = g.output_shape();
    for (int64_t v : y_shape)
      if (v <= 0 || v > INT32_MAX) return invalid_argument("Conv output " + shape_str(y_shape));
    if (bias_ >= 0 && (!in[bias_].value || in[bias_].shape != Shape{g.out_channels}))
      return invalid_argument("bias " + shape_str(in[bias_].shape) + " must be a constant [" +
                              std::to_string(g.out_channels) + "]");
    y_desc_ = TensorDesc{x.dtype, y_shape, nullptr, Layout::kNHWC};
    const int res = epilogue_.residual_input;
    if (res >= 0 && (res >= static_cast<int>(in.size()) || in[res].shape != y_shape ||
                     in[res].dtype != x.dtype || in[res].layout != Layout::kNHWC))
      return invalid_argument("epilogue residual must match the output " + shape_str(y_shape) +
                              " in NHWC");
    const int c = static_cast<int>(g.in_channels);
    geo_ = DwGeo{static_cast<int>(g.batch),
                 c,
                 static_cast<int>(g.in_spatial[0]),
                 static_cast<int>(g.in_spatial[1]),
                 static_cast<int>(g.out_spatial[0]),
                 static_cast<int>(g.out_spatial[1]),
                 static_cast<int>(g.kernel[0]),
                 static_cast<int>(g.kernel[1]),
                 static_cast<int>(g.strides[0]),
                 static_cast<int>(g.strides[1]),
                 static_cast<int>(g.pad_begin[0]),
                 static_cast<int>(g.pad_begin[1]),
                 static_cast<int>(g.dilations[0]),
                 static_cast<int>(g.dilations[1]),
                 epilogue_.act,
                 epilogue_.alpha,
                 epilogue_.beta};
    // [R·S][C] weights in the activation dtype; C biases in float.
    const int taps = geo_.r * geo_.s;
    const std::vector<float> w = in[1].value->to_floats();  // [C, 1, R, S]
    std::vector<float> packed(static_cast<size_t>(taps * c));
    for (int ch = 0; ch < c; ++ch)
      for (int t = 0; t < taps; ++t) packed[t * c + ch] = w[ch * taps + t];
    std::vector<float> bias(static_cast<size_t>(c), 0.f);
    if (bias_ >= 0) bias = in[bias_].value->to_floats();
    const std::vector<uint8_t> wbytes = encode_floats(packed, x.dtype);
    const std::string tag = std::string(dtype_name(x.dtype)) + "/" +
                            std::to_string(cuda::content_hash(wbytes.data(), wbytes.size()));
    KILN_ASSIGN_OR_RETURN(
        weights_, ctx.weights->upload(name_ + "/depthwise/w/" + tag, wbytes.data(), wbytes.size()));
    KILN_ASSIGN_OR_RETURN(void* b, ctx.weights->upload(name_ + "/depthwise/b/" + tag, bias.data(),
                                                       bias.size() * sizeof(float)));
    bias_dev_ = static_cast<const float*>(b);
    dtype_ = x.dtype;
    x_desc_ = x;
    out[0] = y_desc_;
    for (size_t i = 1; i < out.size(); ++i) out[i] = TensorDesc{};
    return Status::ok();
  }

  // The kernel's time on scratch operands of the real shapes, cached like the convs' times.
  Result<float> time_own(CudaBuildContext& ctx) const {
    std::ostringstream key;
    key << "dwconv|" << dtype_name(dtype_) << "|n" << geo_.n << "c" << geo_.c << "h" << geo_.h
        << "w" << geo_.w << "|k" << geo_.r << "x" << geo_.s << "|s" << geo_.sh << "," << geo_.sw
        << "|p" << geo_.ph << "," << geo_.pw << "|d" << geo_.dh << "," << geo_.dw << "|"
        << activation_name(epilogue_.act) << (epilogue_.residual_input >= 0 ? "|res" : "");
    std::string cached;
    if (ctx.tactics->get(key.str(), &cached)) {
      const float ms = std::strtof(cached.c_str(), nullptr);
      if (ms > 0) return ms;
    }
    ScratchBuffer xb, yb, rb;
    KILN_RETURN_IF_ERROR(xb.alloc_random(dtype_, x_desc_.numel(), 11));
    KILN_RETURN_IF_ERROR(yb.alloc(y_desc_.nbytes()));
    if (epilogue_.residual_input >= 0)
      KILN_RETURN_IF_ERROR(rb.alloc_random(dtype_, y_desc_.numel(), 12));
    KILN_ASSIGN_OR_RETURN(float ms, time_launches(ctx.stream, [&] {
                            return launch(xb.get(), rb.get(), yb.get(), ctx.stream);
                          }));
    ctx.tactics->put(key.str(), std::to_string(ms));
    return ms;
  }

  std::string own_text(float ms) const {
    std::ostringstream s;
    s << "kiln depthwise " << geo_.r << "x" << geo_.s << " v" << vec();
    if (!epilogue_.empty()) s << " fused " << epilogue_.describe();
    if (ms >= 0)
      s << " (" << ms << " ms)";
    else
      s << " (heuristic)";
    return s.str();
  }

  // The widest pack for this dtype and channel count (pointers permitting).
  int vec() const {
    const int v = dtype_size(dtype_) == 2 ? 8 : 4;
    return geo_.c % v == 0 ? v : 1;
  }

  // V channels per thread: 16 bytes where C and every pointer allow it, else 1.
  Status launch(const void* x, const void* res, void* y, cudaStream_t stream) const {
    if (y_desc_.numel() == 0) return Status::ok();
    const bool wide =
        vec() > 1 && cuda::pack_width(dtype_size(dtype_), geo_.c, {x, res, y}) >= vec();
    const int64_t total = y_desc_.numel() / (wide ? vec() : 1);
    // 32-bit indexing where every element offset fits.
    const bool small = std::max(x_desc_.numel(), y_desc_.numel()) < (int64_t{1} << 31);
    constexpr int kThreads = 256;
    const unsigned blocks = cuda::grid_blocks(total, kThreads);
    return cuda::dispatch_act(dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      constexpr int kV = sizeof(T) == 2 ? 8 : 4;
      auto go = [&](auto vc, auto index) {
        constexpr int V = decltype(vc)::value;
        using I = decltype(index);
        depthwise_conv_kernel<T, V, I><<<blocks, kThreads, 0, stream>>>(
            static_cast<const T*>(x), static_cast<const T*>(weights_), bias_dev_,
            static_cast<const T*>(res), static_cast<T*>(y), geo_, static_cast<I>(total));
      };
      if (wide && small)
        go(std::integral_constant<int, kV>{}, uint32_t{});
      else if (wide)
        go(std::integral_constant<int, kV>{}, int64_t{});
      else if (small)
        go(std::integral_constant<int, 1>{}, uint32_t{});
      else
        go(std::integral_constant<int, 1>{}, int64_t{});
      KILN_CUDA_LAUNCHED("depthwise_conv_kernel");
      return Status::ok();
    });
  }

  std::string name_;
  ConvAttrs attrs_;
  Epilogue epilogue_;
  int bias_;
  float ms_ = -1;
  DwGeo geo_{};
  TensorDesc x_desc_, y_desc_;
  DataType dtype_ = DataType::kUndefined;
  const void* weights_ = nullptr;  // [R·S][C] in dtype_
  const float* bias_dev_ = nullptr;
  std::string tactic_;
};

}  // namespace

Result<std::unique_ptr<CudaKernel>> make_depthwise_conv(const Node& node, const ConvAttrs& attrs,
                                                        int bias, Precision precision) {
  const Shape& w = node.inputs[1]->constant.shape();
  if (precision == Precision::kFp32)
    return unsupported("strict fp32 runs convs in NCHW, kiln's depthwise kernel in NHWC");
  if (!(w.size() == 4 && w[1] == 1 && attrs.group > 1 && attrs.group == w[0]))
    return unsupported("not a depthwise conv (W " + shape_str(w) + ", group " +
                       std::to_string(attrs.group) + ")");
  return std::unique_ptr<CudaKernel>(std::make_unique<DepthwiseConvKernel>(node, attrs, bias));
}

}  // namespace kiln
