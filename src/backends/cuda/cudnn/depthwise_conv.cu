// Depthwise Conv (group == C == M, W [C, 1, R, S]) in NHWC, kiln's own kernel with the epilogue
// fused: y = act(Σ x·w + bias[c] + residual). cuDNN 9 has no fast NHWC depthwise kernel: its
// graph engine 0 took 0.86 ms for MobileNetV3-Large's 64-channel 3×3 conv at 112² and batch 64
// on an H200, where reading and writing the tensors once takes about 0.05 ms.
//
// One thread computes V consecutive channels (one 16-byte load of x) of 2 or 4 neighbouring
// output pixels of a row, walking the R×S taps: each tap's weights are loaded once for the
// tile, and for stride-1 3×3, 5×5 and 7×7 filters each input column of the row once (a
// register window). Threads of a warp cover neighbouring tiles, so the remaining re-reads of x
// hit L1. Weights are packed [R·S][C] in float, bias in float; the sum is kept in float.
//
// With tactic timing the cuDNN conv (prepared beside it) is timed too and the faster one runs;
// without timing this kernel runs. Strict fp32 (NCHW) plans keep cuDNN, and so does a cuDNN
// path forced with KILN_CUDNN_PATH.

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

// Output columns per thread: the weights of a tap are loaded once for all of them and, for
// stride-1 rows, each input column once for the whole tile.
template <int S>
constexpr int tile_width() {
  return S == 7 ? 2 : 4;
}

// One thread: V channels × kT consecutive output columns of one output row. S > 0: the
// filter width, with column stride and dilation 1 (the input window of a row is loaded once
// into registers); S == 0: any width, stride and dilation.
template <class T, int V, int S>
__global__ void depthwise_conv_kernel(const T* __restrict__ x, const float* __restrict__ wt,
                                      const float* __restrict__ bias, const T* __restrict__ res,
                                      T* __restrict__ y, DwGeo g, int64_t total) {
  constexpr int kT = tile_width<S>();
  const int cpacks = g.c / V;
  const int tiles = (g.ow + kT - 1) / kT;
  for (int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; p < total;
       p += int64_t{gridDim.x} * blockDim.x) {
    const int cp = static_cast<int>(p % cpacks);
    int64_t t = p / cpacks;
    const int ox0 = static_cast<int>(t % tiles) * kT;
    t /= tiles;
    const int oy = static_cast<int>(t % g.oh);
    const int64_t b = t / g.oh;
    const int c0 = cp * V;
    float acc[kT][V], xv[V], wv[V];
    cuda::load_pack<float, V>(bias + c0, acc[0]);
#pragma unroll
    for (int j = 1; j < kT; ++j)
#pragma unroll
      for (int k = 0; k < V; ++k) acc[j][k] = acc[0][k];
    const T* xb = x + b * g.h * g.w * g.c + c0;
    for (int r = 0; r < g.r; ++r) {
      const int iy = oy * g.sh - g.ph + r * g.dh;
      if (iy < 0 || iy >= g.h) continue;
      const T* xrow = xb + static_cast<int64_t>(iy) * g.w * g.c;
      const float* wrow = wt + r * g.s * g.c + c0;
      if constexpr (S > 0) {
        float win[kT + S - 1][V];
#pragma unroll
        for (int j = 0; j < kT + S - 1; ++j) {
          const int ix = ox0 - g.pw + j;
          if (ix >= 0 && ix < g.w) {
            cuda::load_pack<T, V>(xrow + static_cast<int64_t>(ix) * g.c, win[j]);
          } else {
#pragma unroll
            for (int k = 0; k < V; ++k) win[j][k] = 0.f;
          }
        }
#pragma unroll
        for (int s = 0; s < S; ++s) {
          cuda::load_pack<float, V>(wrow + s * g.c, wv);
#pragma unroll
          for (int j = 0; j < kT; ++j)
#pragma unroll
            for (int k = 0; k < V; ++k) acc[j][k] = fmaf(win[j + s][k], wv[k], acc[j][k]);
        }
      } else {
        for (int s = 0; s < g.s; ++s) {
          cuda::load_pack<float, V>(wrow + s * g.c, wv);
#pragma unroll
          for (int j = 0; j < kT; ++j) {
            const int ix = (ox0 + j) * g.sw - g.pw + s * g.dw;
            if (ix < 0 || ix >= g.w) continue;
            cuda::load_pack<T, V>(xrow + static_cast<int64_t>(ix) * g.c, xv);
#pragma unroll
            for (int k = 0; k < V; ++k) acc[j][k] = fmaf(xv[k], wv[k], acc[j][k]);
          }
        }
      }
    }
    // NHWC output: pixel (b, oy, ox0 + j), channels c0..c0+V.
    const int64_t o0 = ((b * g.oh + oy) * g.ow + ox0) * g.c + c0;
#pragma unroll
    for (int j = 0; j < kT; ++j) {
      if (ox0 + j >= g.ow) break;
      const int64_t o = o0 + int64_t{j} * g.c;
      if (res) {
        cuda::load_pack<T, V>(res + o, xv);
#pragma unroll
        for (int k = 0; k < V; ++k) acc[j][k] += xv[k];
      }
#pragma unroll
      for (int k = 0; k < V; ++k) acc[j][k] = cuda::activate_rt(g.act, acc[j][k], g.alpha, g.beta);
      cuda::store_pack<T, V>(y + o, acc[j]);
    }
  }
}

