// A oneDNN inner product with a node's epilogue, shared by the Gemm and MatMul kernels:
// Y[M, N] = X[M, K] · W + bias[N], then the residual (a sum post-op) and the activation (an
// eltwise post-op). W is a constant, packed once per prepare into oneDNN's preferred layout.
// In bf16, X and W are read as bfloat16 (X rounded by a reorder each run) and Y is float32;
// in int8 (the epilogue's input_scale and weight_scales) as 8-bit codes, Y float32.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "backends/cpu/dnnl_common.h"

namespace kiln::dnnl_cpu {

class InnerProduct {
 public:
  // Builds the primitive for [m, k] × [k, n]; `w` holds the weights as [N, K] (`w_nk`, Gemm with
  // transB) or [K, N]. False (not an error) when oneDNN cannot express the epilogue. May throw
  // dnnl::error, which DnnlKernel::prepare turns into the reference fallback.
  bool prepare(int64_t m, int64_t k, int64_t n, const float* w, bool w_nk, bool bias,
               const Epilogue& e, bool bf16);
  // y = x·W (+ bias) (+ residual), activated; `residual` may be y itself (in place) or nullptr.
  void run(const float* x, const float* bias, const float* residual, float* y, int64_t y_numel);
  std::string impl_info() const { return impl_info_of(prim_); }

 private:
  dnnl::inner_product_forward::primitive_desc pd_;
  dnnl::inner_product_forward prim_;
  dnnl::stream stream_;
  dnnl::memory weights_;
  dnnl::memory src_q_;  // bf16 or int8: X rounded or quantized, else empty
  dnnl::reorder src_reorder_;
  std::vector<float> out_scales_;   // int8: s · s_w[n], else empty
  std::vector<float> bias_scaled_;  // int8: the bias divided by them
};

// The Gemm and MatMul kernels' common part: their try_prepare prepares `ip_`; running it on
// input 0, the bias input and the epilogue's residual, and naming it, are shared.
class InnerProductKernel : public DnnlKernel {
 public:
  using DnnlKernel::DnnlKernel;

 protected:
  // The input holding the bias ([N] or [1, N]), or -1.
  virtual int bias_input() const = 0;
  std::string impl_info() const override {
    return (node_.epilogue.int8() ? "int8 " : "") + ip_.impl_info();
  }
  // Whether the node computes in bf16 (its precision, from the backend's options).
  bool bf16() const { return shared_.precision_of(node_) == Precision::kBf16; }
  void run(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out) override;

  InnerProduct ip_;
};

}  // namespace kiln::dnnl_cpu
