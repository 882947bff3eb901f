// MaxPool and AveragePool, 2-D (rank-4 input), NHWC or plain: the geometry is ops/pool.h's
// (auto_pad, ceil_mode, dilations resolved there), so the kernels only walk each window.
// A window position outside the input is skipped; AveragePool's count_include_pad counts
// positions inside [-pad_begin, in + pad_end) per dim, as the reference does. MaxPool lets
// a NaN through, and an empty window (dilations stepping over the whole input) gives -inf.
//
// NHWC: one thread per (n, oh, ow, V channels), V = 8 halves / 4 floats when C allows, so
// a warp reads whole 16-byte runs of channels. Plain: one thread per output element.

#include <cmath>
#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/structured.cuh"
#include "ops/pool.h"

namespace kiln {
namespace {

using cuda::dispatch_act;
using cuda::grid_blocks;

struct PoolGeom {
  int64_t n, c, h, w, oh, ow;
  int kh, kw, sh, sw, dh, dw;
  int ph, pw;    // begin padding
  int peh, pew;  // end padding, for count_include_pad
  bool include_pad;
};

// Walks the window of output (oy, ox); `base` points at (n, y=0, x=0) of the first of V
// channels, which lie at unit stride. sy/sx: element strides of one row / column.
template <class T, int V, bool kMax>
__device__ __forceinline__ void pool_window(const T* base, int64_t sy, int64_t sx,
                                            const PoolGeom& g, int64_t oy, int64_t ox,
                                            float (&acc)[V]) {
#pragma unroll
  for (int i = 0; i < V; ++i) acc[i] = kMax ? -INFINITY : 0.f;
  const int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
  int valid_h = 0, valid_w = 0, pad_h = 0, pad_w = 0;
  for (int j = 0; j < g.kw; ++j) {
    int64_t x = x0 + int64_t{j} * g.dw;
    valid_w += x >= 0 && x < g.w;
    pad_w += x >= -g.pw && x < g.w + g.pew;
  }
  for (int i = 0; i < g.kh; ++i) {
    int64_t y = y0 + int64_t{i} * g.dh;
    pad_h += y >= -g.ph && y < g.h + g.peh;
    if (y < 0 || y >= g.h) continue;
    ++valid_h;
    for (int j = 0; j < g.kw; ++j) {
      int64_t x = x0 + int64_t{j} * g.dw;
      if (x < 0 || x >= g.w) continue;
      float v[V];
      cuda::load_pack<T, V>(base + y * sy + x * sx, v);
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] = kMax ? cuda::nan_max(acc[k], v[k]) : acc[k] + v[k];
    }
  }
  if (!kMax) {
    int count = g.include_pad ? pad_h * pad_w : valid_h * valid_w;
    float inv = count > 0 ? 1.f / static_cast<float>(count) : NAN;
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] *= inv;
  }
}

// Index: int32_t when input and output both have fewer than 2^30 elements (the usual case,
// ResNet-50's b256 stem output included): 32-bit divisions cost a fraction of 64-bit ones,
// which are emulated and dominated this memory-bound kernel.
template <class T, int V, bool kMax, class Index>
__global__ void pool_nhwc_kernel(const T* __restrict__ x, T* __restrict__ y, PoolGeom g) {
  const Index cv = static_cast<Index>(g.c / V), ow = static_cast<Index>(g.ow),
              oh = static_cast<Index>(g.oh);
  const Index total = static_cast<Index>(g.n * g.oh * g.ow) * cv;
  for (Index i = static_cast<Index>(blockIdx.x * blockDim.x + threadIdx.x); i < total;
       i += static_cast<Index>(gridDim.x * blockDim.x)) {
    const Index c = (i % cv) * V;
    Index r = i / cv;
    const Index ox = r % ow;
    r /= ow;
    const Index oy = r % oh;
    const Index n = r / oh;
    float acc[V];
    pool_window<T, V, kMax>(x + static_cast<int64_t>(n) * g.h * g.w * g.c + c, g.w * g.c, g.c, g,
                            oy, ox, acc);
    cuda::store_pack<T, V>(y + static_cast<int64_t>(i) * V, acc);
  }
}

template <class T, bool kMax>
__global__ void pool_plain_kernel(const T* __restrict__ x, T* __restrict__ y, PoolGeom g) {
  const int64_t total = g.n * g.c * g.oh * g.ow;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t ox = i % g.ow;
    int64_t r = i / g.ow;
    int64_t oy = r % g.oh;
    int64_t plane = r / g.oh;
    float acc[1];
    pool_window<T, 1, kMax>(x + plane * g.h * g.w, g.w, 1, g, oy, ox, acc);
    y[i] = cuda::from_float<T>(acc[0]);
  }
}