class DepthwiseConvKernel final : public CudaKernel {
 public:
  DepthwiseConvKernel(const Node& node, ConvAttrs attrs, int bias,
                      std::unique_ptr<CudnnConvKernel> cudnn)
      : name_(node.name),
        attrs_(std::move(attrs)),
        epilogue_(node.epilogue),
        bias_(bias),
        cudnn_(std::move(cudnn)) {}

  Layout input_layout(int i, Layout) const override {
    return i == 0 || i == epilogue_.residual_input ? Layout::kNHWC : Layout::kPlain;
  }
  bool reads_on_host(int i) const override { return i == 1 || (bias_ >= 0 && i == bias_); }
  // Each element's residual is read before its output is written.
  int inplace_input() const override { return epilogue_.residual_input; }
  size_t workspace_bytes() const override { return use_cudnn_ ? cudnn_->workspace_bytes() : 0; }
  std::string tactic() const override { return tactic_; }

  Status prepare(const std::vector<DevDesc>& in, std::vector<DevDesc>& out,
                 CudaBuildContext& ctx) override {
    use_cudnn_ = false;
    if (conv_path_from_env() != ConvPathChoice::kAuto) {  // a cuDNN path forced: cuDNN
      use_cudnn_ = true;
      const Status s = cudnn_->prepare(in, out, ctx);
      tactic_ = cudnn_->tactic();
      return s;
    }
    KILN_RETURN_IF_ERROR(prepare_own(in, out, ctx));
    if (!ctx.time_tactics) {
      tactic_ = own_text(-1);
      return Status::ok();
    }
    KILN_ASSIGN_OR_RETURN(float own_ms, time_own(ctx));
    std::vector<DevDesc> cudnn_out(out.size());
    const Status cudnn = cudnn_->prepare(in, cudnn_out, ctx);
    tactic_ = own_text(own_ms);
    if (cudnn.is_ok() && cudnn_->tactic_ms() >= 0 && cudnn_->tactic_ms() < own_ms) {
      use_cudnn_ = true;
      tactic_ = cudnn_->tactic() + "; kiln depthwise " + std::to_string(own_ms) + " ms";
    } else if (cudnn.is_ok()) {
      tactic_ += "; " + cudnn_->tactic();
    }
    return Status::ok();
  }

  Status enqueue(const std::vector<const DevTensor*>& in, const std::vector<DevTensor*>& out,
                 const CudaRunContext& run) override {
    if (use_cudnn_) return cudnn_->enqueue(in, out, run);
    const int r = epilogue_.residual_input;
    return launch(in[0]->data, r >= 0 ? in[r]->data : nullptr, out[0]->data, run.stream);
  }

