// Softplus, Exp, Sqrt, Erf, Neg, Abs, Reciprocal, Log, Floor and Ceil: unary float ops that are not
// activations of a fused epilogue. One family file; the kernel is unary.cuh's. The formulas are the
// reference kernels'.
#include <memory>

#include "backends/cuda/kernels/unary.cuh"

namespace kiln {

namespace {

// ln(exp(x) + 1), written as max(x, 0) + log1p(exp(-|x|)) so exp never overflows.
struct SoftplusOp {
  __device__ float operator()(float x) const { return fmaxf(x, 0.f) + log1pf(expf(-fabsf(x))); }
};
struct ExpOp {
  __device__ float operator()(float x) const { return expf(x); }
};
struct SqrtOp {
  __device__ float operator()(float x) const { return sqrtf(x); }
};
struct ErfOp {
  __device__ float operator()(float x) const { return erff(x); }
};
struct NegOp {
  __device__ float operator()(float x) const { return -x; }
};
struct AbsOp {
  __device__ float operator()(float x) const { return fabsf(x); }
};
struct ReciprocalOp {
  __device__ float operator()(float x) const { return 1.f / x; }
};
struct LogOp {
  __device__ float operator()(float x) const { return logf(x); }
};
struct FloorOp {
  __device__ float operator()(float x) const { return floorf(x); }
};
struct CeilOp {
  __device__ float operator()(float x) const { return ceilf(x); }
};

Result<std::unique_ptr<CudaKernel>> make_softplus(const Node& node, Precision) {
  return cuda::make_unary(node, "Softplus", SoftplusOp{});
}
Result<std::unique_ptr<CudaKernel>> make_exp(const Node& node, Precision) {
  return cuda::make_unary(node, "Exp", ExpOp{});
}
Result<std::unique_ptr<CudaKernel>> make_sqrt(const Node& node, Precision) {
  return cuda::make_unary(node, "Sqrt", SqrtOp{});
}
Result<std::unique_ptr<CudaKernel>> make_erf(const Node& node, Precision) {
  return cuda::make_unary(node, "Erf", ErfOp{});
}

// Neg and Abs of integers (shape arithmetic) run on the CPU, where the planner places what
// no CUDA kernel takes.
Result<std::unique_ptr<CudaKernel>> make_neg(const Node& node, Precision) {
  return cuda::make_unary(node, "Neg", NegOp{});
}
Result<std::unique_ptr<CudaKernel>> make_abs(const Node& node, Precision) {
  return cuda::make_unary(node, "Abs", AbsOp{});
}
Result<std::unique_ptr<CudaKernel>> make_reciprocal(const Node& node, Precision) {
  return cuda::make_unary(node, "Reciprocal", ReciprocalOp{});
}
Result<std::unique_ptr<CudaKernel>> make_log(const Node& node, Precision) {
  return cuda::make_unary(node, "Log", LogOp{});
}
Result<std::unique_ptr<CudaKernel>> make_floor(const Node& node, Precision) {
  return cuda::make_unary(node, "Floor", FloorOp{});
}
Result<std::unique_ptr<CudaKernel>> make_ceil(const Node& node, Precision) {
  return cuda::make_unary(node, "Ceil", CeilOp{});
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(Softplus, make_softplus);
KILN_REGISTER_CUDA_KERNEL(Exp, make_exp);
KILN_REGISTER_CUDA_KERNEL(Sqrt, make_sqrt);
KILN_REGISTER_CUDA_KERNEL(Erf, make_erf);
KILN_REGISTER_CUDA_KERNEL(Neg, make_neg);
KILN_REGISTER_CUDA_KERNEL(Abs, make_abs);
KILN_REGISTER_CUDA_KERNEL(Reciprocal, make_reciprocal);
KILN_REGISTER_CUDA_KERNEL(Log, make_log);
KILN_REGISTER_CUDA_KERNEL(Floor, make_floor);
KILN_REGISTER_CUDA_KERNEL(Ceil, make_ceil);

}  // namespace kiln
