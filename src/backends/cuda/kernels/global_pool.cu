// GlobalAveragePool and GlobalMaxPool: the mean / max of each (n, c) plane, output
// [N, C, 1, .., 1] in kPlain (the same bytes as NHWC for a 1x1 plane). Accumulates in float;
// the max lets a NaN through (reference rule).
//
// NHWC (rank 4): a block covers 32·V channels of one image; its 8 rows of threads split the
// H·W positions and meet in shared memory. Every warp reads 32 consecutive V-channel packs,
// so [256,2048,7,7] fp16 reads at full width. Plain (any rank ≥ 3): one warp per plane.

#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/structured.cuh"

namespace kiln {
namespace {

using cuda::dispatch_act;

constexpr int kLanes = 32, kRows = 8;

template <bool kMax>
__device__ __forceinline__ float combine(float a, float b) {
  return kMax ? cuda::nan_max(a, b) : a + b;
}

template <class T, int V, bool kMax>
__global__ void global_pool_nhwc_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t c,
                                        int64_t hw, int64_t chunks) {
  __shared__ float part[kRows][kLanes * V];
  const int64_t n = blockIdx.x / chunks;
  const int64_t c0 = (blockIdx.x % chunks) * kLanes * V + threadIdx.x * V;
  const bool active = c0 < c;
  float acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = kMax ? -INFINITY : 0.f;
  if (active) {
    const T* p = x + n * hw * c + c0;
    for (int64_t s = threadIdx.y; s < hw; s += kRows) {
      float v[V];
      cuda::load_pack<T, V>(p + s * c, v);
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] = combine<kMax>(acc[k], v[k]);
    }
  }
#pragma unroll
  for (int k = 0; k < V; ++k) part[threadIdx.y][threadIdx.x * V + k] = acc[k];
  __syncthreads();
  if (threadIdx.y != 0 || !active) return;
  for (int r = 1; r < kRows; ++r)
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] = combine<kMax>(acc[k], part[r][threadIdx.x * V + k]);
  if (!kMax) {
    const float inv = 1.f / static_cast<float>(hw);
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] *= inv;
  }
  cuda::store_pack<T, V>(y + n * c + c0, acc);
}

template <class T, bool kMax>
__global__ void global_pool_plain_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t planes,
                                         int64_t hw) {
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kLanes);
  const int lane = threadIdx.x % kLanes;
  for (int64_t plane = blockIdx.x * int64_t{blockDim.x / kLanes} + threadIdx.x / kLanes;
       plane < planes; plane += warps) {
    const T* p = x + plane * hw;
    float acc = kMax ? -INFINITY : 0.f;
    for (int64_t s = lane; s < hw; s += kLanes) acc = combine<kMax>(acc, cuda::to_float(p[s]));
#pragma unroll
    for (int off = kLanes / 2; off > 0; off /= 2)
      acc = combine<kMax>(acc, __shfl_xor_sync(0xffffffffu, acc, off));
    if (lane == 0) y[plane] = cuda::from_float<T>(kMax ? acc : acc / static_cast<float>(hw));
  }
}

template <class T, bool kMax>
Status launch_global_pool(int64_t n, int64_t c, int64_t hw, Layout layout, const void* x, void* y,
                          cudaStream_t s) {
  const auto* xt = static_cast<const T*>(x);
  auto* yt = static_cast<T*>(y);
  if (layout == Layout::kPlain) {
    constexpr int kThreads = 256;
    global_pool_plain_kernel<T, kMax>
        <<<cuda::grid_blocks(n * c * kLanes, kThreads), kThreads, 0, s>>>(xt, yt, n * c, hw);
    KILN_CUDA_LAUNCHED("global_pool_plain_kernel");
    return Status::ok();
  }
  const int v = cuda::pack_width(sizeof(T), c, {x, y});
  const int64_t chunks = (c + kLanes * v - 1) / (kLanes * v);
  const int64_t blocks = n * chunks;
  if (blocks > 0x7fffffff) return unsupported("GlobalPool grid too large");
  const dim3 block(kLanes, kRows);
  const unsigned grid = static_cast<unsigned>(blocks);
  switch (v) {
    case 8:
      global_pool_nhwc_kernel<T, 8, kMax><<<grid, block, 0, s>>>(xt, yt, c, hw, chunks);
      break;
    case 4:
      global_pool_nhwc_kernel<T, 4, kMax><<<grid, block, 0, s>>>(xt, yt, c, hw, chunks);
      break;
    case 2:
      global_pool_nhwc_kernel<T, 2, kMax><<<grid, block, 0, s>>>(xt, yt, c, hw, chunks);
      break;
    default:
      global_pool_nhwc_kernel<T, 1, kMax><<<grid, block, 0, s>>>(xt, yt, c, hw, chunks);
      break;
  }
  KILN_CUDA_LAUNCHED("global_pool_nhwc_kernel");
  return Status::ok();
}

