// A oneDNN inner product with a node's epilogue, shared by the Gemm and MatMul kernels:
// Y[M, N] = X[M, K] · W + bias[N], then the residual (a sum post-op) and the activation (an
// eltwise post-op). W is a constant, packed once per prepare into oneDNN's preferred layout.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "backends/cpu/dnnl_common.h"

namespace kiln::dnnl_cpu {

class InnerProduct {
 public:
  // Builds the primitive for [m, k] × [k, n]; `w` holds the weights as [N, K] (`w_nk`, Gemm with
  // transB) or [K, N]. False (not an error) when oneDNN cannot express the epilogue. May throw
  // dnnl::error, which DnnlKernel::prepare turns into the reference fallback.
  bool prepare(int64_t m, int64_t k, int64_t n, const float* w, bool w_nk, bool bias,
               const Epilogue& e);
  // y = x·W (+ bias) (+ residual), activated; `residual` may be y itself (in place) or nullptr.
  void run(const float* x, const float* bias, const float* residual, float* y, int64_t y_numel);
  std::string impl_info() const { return impl_info_of(prim_); }

 private:
  dnnl::inner_product_forward::primitive_desc pd_;
  dnnl::inner_product_forward prim_;
  dnnl::stream stream_;
  dnnl::memory weights_;
};

}  // namespace kiln::dnnl_cpu
