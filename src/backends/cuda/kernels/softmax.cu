// Softmax (opset 13: one axis, default -1), plain layout: y = exp(x - max) / Σ exp(x - max)
// along the axis, in float. With the input seen as [outer, n, inner]:
//   inner == 1 (the last axis, classifier heads): one block per row, block reductions;
//   inner > 1: one thread per (outer, inner) column walking the axis, so a warp's reads
//   are consecutive in memory.

#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/structured.cuh"
#include "ops/op_util.h"
#include "ops/softmax.h"

namespace kiln {
namespace {

constexpr int kRowThreads = 256;

// Reduces `v` over the block (max or sum); every thread gets the result.
template <bool kMax>
__device__ float block_reduce(float v, float* smem) {
  for (int off = 16; off > 0; off /= 2) {
    float o = __shfl_xor_sync(0xffffffffu, v, off);
    v = kMax ? fmaxf(v, o) : v + o;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // smem may still be read from the previous reduction
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x / 32) ? smem[lane] : (kMax ? -INFINITY : 0.f);
  for (int off = 16; off > 0; off /= 2) {
    float o = __shfl_xor_sync(0xffffffffu, v, off);
    v = kMax ? fmaxf(v, o) : v + o;
  }
  return v;
}

template <class T>
__global__ void softmax_rows_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows,
                                    int64_t n) {
  __shared__ float smem[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * n;
    T* yr = y + row * n;
    float mx = -INFINITY;
    bool nan = false;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      float v = cuda::to_float(xr[k]);
      nan = nan || v != v;
      mx = fmaxf(mx, v);
    }
    mx = block_reduce<true>(mx, smem);
    // fmaxf drops NaN; the reference's max would not, and its result is NaN then anyway.
    if (__syncthreads_or(nan)) mx = NAN;
    float sum = 0.f;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) sum += expf(cuda::to_float(xr[k]) - mx);
    sum = block_reduce<false>(sum, smem);
    const float inv = 1.f / sum;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x)
      yr[k] = cuda::from_float<T>(expf(cuda::to_float(xr[k]) - mx) * inv);
  }
}

template <class T>
__global__ void softmax_columns_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t outer,
                                       int64_t n, int64_t inner) {
  const int64_t total = outer * inner;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t base = (i / inner) * n * inner + i % inner;
    float mx = -INFINITY;
    for (int64_t k = 0; k < n; ++k) mx = cuda::nan_max(mx, cuda::to_float(x[base + k * inner]));
    float sum = 0.f;
    for (int64_t k = 0; k < n; ++k) sum += expf(cuda::to_float(x[base + k * inner]) - mx);
    const float inv = 1.f / sum;
    for (int64_t k = 0; k < n; ++k)
      y[base + k * inner] =
          cuda::from_float<T>(expf(cuda::to_float(x[base + k * inner]) - mx) * inv);
  }
}

class SoftmaxKernel final : public CudaKernel {
 public:
  explicit SoftmaxKernel(int64_t axis) : axis_(axis) {}

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext&) override {
    const TensorDesc& x = in[0];
    KILN_RETURN_IF_ERROR(cuda::check_act_dtype(x.dtype, "input 0"));
    if (x.layout != Layout::kPlain) return invalid_argument("Softmax takes plain input");
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    KILN_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, rank));
    outer_ = inner_ = 1;
    for (int64_t i = 0; i < axis; ++i) outer_ *= x.shape[i];
    for (int64_t i = axis + 1; i < rank; ++i) inner_ *= x.shape[i];
    n_ = x.shape[axis];
    dtype_ = x.dtype;
    out[0] = TensorDesc{x.dtype, x.shape};
    return Status::ok();
  }

  std::string tactic() const override {
    return inner_ == 1 ? "kiln softmax rows" : "kiln softmax columns";
  }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    if (outer_ * n_ * inner_ == 0) return Status::ok();
    return cuda::dispatch_act(dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      const T* x = static_cast<const T*>(in[0]->data);
      T* y = static_cast<T*>(out[0]->data);
      if (inner_ == 1) {
        const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(outer_, 1 << 20));
        softmax_rows_kernel<T><<<blocks, kRowThreads, 0, run.stream>>>(x, y, outer_, n_);
        KILN_CUDA_LAUNCHED("softmax_rows_kernel");
      } else {
        constexpr int kThreads = 256;
        softmax_columns_kernel<T>
            <<<cuda::grid_blocks(outer_ * inner_, kThreads), kThreads, 0, run.stream>>>(
                x, y, outer_, n_, inner_);
        KILN_CUDA_LAUNCHED("softmax_columns_kernel");
      }
      return Status::ok();
    });
  }

 private:
  int64_t axis_;
  int64_t outer_ = 0, n_ = 0, inner_ = 0;
  DataType dtype_ = DataType::kUndefined;
};

Result<std::unique_ptr<CudaKernel>> make_softmax(const Node& node, Precision) {
  const Value* x = node.input(0);
  if (!x) return invalid_argument("input 0 is missing");
  if (!dtype_is_float(x->dtype))
    return unsupported(std::string("input 0: element type ") + dtype_name(x->dtype) +
                       " (Softmax takes float types)");
  return std::unique_ptr<CudaKernel>(new SoftmaxKernel(softmax_attrs(node).axis));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(Softmax, make_softmax);

}  // namespace kiln
