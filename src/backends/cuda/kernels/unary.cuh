// The unary elementwise ops' CudaKernel: y = f(x) for float32/float16/bfloat16 tensors, with f a
// functor computing in float (`__device__ float operator()(float) const`). The op files
// (activations.cu, unary_math.cu) hold only their functors, attribute reading and
// registration.
//
// Layout-agnostic (the order of elements does not matter to f) and in place capable.
#pragma once

#include <cuda_fp16.h>

#include <memory>
#include <string>
#include <utility>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/kernels/elementwise.cuh"

namespace kiln::cuda {

template <class T, class F>
struct ApplyUnary {
  F f;
  __device__ T operator()(T v) const { return store_as<T>(f(load_acc(v))); }
};

// Factory check shared by the float ops: input 0 is a float the device holds as float32,
// float16 or bfloat16 (float64 tensors stay on the CPU), and no fused epilogue.
inline Status check_float_input(const Node& node) {
  const Value* x = node.input(0);
  if (!x) return invalid_argument("input 0 is missing");
  if (!node.epilogue.empty()) return unsupported("a fused epilogue on an elementwise op");
  if (!is_device_float(x->dtype))
    return unsupported(std::string("input dtype ") + dtype_name(x->dtype) +
                       " (float32, float16 or bfloat16 only)");
  return Status::ok();
}

template <class F>
class UnaryKernel : public CudaKernel {
 public:
  UnaryKernel(const char* op, F f) : op_(op), f_(f) {}

  Layout input_layout(int i, Layout offered) const override { return offered; }
  // Extra inputs (Clip's min/max) are constants read at prepare.
  bool reads_on_host(int i) const override { return i > 0; }
  int inplace_input() const override { return 0; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override {
    if (in.empty() || !in[0].present()) return invalid_argument("input 0 is missing");
    if (!is_device_float(in[0].dtype))
      return unsupported(std::string(op_) + " on " + dtype_name(in[0].dtype));
    KILN_RETURN_IF_ERROR(configure(in));
    out[0] = TensorDesc{in[0].dtype, in[0].shape, nullptr, in[0].layout};
    return Status::ok();
  }

  std::string tactic() const override { return std::string("kiln ") + op_; }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    const TensorRef& x = *in[0];
    TensorRef& y = *out[0];
    return dispatch_float(x.desc.dtype, op_, [&](auto tag) -> Status {
      using T = decltype(tag);
      return launch_map(static_cast<const T*>(x.data), static_cast<T*>(y.data), x.desc.numel(),
                        ApplyUnary<T, F>{f_}, run.stream, op_);
    });
  }

 protected:
  // Reads constant inputs into f_ (Clip's bounds); in[0] is checked already.
  virtual Status configure(const std::vector<TensorDesc>& in) { return Status::ok(); }

  const char* op_;
  F f_;
};

// The factory of an op without attributes or extra inputs.
template <class F>
Result<std::unique_ptr<CudaKernel>> make_unary(const Node& node, const char* op, F f) {
  KILN_RETURN_IF_ERROR(check_float_input(node));
  if (node.inputs.size() != 1) return invalid_argument(std::string(op) + " takes one input");
  return std::unique_ptr<CudaKernel>(std::make_unique<UnaryKernel<F>>(op, f));
}

}  // namespace kiln::cuda
