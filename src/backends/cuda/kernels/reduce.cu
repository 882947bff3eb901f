// ReduceMean, ReduceMax, ReduceSum and ReduceL2 on plain float activations, axes as ops/reduce.h
// resolves them (attribute for Mean/Max, constant input 1 for Sum, keepdims,
// noop_with_empty_axes). Accumulates in float; the max lets a NaN through; an empty
// reduction gives 0 (sum), NaN (mean) or -inf (max), as the reference.
//
// prepare drops size-1 axes and merges neighbouring axes that are both kept or both reduced,
// leaving at most a handful of alternating groups. When the innermost group is reduced, its
// elements are contiguous: one warp per output walks them. Otherwise one thread per output,
// neighbouring threads reading neighbouring elements.

#include <algorithm>
#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/structured.cuh"
#include "ops/reduce.h"

namespace kiln {
namespace {

constexpr int kMaxDims = 8;

struct ReduceGeom {
  int kept_rank = 0, red_rank = 0;
  int64_t kept_dims[kMaxDims] = {}, kept_strides[kMaxDims] = {};  // input strides
  int64_t red_dims[kMaxDims] = {}, red_strides[kMaxDims] = {};
  int64_t outputs = 1, count = 1;  // output elements, elements reduced into each
};

__device__ __forceinline__ int64_t decode(int64_t i, int rank, const int64_t* dims,
                                          const int64_t* strides) {
  int64_t off = 0;
  for (int d = rank - 1; d >= 0; --d) {
    off += (i % dims[d]) * strides[d];
    i /= dims[d];
  }
  return off;
}

template <ReduceKind kKind>
__device__ __forceinline__ float reduce_combine(float a, float b) {
  return kKind == ReduceKind::kMax ? cuda::nan_max(a, b) : a + b;
}

// What one element adds: itself, or its square for L2.
template <ReduceKind kKind>
__device__ __forceinline__ float reduce_elem(float v) {
  return kKind == ReduceKind::kL2 ? v * v : v;
}

template <ReduceKind kKind>
__device__ __forceinline__ float reduce_finish(float acc, int64_t count) {
  if (kKind == ReduceKind::kL2) return sqrtf(acc);
  return kKind == ReduceKind::kMean ? acc / static_cast<float>(count) : acc;
}

template <class T, ReduceKind kKind>
__global__ void reduce_thread_kernel(const T* __restrict__ x, T* __restrict__ y, ReduceGeom g) {
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < g.outputs;
       o += int64_t{gridDim.x} * blockDim.x) {
    const T* base = x + decode(o, g.kept_rank, g.kept_dims, g.kept_strides);
    float acc = kKind == ReduceKind::kMax ? -INFINITY : 0.f;
    for (int64_t r = 0; r < g.count; ++r)
      acc = reduce_combine<kKind>(
          acc, reduce_elem<kKind>(
                   cuda::to_float(base[decode(r, g.red_rank, g.red_dims, g.red_strides)])));
    y[o] = cuda::from_float<T>(reduce_finish<kKind>(acc, g.count));
  }
}

template <class T, ReduceKind kKind>
__global__ void reduce_warp_kernel(const T* __restrict__ x, T* __restrict__ y, ReduceGeom g) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / 32);
  for (int64_t o = blockIdx.x * int64_t{blockDim.x / 32} + threadIdx.x / 32; o < g.outputs;
       o += warps) {
    const T* base = x + decode(o, g.kept_rank, g.kept_dims, g.kept_strides);
    float acc = kKind == ReduceKind::kMax ? -INFINITY : 0.f;
    for (int64_t r = lane; r < g.count; r += 32)
      acc = reduce_combine<kKind>(
          acc, reduce_elem<kKind>(
                   cuda::to_float(base[decode(r, g.red_rank, g.red_dims, g.red_strides)])));
#pragma unroll
    for (int off = 16; off > 0; off /= 2)
      acc = reduce_combine<kKind>(acc, __shfl_xor_sync(0xffffffffu, acc, off));
    if (lane == 0) y[o] = cuda::from_float<T>(reduce_finish<kKind>(acc, g.count));
  }
}

class ReduceKernel final : public CudaKernel {
 public:
  // Keeps a copy of the node's name, kind and attributes (what reduce.h's spec reads), not
  // the node itself, which may not outlive the kernel.
  ReduceKernel(const Node& node, ReduceKind kind) : kind_(kind) {
    node_.name = node.name;
    node_.op = node.op;
    node_.attrs = node.attrs;
  }

