// GlobalAveragePool and GlobalMaxPool: the mean / max of each (n, c) plane, output
// [N, C, 1, .., 1] in kPlain (the same bytes as NHWC for a 1x1 plane). Accumulates in float;
// the max lets a NaN through (reference rule).
//
// NHWC (rank 4): a block covers up to 32·V channels of one image; its rows of threads split
// the H·W positions and meet in shared memory, so a warp reads consecutive V-channel packs
// ([256,2048,7,7] fp16 at full width). Few channels on a large map (EfficientNet's first SE
// pools [64, 32, 112, 112]) get narrower, taller blocks, and several blocks per image along
// H·W whose float partials a second kernel combines. Plain (any rank ≥ 3): one warp per plane.

#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/structured.cuh"

namespace kiln {
namespace {

using cuda::dispatch_act;

constexpr int kLanes = 32, kBlockThreads = 256;

template <bool kMax>
__device__ __forceinline__ float combine(float a, float b) {
  return kMax ? cuda::nan_max(a, b) : a + b;
}

// One block: `lanes` threads across V-channel packs (a power of two, at most 32) times
// 256 / lanes rows splitting its share of the H·W positions; rows meet in shared memory. With
// several splits per image the blocks write float partials to `part` and
// global_pool_finish_kernel combines them.
template <class T, int V, bool kMax>
__global__ void global_pool_nhwc_kernel(const T* __restrict__ x, T* __restrict__ y,
                                        float* __restrict__ part, int64_t c, int64_t hw,
                                        int64_t chunks, int64_t per_split) {
  __shared__ float red[kBlockThreads * V];
  const int lanes = blockDim.x, rows = blockDim.y;
  const int64_t n = blockIdx.x / chunks;
  const int64_t c0 = ((blockIdx.x % chunks) * lanes + threadIdx.x) * V;
  const bool active = c0 < c;
  const int64_t s0 = blockIdx.y * per_split, s1 = min(hw, s0 + per_split);
  float acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = kMax ? -INFINITY : 0.f;
  if (active) {
    const T* p = x + n * hw * c + c0;
    for (int64_t s = s0 + threadIdx.y; s < s1; s += rows) {
      float v[V];
      cuda::load_pack<T, V>(p + s * c, v);
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] = combine<kMax>(acc[k], v[k]);
    }
  }
  float* mine = red + (threadIdx.y * lanes + threadIdx.x) * V;
#pragma unroll
  for (int k = 0; k < V; ++k) mine[k] = acc[k];
  for (int step = rows / 2; step > 0; step /= 2) {
    __syncthreads();
    if (threadIdx.y < step) {
      const float* other = mine + step * lanes * V;
#pragma unroll
      for (int k = 0; k < V; ++k) mine[k] = combine<kMax>(mine[k], other[k]);
    }
  }
  if (threadIdx.y != 0 || !active) return;
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = mine[k];
  if (gridDim.y > 1) {  // a partial: [split][n][c] floats
    float* q = part + (blockIdx.y * (gridDim.x / chunks) + n) * c + c0;
#pragma unroll
    for (int k = 0; k < V; ++k) q[k] = acc[k];
    return;
  }
  if (!kMax) {
    const float inv = 1.f / static_cast<float>(hw);
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] *= inv;
  }
  cuda::store_pack<T, V>(y + n * c + c0, acc);
}

template <class T, bool kMax>
__global__ void global_pool_finish_kernel(const float* __restrict__ part, T* __restrict__ y,
                                          int64_t nc, int splits, int64_t hw) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < nc;
       i += int64_t{gridDim.x} * blockDim.x) {
    float acc = part[i];
    for (int s = 1; s < splits; ++s) acc = combine<kMax>(acc, part[s * nc + i]);
    y[i] = cuda::from_float<T>(kMax ? acc : acc / static_cast<float>(hw));
  }
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

// How an NHWC pool is spread: V channels per thread, `lanes` threads across packs, `chunks`
// blocks across C, `splits` blocks along H·W (each `per_split` positions).
struct NhwcSpread {
  int v = 1, lanes = 1, splits = 1;
  int64_t chunks = 1, per_split = 1;
};

