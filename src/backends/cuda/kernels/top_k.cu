// TopK: the k largest (or smallest) elements of X along `axis` and their int64 indices, best
// first, equal values by the lower index (src/ops/top_k.cc; kiln always sorts, which satisfies
// sorted = 0 too). k is input 1, read on the host at prepare (the planner reads it back first
// where the graph computes it). Any arithmetic element type, plain layout, an axis of at most
// kMaxExtent elements.
//
// The order is the reference's stable sort by better(a, b): a > b (a < b for the smallest),
// NaN above every number, the values compared as the reference compares them (float16 and
// bfloat16 in float, 64-bit integers as doubles). Element i of a row of n therefore lands at
//   rank(i) = #{j : better(x_j, x_i)} + #{j < i : neither is better than the other},
// a permutation of 0..n-1, and is written when rank(i) < k: no sort, no workspace.
//
// One block per chunk of kItems·blockDim elements of a row (grid-stride over rows × chunks;
// the axis' stride is inner), so that a long row still spreads over the GPU. Each thread
// ranks kItems elements of the chunk at once against the whole row, which the block reads
// through shared memory a tile of blockDim elements at a time; a thread stops counting once
// all its ranks reach k, and the block once all its threads did. n² comparisons per row at
// worst (k near n), far fewer for a small k: meant for the rows of detection and
// classification heads (a few thousand elements), not for sorting long axes.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <memory>
#include <type_traits>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/launch.h"
#include "backends/cuda/kernels/structured.cuh"
#include "ops/op_util.h"
#include "ops/top_k.h"

namespace kiln {
namespace {

constexpr int kMaxThreads = 128;
constexpr int kItems = 4;  // elements a thread ranks at once: each tile read serves them all
constexpr int64_t kMaxExtent = 65536;

// The value the reference compares for an element (ComputeT, then double).
template <class T>
__device__ __forceinline__ auto top_k_key(T v) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    return cuda::to_float(v);
  } else if constexpr (sizeof(T) == 8) {
    return static_cast<double>(v);  // int64 and uint64 lose their low bits, as in the reference
  } else if constexpr (std::is_floating_point_v<T>) {
    return v;
  } else {
    return static_cast<int64_t>(v);  // exact: comparing these as doubles changes nothing
  }
}

// a goes before b: larger (smaller when !kLargest), NaN the largest.
template <bool kLargest, class K>
__device__ __forceinline__ bool top_k_better(K a, K b) {
  if constexpr (std::is_floating_point_v<K>) {
    const bool an = a != a, bn = b != b;
    if (an || bn) return kLargest ? an && !bn : bn && !an;
  }
  return kLargest ? a > b : a < b;
}

template <class T, bool kLargest>
__global__ void top_k_kernel(const T* __restrict__ x, T* __restrict__ values,
                             int64_t* __restrict__ indices, int64_t rows, int64_t inner, int n,
                             int k, int chunks) {
  using K = decltype(top_k_key(T{}));
  __shared__ K tile[kMaxThreads];
  const int threads = static_cast<int>(blockDim.x);
  for (int64_t item = blockIdx.x; item < rows * chunks; item += gridDim.x) {
    const int64_t row = item / chunks, o = row / inner, c = row % inner;
    const T* xr = x + o * n * inner + c;
    const int64_t out_base = o * k * inner + c;
    // This thread's elements of the chunk (strided, so that a warp's loads are adjacent); an
    // element past the row starts at rank k: never written, never waited for.
    const int c0 = static_cast<int>(item % chunks) * threads * kItems;
    K xi[kItems];
    int rank[kItems];
    bool done = true;
#pragma unroll
    for (int q = 0; q < kItems; ++q) {
      const int i = c0 + q * threads + static_cast<int>(threadIdx.x);
      xi[q] = i < n ? top_k_key(xr[i * inner]) : K{};
      rank[q] = i < n ? 0 : k;
      done = done && rank[q] >= k;
    }
    for (int t0 = 0; t0 < n; t0 += threads) {
      // Also keeps the previous tile until every thread has read it.
      if (__syncthreads_and(done)) break;
      const int t = t0 + static_cast<int>(threadIdx.x);
      if (t < n) tile[threadIdx.x] = top_k_key(xr[t * inner]);
      __syncthreads();
      if (done) continue;
      const int m = n - t0 < threads ? n - t0 : threads;
      for (int p = 0; p < m; ++p) {
        const K xj = tile[p];
        const int j = t0 + p;
#pragma unroll
        for (int q = 0; q < kItems; ++q) {
          const int i = c0 + q * threads + static_cast<int>(threadIdx.x);
          rank[q] +=
              top_k_better<kLargest>(xj, xi[q]) || (j < i && !top_k_better<kLargest>(xi[q], xj));
        }
      }
      done = true;
#pragma unroll
      for (int q = 0; q < kItems; ++q) done = done && rank[q] >= k;
    }
#pragma unroll
    for (int q = 0; q < kItems; ++q) {
      const int i = c0 + q * threads + static_cast<int>(threadIdx.x);
      if (i >= n || rank[q] >= k) continue;
      if (values) values[out_base + rank[q] * inner] = xr[i * inner];
      if (indices) indices[out_base + rank[q] * inner] = i;
    }
  }
}

// Calls f(T{}) with the device type of an arithmetic dtype.
template <class F>
Status dispatch_top_k(DataType dt, F&& f) {
  switch (dt) {
    case DataType::kFloat32: return f(float{});
    case DataType::kFloat16: return f(__half{});
    case DataType::kBFloat16: return f(__nv_bfloat16{});
    case DataType::kFloat64: return f(double{});
    case DataType::kInt8: return f(int8_t{});
    case DataType::kUInt8: return f(uint8_t{});
    case DataType::kInt16: return f(int16_t{});
    case DataType::kUInt16: return f(uint16_t{});
    case DataType::kInt32: return f(int32_t{});
    case DataType::kUInt32: return f(uint32_t{});
    case DataType::kInt64: return f(int64_t{});
    case DataType::kUInt64: return f(uint64_t{});
    default: return unsupported(std::string("TopK of ") + dtype_name(dt));
  }
}