  bool reads_on_host(int i) const override { return i == 1; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext&) override {
    const TensorDesc& x = in[0];
    KILN_RETURN_IF_ERROR(cuda::check_act_dtype(x.dtype, "input 0"));
    std::vector<TensorDesc> descs(in.size());
    for (size_t i = 0; i < in.size(); ++i) descs[i] = cuda::desc_of(in[i]);
    Result<ReduceSpec> spec = kind_ == ReduceKind::kSum ? reduce_spec_from_input(node_, descs)
                                                        : reduce_spec_from_attr(node_, x.shape);
    KILN_RETURN_IF_ERROR(spec.status());
    // Groups of neighbouring axes of equal kind (size-1 axes dropped), outermost first.
    std::vector<std::pair<bool, int64_t>> groups;  // (reduced, size)
    for (size_t i = 0; i < x.shape.size(); ++i) {
      const bool red = spec->reduced[i];
      const int64_t d = x.shape[i];
      if (d == 1) continue;
      if (!groups.empty() && groups.back().first == red)
        groups.back().second *= d;
      else
        groups.emplace_back(red, d);
    }
    geom_ = ReduceGeom{};
    int64_t stride = 1;
    for (auto it = groups.rbegin(); it != groups.rend(); ++it) {
      const auto [red, d] = *it;
      int& rank = red ? geom_.red_rank : geom_.kept_rank;
      if (rank == kMaxDims) return unsupported("Reduce over too many axis groups");
      (red ? geom_.red_dims : geom_.kept_dims)[rank] = d;
      (red ? geom_.red_strides : geom_.kept_strides)[rank] = stride;
      ++rank;
      stride *= d;
    }
    // Groups were filled innermost first; decode() wants outermost first.
    std::reverse(geom_.kept_dims, geom_.kept_dims + geom_.kept_rank);
    std::reverse(geom_.kept_strides, geom_.kept_strides + geom_.kept_rank);
    std::reverse(geom_.red_dims, geom_.red_dims + geom_.red_rank);
    std::reverse(geom_.red_strides, geom_.red_strides + geom_.red_rank);
    geom_.outputs = shape_numel(spec->out_shape);
    geom_.count = 1;
    for (size_t i = 0; i < x.shape.size(); ++i)
      if (spec->reduced[i]) geom_.count *= x.shape[i];
    inner_reduced_ = !groups.empty() && groups.back().first;
    dtype_ = x.dtype;
    out[0] = TensorDesc{x.dtype, spec->out_shape};
    return Status::ok();
  }

  std::string tactic() const override {
    return inner_reduced_ ? "kiln reduce warp-per-output" : "kiln reduce thread-per-output";
  }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    if (geom_.outputs == 0) return Status::ok();
    return cuda::dispatch_act(dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      switch (kind_) {
        case ReduceKind::kSum: return launch<T, ReduceKind::kSum>(in, out, run);
        case ReduceKind::kMean: return launch<T, ReduceKind::kMean>(in, out, run);
        case ReduceKind::kMax: return launch<T, ReduceKind::kMax>(in, out, run);
        case ReduceKind::kL2: return launch<T, ReduceKind::kL2>(in, out, run);
      }
      return internal_error("unknown reduction");
    });
  }

 private:
  template <class T, ReduceKind kKind>
  Status launch(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                const CudaRunContext& run) const {
    constexpr int kThreads = 256;
    const T* x = static_cast<const T*>(in[0]->data);
    T* y = static_cast<T*>(out[0]->data);
    if (inner_reduced_ && geom_.count >= 32) {
      reduce_warp_kernel<T, kKind>
          <<<cuda::grid_blocks(geom_.outputs * 32, kThreads), kThreads, 0, run.stream>>>(x, y,
                                                                                         geom_);
      KILN_CUDA_LAUNCHED("reduce_warp_kernel");
    } else {
      reduce_thread_kernel<T, kKind>
          <<<cuda::grid_blocks(geom_.outputs, kThreads), kThreads, 0, run.stream>>>(x, y, geom_);
      KILN_CUDA_LAUNCHED("reduce_thread_kernel");
    }
    return Status::ok();
  }

  Node node_;
  ReduceKind kind_;
  ReduceGeom geom_;
  bool inner_reduced_ = false;
  DataType dtype_ = DataType::kUndefined;
};

Result<std::unique_ptr<CudaKernel>> make_reduce(const Node& node, ReduceKind kind) {
  const Value* x = node.input(0);
  if (!x) return invalid_argument("input 0 is missing");
  if (!dtype_is_float(x->dtype))
    return unsupported(std::string("Reduce of ") + dtype_name(x->dtype) +
                       " (the CUDA kernel reduces float tensors)");
  if (kind == ReduceKind::kSum && node.input(1) && !node.input(1)->is_constant())
    return unsupported("axes (input 1) is not a constant");
  return std::unique_ptr<CudaKernel>(new ReduceKernel(node, kind));
}

Result<std::unique_ptr<CudaKernel>> make_reduce_mean(const Node& n, Precision) {
  return make_reduce(n, ReduceKind::kMean);
}
Result<std::unique_ptr<CudaKernel>> make_reduce_max(const Node& n, Precision) {
  return make_reduce(n, ReduceKind::kMax);
}
Result<std::unique_ptr<CudaKernel>> make_reduce_sum(const Node& n, Precision) {
  return make_reduce(n, ReduceKind::kSum);
}
Result<std::unique_ptr<CudaKernel>> make_reduce_l2(const Node& n, Precision) {
  return make_reduce(n, ReduceKind::kL2);
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(ReduceMean, make_reduce_mean);
KILN_REGISTER_CUDA_KERNEL(ReduceMax, make_reduce_max);
KILN_REGISTER_CUDA_KERNEL(ReduceSum, make_reduce_sum);
KILN_REGISTER_CUDA_KERNEL(ReduceL2, make_reduce_l2);

}  // namespace kiln
