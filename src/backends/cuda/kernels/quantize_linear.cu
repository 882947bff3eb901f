// QuantizeLinear and DequantizeLinear, per tensor (one scale and zero point), int8, uint8 and
// float8 e4m3: the reference's arithmetic (ops/quantize_linear.h) element by element, so any
// layout runs as it is offered (the element order does not matter) and the output keeps it.
//   quantize:   q = saturate(round_half_even(x / scale) + zero_point); NaN gives the zero point
//               e4m3: q = e4m3(x / scale), to nearest even, saturating at ±448, NaN to NaN
//   dequantize: y = float(q − zero_point) · scale, stored in the activation dtype
// The float side is the activation dtype on the device (an fp16 engine quantizes its float16
// values), and the scale is rounded to that dtype first, as the device holds every float
// input. The scale and zero point are read on the host at prepare; per-axis scales, scales not
// known at build and int32 dequantization are declined (the reference runs them).
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <memory>
#include <string>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/kernels/elementwise.cuh"
#include "backends/cuda/kernels/fp8.h"
#include "backends/cuda/kernels/structured.cuh"
#include "core/half.h"
#include "ops/quantize_linear.h"

namespace kiln {

namespace {

using cuda::load_acc;
using cuda::store_as;

template <class Q>
struct QuantizeFn {
  float scale;
  int zero_point;
  template <class T>
  __device__ Q operator()(T v) const {
    const float r = rintf(__fdiv_rn(static_cast<float>(load_acc(v)), scale));  // half to even
    constexpr float lo = std::is_same_v<Q, int8_t> ? -128.f : 0.f;
    constexpr float hi = std::is_same_v<Q, int8_t> ? 127.f : 255.f;
    if (isnan(r)) return static_cast<Q>(zero_point);
    return static_cast<Q>(fminf(fmaxf(r + static_cast<float>(zero_point), lo), hi));
  }
};

// The e4m3 code of x / scale (bits in a uint8_t, as kiln stores float8).
struct QuantizeFp8Fn {
  float scale;
  template <class T>
  __device__ uint8_t operator()(T v) const {
    const float r = __fdiv_rn(static_cast<float>(load_acc(v)), scale);
    return static_cast<uint8_t>(__nv_cvt_float_to_fp8(r, __NV_SATFINITE, __NV_E4M3));
  }
};

template <class T>
struct DequantizeFp8Fn {
  float scale;
  __device__ T operator()(uint8_t q) const {
    const __half h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(q), __NV_E4M3);
    return store_as<T>(__fmul_rn(__half2float(h), scale));
  }
};

template <class T>
struct DequantizeFn {
  float scale;
  int zero_point;
  template <class Q>
  __device__ T operator()(Q q) const {
    return store_as<T>(__fmul_rn(static_cast<float>(static_cast<int>(q) - zero_point), scale));
  }
};

// A float32 value as the device holds a float of `dt`.
float stored_as(float v, DataType dt) {
  if (dt == DataType::kFloat16) return half_bits_to_float(float_to_half_bits(v));
  if (dt == DataType::kBFloat16) return bf16_bits_to_float(float_to_bf16_bits(v));
  return v;
}

// The scale (input 1, as the device holds a float of `act`) and zero point (input 2, 0 where
// omitted) of a per-tensor node, from the values known at build; unsupported otherwise.
Status read_scale(const std::vector<TensorDesc>& in, DataType act, float* scale, int* zero_point) {
  if (in.size() < 2 || !in[1].present() || !in[1].value)
    return unsupported("the scale (input 1) is not known at build");
  if (in[1].value->numel() != 1) return unsupported("per-axis scales (the reference runs them)");
  *scale = stored_as(floats_of(*in[1].value)[0], act);
  *zero_point = 0;
  if (in.size() > 2 && in[2].present()) {
    if (!in[2].value) return unsupported("the zero point (input 2) is not known at build");
    if (in[2].value->numel() != 1) return unsupported("per-axis zero points");
    switch (in[2].value->dtype()) {
      case DataType::kInt8: *zero_point = in[2].value->data<int8_t>()[0]; break;
      case DataType::kUInt8: *zero_point = in[2].value->data<uint8_t>()[0]; break;
      case DataType::kFloat8E4M3:  // ±0 only (checked by the op)
        if ((in[2].value->data<uint8_t>()[0] & 0x7f) != 0)
          return unsupported("a nonzero float8 zero point");
        break;
      default:
        return unsupported("a zero point of " + std::string(dtype_name(in[2].value->dtype())));
    }
  }
  return Status::ok();
}

class QuantizeLinearKernel final : public CudaKernel {
 public:
  explicit QuantizeLinearKernel(DataType q) : q_(q) {}
  Layout input_layout(int, Layout offered) const override { return offered; }
  bool reads_on_host(int i) const override { return i >= 1; }
  std::string tactic() const override { return "kiln quantize_linear"; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override {
    if (in.empty() || !in[0].present()) return invalid_argument("input 0 is missing");
    KILN_RETURN_IF_ERROR(cuda::check_act_dtype(in[0].dtype, "x (input 0)"));
    KILN_RETURN_IF_ERROR(read_scale(in, in[0].dtype, &scale_, &zero_point_));
    if (in.size() > 2 && in[2].present() && in[2].dtype != q_)
      return invalid_argument("the zero point's dtype is not the output's");
    x_dtype_ = in[0].dtype;
    out[0] = TensorDesc{q_, in[0].shape, nullptr, in[0].layout};
    return Status::ok();
  }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    const int64_t n = in[0]->desc.numel();
    return cuda::dispatch_act(x_dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      const T* x = static_cast<const T*>(in[0]->data);
      if (q_ == DataType::kFloat8E4M3)
        return cuda::launch_map(x, out[0]->as<uint8_t>(), n, QuantizeFp8Fn{scale_}, run.stream,
                                "quantize");
      if (q_ == DataType::kInt8)
        return cuda::launch_map(x, out[0]->as<int8_t>(), n, QuantizeFn<int8_t>{scale_, zero_point_},
                                run.stream, "quantize");
      return cuda::launch_map(x, out[0]->as<uint8_t>(), n, QuantizeFn<uint8_t>{scale_, zero_point_},
                              run.stream, "quantize");
    });
  }