// Enough blocks to fill the GPU (SE blocks pool [64, 32, 112, 112]: one block per image left
// most SMs idle), each still reading a few hundred positions.
NhwcSpread nhwc_spread(int64_t n, int64_t c, int64_t hw, size_t elem, int sms) {
  NhwcSpread sp;
  sp.v = cuda::pack_width(elem, c, {});
  const int64_t packs = c / sp.v;
  while (sp.lanes < kLanes && sp.lanes < packs) sp.lanes *= 2;
  const int rows = kBlockThreads / sp.lanes;
  sp.chunks = (packs + sp.lanes - 1) / sp.lanes;
  const int64_t want = 4 * int64_t{sms}, have = n * sp.chunks;
  int64_t splits = have >= want ? 1 : (want + have - 1) / have;
  splits = std::min<int64_t>({splits, std::max<int64_t>(1, hw / (4 * rows)), 1024});
  sp.per_split = (hw + splits - 1) / splits;
  sp.splits = static_cast<int>((hw + sp.per_split - 1) / sp.per_split);
  return sp;
}

template <class T, bool kMax>
Status launch_global_pool(int64_t n, int64_t c, int64_t hw, Layout layout, const NhwcSpread& sp,
                          const void* x, void* y, void* workspace, cudaStream_t s) {
  const auto* xt = static_cast<const T*>(x);
  auto* yt = static_cast<T*>(y);
  if (layout == Layout::kPlain) {
    constexpr int kThreads = 256;
    global_pool_plain_kernel<T, kMax>
        <<<cuda::grid_blocks(n * c * kLanes, kThreads), kThreads, 0, s>>>(xt, yt, n * c, hw);
    KILN_CUDA_LAUNCHED("global_pool_plain_kernel");
    return Status::ok();
  }
  // The pack width was chosen for C at prepare; pointers must allow it too.
  if (cuda::pack_width(sizeof(T), sp.v, {x, y}) != sp.v)
    return internal_error("GlobalPool buffers not aligned for their pack width");
  const int64_t blocks = n * sp.chunks;
  if (blocks > 0x7fffffff) return unsupported("GlobalPool grid too large");
  const dim3 block(sp.lanes, kBlockThreads / sp.lanes);
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(sp.splits));
  float* part = static_cast<float*>(workspace);
  auto go = [&](auto kernel) {
    kernel<<<grid, block, 0, s>>>(xt, yt, part, c, hw, sp.chunks, sp.per_split);
  };
  switch (sp.v) {
    case 8: go(global_pool_nhwc_kernel<T, 8, kMax>); break;
    case 4: go(global_pool_nhwc_kernel<T, 4, kMax>); break;
    case 2: go(global_pool_nhwc_kernel<T, 2, kMax>); break;
    default: go(global_pool_nhwc_kernel<T, 1, kMax>); break;
  }
  KILN_CUDA_LAUNCHED("global_pool_nhwc_kernel");
  if (sp.splits > 1) {
    constexpr int kThreads = 256;
    global_pool_finish_kernel<T, kMax>
        <<<cuda::grid_blocks(n * c, kThreads), kThreads, 0, s>>>(part, yt, n * c, sp.splits, hw);
    KILN_CUDA_LAUNCHED("global_pool_finish_kernel");
  }
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
    if (layout_ == Layout::kNHWC) {
      int device = 0, sms = 132;
      if (cudaGetDevice(&device) != cudaSuccess ||
          cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
        sms = 132;
      spread_ = nhwc_spread(n_, c_, hw_, dtype_size(dtype_), sms);
    }
    Shape shape(x.shape.size(), 1);
    shape[0] = n_;
    shape[1] = c_;
    out[0] = DevDesc{x.dtype, shape, Layout::kPlain, nullptr};
    return Status::ok();
  }

  size_t workspace_bytes() const override {
    return layout_ == Layout::kNHWC && spread_.splits > 1
               ? static_cast<size_t>(spread_.splits * n_ * c_) * sizeof(float)
               : 0;
  }

  std::string tactic() const override {
    std::string t = std::string(is_max_ ? "kiln global_max_pool " : "kiln global_avg_pool ") +
                    layout_name(layout_);
    if (layout_ == Layout::kNHWC && spread_.splits > 1)
      t += " split " + std::to_string(spread_.splits);
    return t;
  }

  Status enqueue(const std::vector<const DevTensor*>& in, const std::vector<DevTensor*>& out,
                 const CudaRunContext& run) override {
    if (n_ * c_ == 0) return Status::ok();
    return dispatch_act(dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      const void* x = in[0]->data;
      void* y = out[0]->data;
      return is_max_ ? launch_global_pool<T, true>(n_, c_, hw_, layout_, spread_, x, y,
                                                   run.workspace, run.stream)
                     : launch_global_pool<T, false>(n_, c_, hw_, layout_, spread_, x, y,
                                                    run.workspace, run.stream);
    });
  }

 private:
  bool is_max_;
  int64_t n_ = 0, c_ = 0, hw_ = 0;
  Layout layout_ = Layout::kPlain;
  DataType dtype_ = DataType::kUndefined;
  NhwcSpread spread_;
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