 private:
  Status prepare_own(const std::vector<DevDesc>& in, std::vector<DevDesc>& out,
                     CudaBuildContext& ctx) {
    if (in.size() < 2 || !in[0].present() || !in[1].value)
      return unsupported("depthwise Conv needs X and a constant W");
    const DevDesc& x = in[0];
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
    y_desc_ = DevDesc{x.dtype, y_shape, Layout::kNHWC, nullptr};
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
    // [R·S][C] weights, then C biases.
    const int taps = geo_.r * geo_.s;
    const std::vector<float> w = in[1].value->to_floats();  // [C, 1, R, S]
    std::vector<float> packed(static_cast<size_t>((taps + 1) * c), 0.f);
    for (int ch = 0; ch < c; ++ch)
      for (int t = 0; t < taps; ++t) packed[t * c + ch] = w[ch * taps + t];
    if (bias_ >= 0) {
      const std::vector<float> b = in[bias_].value->to_floats();
      std::copy(b.begin(), b.end(), packed.begin() + taps * c);
    }
    const size_t bytes = packed.size() * sizeof(float);
    KILN_ASSIGN_OR_RETURN(
        void* dev, ctx.weights->upload(name_ + "/depthwise/" +
                                           std::to_string(cuda::content_hash(packed.data(), bytes)),
                                       packed.data(), bytes));
    weights_ = static_cast<const float*>(dev);
    bias_dev_ = weights_ + taps * c;
    dtype_ = x.dtype;
    x_desc_ = x;
    out[0] = y_desc_;
    for (size_t i = 1; i < out.size(); ++i) out[i] = DevDesc{};
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
    s << "kiln depthwise " << geo_.r << "x" << geo_.s << " v" << vec()
      << (window_width() ? " window" : "");
    if (!epilogue_.empty()) s << " fused " << epilogue_.describe();
    if (ms >= 0)
      s << " (" << ms << " ms)";
    else
      s << " (heuristic)";
    return s.str();
  }

  // The widest pack for this dtype and channel count (pointers permitting).
  int vec() const {
    const int v = dtype_ == DataType::kFloat16 ? 8 : 4;
    return geo_.c % v == 0 ? v : 1;
  }

  // The window variant's filter width (3, 5 or 7 with column stride and dilation 1), else 0.
  int window_width() const {
    if (geo_.sw != 1 || geo_.dw != 1) return 0;
    return geo_.s == 3 || geo_.s == 5 || geo_.s == 7 ? geo_.s : 0;
  }

  // V channels per thread: 16 bytes where C and every pointer allow it, else 1.
  Status launch(const void* x, const void* res, void* y, cudaStream_t stream) const {
    if (y_desc_.numel() == 0) return Status::ok();
    const bool wide =
        vec() > 1 && cuda::pack_width(dtype_size(dtype_), geo_.c, {x, res, y}) >= vec();
    const int v = wide ? vec() : 1;
    const int ww = window_width();
    const int tile = ww == 7 ? tile_width<7>() : tile_width<3>();
    const int64_t total = int64_t{geo_.n} * geo_.oh * ((geo_.ow + tile - 1) / tile) * (geo_.c / v);
    constexpr int kThreads = 256;
    const unsigned blocks = cuda::grid_blocks(total, kThreads);
    return cuda::dispatch_act(dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      constexpr int kV = sizeof(T) == 2 ? 8 : 4;
      auto go = [&](auto vc, auto sc) {
        constexpr int V = decltype(vc)::value, S = decltype(sc)::value;
        depthwise_conv_kernel<T, V, S><<<blocks, kThreads, 0, stream>>>(
            static_cast<const T*>(x), weights_, bias_dev_, static_cast<const T*>(res),
            static_cast<T*>(y), geo_, total);
      };
      auto with_v = [&](auto vc) {
        switch (ww) {
          case 3: go(vc, std::integral_constant<int, 3>{}); break;
          case 5: go(vc, std::integral_constant<int, 5>{}); break;
          case 7: go(vc, std::integral_constant<int, 7>{}); break;
          default: go(vc, std::integral_constant<int, 0>{}); break;
        }
      };
      if (wide)
        with_v(std::integral_constant<int, kV>{});
      else
        with_v(std::integral_constant<int, 1>{});
      KILN_CUDA_LAUNCHED("depthwise_conv_kernel");
      return Status::ok();
    });
  }

  std::string name_;
  ConvAttrs attrs_;
  Epilogue epilogue_;
  int bias_;
  std::unique_ptr<CudnnConvKernel> cudnn_;
  bool use_cudnn_ = false;
  DwGeo geo_{};
  DevDesc x_desc_, y_desc_;
  DataType dtype_ = DataType::kUndefined;
  const float* weights_ = nullptr;
  const float* bias_dev_ = nullptr;
  std::string tactic_;
};

}  // namespace

std::unique_ptr<CudaKernel> maybe_depthwise(const Node& node, const ConvAttrs& attrs, int bias,
                                            Precision precision,
                                            std::unique_ptr<CudnnConvKernel> cudnn) {
  const Shape& w = node.inputs[1]->constant.shape();
  const bool depthwise = precision != Precision::kFp32 && w.size() == 4 && w[1] == 1 &&
                         attrs.group > 1 && attrs.group == w[0];
  if (!depthwise) return cudnn;
  return std::make_unique<DepthwiseConvKernel>(node, attrs, bias, std::move(cudnn));
}

}  // namespace kiln