 private:
  DataType q_;
  DataType x_dtype_ = DataType::kUndefined;
  float scale_ = 1;
  int zero_point_ = 0;
};

class DequantizeLinearKernel final : public CudaKernel {
 public:
  Layout input_layout(int, Layout offered) const override { return offered; }
  bool reads_on_host(int i) const override { return i >= 1; }
  std::string tactic() const override { return "kiln dequantize_linear"; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override {
    if (in.empty() || !in[0].present()) return invalid_argument("input 0 is missing");
    q_ = in[0].dtype;
    if (q_ != DataType::kInt8 && q_ != DataType::kUInt8 && q_ != DataType::kFloat8E4M3)
      return unsupported(std::string("dequantizing ") + dtype_name(q_));
    y_dtype_ = ctx.act_dtype();
    KILN_RETURN_IF_ERROR(read_scale(in, y_dtype_, &scale_, &zero_point_));
    out[0] = TensorDesc{y_dtype_, in[0].shape, nullptr, in[0].layout};
    return Status::ok();
  }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    const int64_t n = in[0]->desc.numel();
    return cuda::dispatch_act(y_dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      T* y = static_cast<T*>(out[0]->data);
      const DequantizeFn<T> f{scale_, zero_point_};
      if (q_ == DataType::kFloat8E4M3)
        return cuda::launch_map(in[0]->as<uint8_t>(), y, n, DequantizeFp8Fn<T>{scale_}, run.stream,
                                "dequantize");
      if (q_ == DataType::kInt8)
        return cuda::launch_map(in[0]->as<int8_t>(), y, n, f, run.stream, "dequantize");
      return cuda::launch_map(in[0]->as<uint8_t>(), y, n, f, run.stream, "dequantize");
    });
  }

 private:
  DataType q_ = DataType::kUndefined;
  DataType y_dtype_ = DataType::kUndefined;
  float scale_ = 1;
  int zero_point_ = 0;
};

Result<std::unique_ptr<CudaKernel>> make_quantize_linear(const Node& node, Precision) {
  const Value* zp = node.input(2);
  const DataType q = zp ? zp->dtype : DataType::kUInt8;  // ONNX: uint8 without a zero point
  if (q != DataType::kInt8 && q != DataType::kUInt8 && q != DataType::kFloat8E4M3)
    return unsupported(std::string("quantizing to ") + dtype_name(q));
  return std::unique_ptr<CudaKernel>(std::make_unique<QuantizeLinearKernel>(q));
}

Result<std::unique_ptr<CudaKernel>> make_dequantize_linear(const Node&, Precision) {
  return std::unique_ptr<CudaKernel>(std::make_unique<DequantizeLinearKernel>());
}

}  // namespace

Status launch_dequantize_fp8(const uint8_t* codes, void* y, DataType y_dtype, int64_t n,
                             float scale, cudaStream_t stream) {
  return cuda::dispatch_act(y_dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    return cuda::launch_map(codes, static_cast<T*>(y), n, DequantizeFp8Fn<T>{scale}, stream,
                            "dequantize fp8");
  });
}

KILN_REGISTER_CUDA_KERNEL(QuantizeLinear, make_quantize_linear);
KILN_REGISTER_CUDA_KERNEL(DequantizeLinear, make_dequantize_linear);

}  // namespace kiln
