// Softplus, Exp, Sqrt and Erf: unary float ops that are not activations of a fused epilogue.
// One family file; the kernel is unary.cuh's. The formulas are the reference kernels'.
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

}  // namespace

KILN_REGISTER_CUDA_KERNEL(Softplus, make_softplus);
KILN_REGISTER_CUDA_KERNEL(Exp, make_exp);
KILN_REGISTER_CUDA_KERNEL(Sqrt, make_sqrt);
KILN_REGISTER_CUDA_KERNEL(Erf, make_erf);

}  // namespace kiln