class GlobalPoolKernel final : public CudaKernel {
 public:
  explicit GlobalPoolKernel(bool is_max) : is_max_(is_max) {}

  Layout input_layout(int, Layout offered) const override { return offered; }

  Status prepare(const std::vector<DevDesc>& in, std::vector<DevDesc>& out,
                 CudaBuildContext&) override {
    const DevDesc& x = in[0];
    KILN_RETURN_IF_ERROR(cuda::check_act_dtype(x.dtype, "input 0"));
    if (x.shape.size() < 3)
      return invalid_argument("input 0: expected rank ≥ 3 (N, C, spatial...), got shape " +
                              shape_str(x.shape));
    if (x.layout == Layout::kNHWC && x.shape.size() != 4)
      return invalid_argument("NHWC input of rank " + std::to_string(x.shape.size()));
    n_ = x.shape[0];
    c_ = x.shape[1];
    hw_ = 1;
    for (size_t i = 2; i < x.shape.size(); ++i) hw_ *= x.shape[i];
    layout_ = x.layout;
    dtype_ = x.dtype;
    Shape shape(x.shape.size(), 1);
    shape[0] = n_;
    shape[1] = c_;
    out[0] = DevDesc{x.dtype, shape, Layout::kPlain, nullptr};
    return Status::ok();
  }

  std::string tactic() const override {
    return std::string(is_max_ ? "kiln global_max_pool " : "kiln global_avg_pool ") +
           layout_name(layout_);
  }

  Status enqueue(const std::vector<const DevTensor*>& in, const std::vector<DevTensor*>& out,
                 const CudaRunContext& run) override {
    if (n_ * c_ == 0) return Status::ok();
    return dispatch_act(dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      const void* x = in[0]->data;
      void* y = out[0]->data;
      return is_max_ ? launch_global_pool<T, true>(n_, c_, hw_, layout_, x, y, run.stream)
                     : launch_global_pool<T, false>(n_, c_, hw_, layout_, x, y, run.stream);
    });
  }

 private:
  bool is_max_;
  int64_t n_ = 0, c_ = 0, hw_ = 0;
  Layout layout_ = Layout::kPlain;
  DataType dtype_ = DataType::kUndefined;
};

Result<std::unique_ptr<CudaKernel>> make_global_pool(const Node& node, bool is_max) {
  const Value* x = node.input(0);
  if (!x) return invalid_argument("input 0 (X) is missing");
  if (!dtype_is_float(x->dtype))
    return unsupported(std::string("input 0: element type ") + dtype_name(x->dtype) +
                       " (the CUDA kernel pools float tensors)");
  return std::unique_ptr<CudaKernel>(new GlobalPoolKernel(is_max));
}

Result<std::unique_ptr<CudaKernel>> make_global_average_pool(const Node& node, Precision) {
  return make_global_pool(node, false);
}
Result<std::unique_ptr<CudaKernel>> make_global_max_pool(const Node& node, Precision) {
  return make_global_pool(node, true);
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(GlobalAveragePool, make_global_average_pool);
KILN_REGISTER_CUDA_KERNEL(GlobalMaxPool, make_global_max_pool);

}  // namespace kiln