template <class T, bool kMax>
Status launch_pool(const PoolGeom& g, Layout layout, const void* x, void* y, cudaStream_t s) {
  constexpr int kThreads = 256;
  const auto* xt = static_cast<const T*>(x);
  auto* yt = static_cast<T*>(y);
  if (layout == Layout::kPlain) {
    pool_plain_kernel<T, kMax>
        <<<grid_blocks(g.n * g.c * g.oh * g.ow, kThreads), kThreads, 0, s>>>(xt, yt, g);
    KILN_CUDA_LAUNCHED("pool_plain_kernel");
    return Status::ok();
  }
  const int v = cuda::pack_width(sizeof(T), g.c, {x, y});
  const int64_t items = g.n * g.oh * g.ow * (g.c / v);
  const unsigned blocks = grid_blocks(items, kThreads);
  // Below 2^30 a grid-stride step (at most the item count) cannot overflow 32 bits.
  const int64_t kNarrow = int64_t{1} << 30;
  const bool narrow = g.n * g.h * g.w * g.c < kNarrow && g.n * g.oh * g.ow * g.c < kNarrow;
  if (narrow) {
    switch (v) {
      case 8: pool_nhwc_kernel<T, 8, kMax, int32_t><<<blocks, kThreads, 0, s>>>(xt, yt, g); break;
      case 4: pool_nhwc_kernel<T, 4, kMax, int32_t><<<blocks, kThreads, 0, s>>>(xt, yt, g); break;
      case 2: pool_nhwc_kernel<T, 2, kMax, int32_t><<<blocks, kThreads, 0, s>>>(xt, yt, g); break;
      default: pool_nhwc_kernel<T, 1, kMax, int32_t><<<blocks, kThreads, 0, s>>>(xt, yt, g); break;
    }
  } else {
    switch (v) {
      case 8: pool_nhwc_kernel<T, 8, kMax, int64_t><<<blocks, kThreads, 0, s>>>(xt, yt, g); break;
      case 4: pool_nhwc_kernel<T, 4, kMax, int64_t><<<blocks, kThreads, 0, s>>>(xt, yt, g); break;
      case 2: pool_nhwc_kernel<T, 2, kMax, int64_t><<<blocks, kThreads, 0, s>>>(xt, yt, g); break;
      default: pool_nhwc_kernel<T, 1, kMax, int64_t><<<blocks, kThreads, 0, s>>>(xt, yt, g); break;
    }
  }
  KILN_CUDA_LAUNCHED("pool_nhwc_kernel");
  return Status::ok();
}

class PoolKernel final : public CudaKernel {
 public:
  PoolKernel(bool is_max, PoolAttrs attrs) : is_max_(is_max), attrs_(std::move(attrs)) {}

  Layout input_layout(int, Layout offered) const override { return offered; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext&) override {
    const TensorDesc& x = in[0];
    KILN_RETURN_IF_ERROR(cuda::check_act_dtype(x.dtype, "input 0"));
    if (x.shape.size() != 4)
      return unsupported("input " + shape_str(x.shape) + ": only 2-D pooling (rank 4)");
    KILN_ASSIGN_OR_RETURN(std::vector<PoolDim> dims, pool_dims(attrs_, x.shape));
    const PoolDim &dh = dims[0], &dw = dims[1];
    geom_ = PoolGeom{x.shape[0],
                     x.shape[1],
                     x.shape[2],
                     x.shape[3],
                     dh.out,
                     dw.out,
                     static_cast<int>(dh.kernel),
                     static_cast<int>(dw.kernel),
                     static_cast<int>(dh.stride),
                     static_cast<int>(dw.stride),
                     static_cast<int>(dh.dilation),
                     static_cast<int>(dw.dilation),
                     static_cast<int>(dh.pad_begin),
                     static_cast<int>(dw.pad_begin),
                     static_cast<int>(dh.pad_end),
                     static_cast<int>(dw.pad_end),
                     attrs_.count_include_pad};
    layout_ = x.layout;
    dtype_ = x.dtype;
    out[0] = TensorDesc{x.dtype, pool_output_shape(x.shape, dims), nullptr, x.layout};
    return Status::ok();
  }

  std::string tactic() const override {
    return std::string(is_max_ ? "kiln max_pool " : "kiln avg_pool ") + layout_name(layout_);
  }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    if (geom_.n * geom_.c * geom_.oh * geom_.ow == 0) return Status::ok();
    return dispatch_act(dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      return is_max_ ? launch_pool<T, true>(geom_, layout_, in[0]->data, out[0]->data, run.stream)
                     : launch_pool<T, false>(geom_, layout_, in[0]->data, out[0]->data, run.stream);
    });
  }

 private:
  bool is_max_;
  PoolAttrs attrs_;
  PoolGeom geom_{};
  Layout layout_ = Layout::kPlain;
  DataType dtype_ = DataType::kUndefined;
};

Result<std::unique_ptr<CudaKernel>> make_pool(const Node& node, bool is_max) {
  const Value* x = node.input(0);
  if (!x) return invalid_argument("input 0 (X) is missing");
  if (!dtype_is_float(x->dtype))
    return unsupported(std::string("input 0: element type ") + dtype_name(x->dtype) +
                       " (the CUDA kernel pools float tensors)");
  int64_t rank = cuda::known_rank(node, 0);
  if (rank != -1 && rank != 4)
    return unsupported("input of rank " + std::to_string(rank) + ": only 2-D pooling (rank 4)");
  if (is_max && node.output(1))
    return unsupported("MaxPool's Indices output (not computed by the CUDA kernel)");
  PoolAttrOptions options;
  options.dilations = is_max;
  options.storage_order = is_max;
  options.count_include_pad = !is_max;
  KILN_ASSIGN_OR_RETURN(PoolAttrs attrs, parse_pool_attrs(node.attrs, 2, options));
  return std::unique_ptr<CudaKernel>(new PoolKernel(is_max, std::move(attrs)));
}

Result<std::unique_ptr<CudaKernel>> make_max_pool(const Node& node, Precision) {
  return make_pool(node, true);
}
Result<std::unique_ptr<CudaKernel>> make_average_pool(const Node& node, Precision) {
  return make_pool(node, false);
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(MaxPool, make_max_pool);
KILN_REGISTER_CUDA_KERNEL(AveragePool, make_average_pool);

}  // namespace kiln