bool top_k_dtype(DataType dt) {
  return dispatch_top_k(dt, [](auto) { return Status::ok(); }).is_ok();
}

// k from input 1 (int64, one element), checked as the reference's shape rule checks it.
Result<int64_t> read_k(const TensorDesc& k, int64_t extent) {
  if (!k.present()) return invalid_argument("input 1 (k) is missing");
  if (!k.value) return unsupported("k (input 1) is not known at build");
  const Tensor& v = *k.value;
  if (v.dtype() != DataType::kInt64)
    return invalid_argument(std::string("input 1 (k): expected int64, got ") +
                            dtype_name(v.dtype()));
  if (v.numel() != 1 || v.rank() > 1)
    return invalid_argument("input 1 (k) must hold one value, got shape " + shape_str(v.shape()));
  const int64_t r = v.data<int64_t>()[0];
  if (r < 0 || r > extent)
    return invalid_argument("k = " + std::to_string(r) + " is outside 0 to " +
                            std::to_string(extent) + " (the axis' extent)");
  return r;
}

}  // namespace

bool top_k_supports(DataType dtype, int64_t n) { return top_k_dtype(dtype) && n <= kMaxExtent; }

Status launch_top_k(DataType dtype, const void* x, void* values, int64_t* indices, int64_t outer,
                    int64_t inner, int64_t n, int64_t k, bool largest, cudaStream_t stream) {
  const int64_t rows = outer * inner;
  if (rows * k == 0) return Status::ok();
  if (!top_k_supports(dtype, n))
    return unsupported(std::string("TopK of ") + dtype_name(dtype) + " over " + std::to_string(n) +
                       " elements");
  // A warp at least, no more threads than the row has elements for.
  const int64_t per_item = (n + kItems - 1) / kItems;
  const int threads = static_cast<int>(std::min<int64_t>(kMaxThreads, (per_item + 31) / 32 * 32));
  const int chunks =
      static_cast<int>((n + int64_t{threads} * kItems - 1) / (int64_t{threads} * kItems));
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(rows * chunks, 1 << 20));
  return dispatch_top_k(dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* xt = static_cast<const T*>(x);
    T* v = static_cast<T*>(values);
    const int ni = static_cast<int>(n), ki = static_cast<int>(k);
    if (largest)
      top_k_kernel<T, true>
          <<<blocks, threads, 0, stream>>>(xt, v, indices, rows, inner, ni, ki, chunks);
    else
      top_k_kernel<T, false>
          <<<blocks, threads, 0, stream>>>(xt, v, indices, rows, inner, ni, ki, chunks);
    KILN_CUDA_LAUNCHED("top_k_kernel");
    return Status::ok();
  });
}

namespace {

class TopKKernel final : public CudaKernel {
 public:
  explicit TopKKernel(TopKAttrs attrs) : attrs_(attrs) {}

  bool reads_on_host(int i) const override { return i == 1; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override {
    if (ctx.bounded) return unsupported("TopK has no bound to run on");
    const TensorDesc& x = in[0];
    if (!top_k_dtype(x.dtype)) return unsupported(std::string("TopK of ") + dtype_name(x.dtype));
    if (x.layout != Layout::kPlain) return invalid_argument("TopK takes plain input");
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    if (rank == 0) return invalid_argument("input 0 is a scalar; TopK needs an axis");
    KILN_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(attrs_.axis, rank));
    n_ = x.shape[axis];
    KILN_ASSIGN_OR_RETURN(k_, read_k(in.size() > 1 ? in[1] : TensorDesc{}, n_));
    if (n_ > kMaxExtent)
      return unsupported("TopK over an axis of " + std::to_string(n_) + " (at most " +
                         std::to_string(kMaxExtent) + ")");
    outer_ = inner_ = 1;
    for (int64_t d = 0; d < axis; ++d) outer_ *= x.shape[d];
    for (int64_t d = axis + 1; d < rank; ++d) inner_ *= x.shape[d];
    dtype_ = x.dtype;
    Shape s = x.shape;
    s[axis] = k_;
    out[0] = TensorDesc{x.dtype, s};
    if (out.size() > 1) out[1] = TensorDesc{DataType::kInt64, s};
    return Status::ok();
  }

  std::string tactic() const override { return "kiln top_k rank"; }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    void* values = out[0] ? out[0]->data : nullptr;
    int64_t* indices = out.size() > 1 && out[1] ? out[1]->as<int64_t>() : nullptr;
    return launch_top_k(dtype_, in[0]->data, values, indices, outer_, inner_, n_, k_,
                        attrs_.largest, run.stream);
  }

 private:
  TopKAttrs attrs_;
  int64_t n_ = 0, k_ = 0, outer_ = 0, inner_ = 0;
  DataType dtype_ = DataType::kUndefined;
};

Result<std::unique_ptr<CudaKernel>> make_top_k(const Node& node, Precision) {
  const Value* x = node.input(0);
  if (!x) return invalid_argument("input 0 is missing");
  if (!node.input(1)) return invalid_argument("input 1 (k) is missing");
  if (!top_k_dtype(x->dtype)) return unsupported(std::string("TopK of ") + dtype_name(x->dtype));
  return std::unique_ptr<CudaKernel>(new TopKKernel(top_k_attrs(node)));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(TopK, make_top_k);

}  // namespace kiln
