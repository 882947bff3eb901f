// Cast between float32, float16, bfloat16, int32, int64, bool and uint8, with the reference's rules
// (ops/elementwise.h convert_value): float -> integer truncates toward zero, NaN gives 0
// and out-of-range values saturate; integer -> integer wraps; x -> bool is x != 0.
//
// A float target is the activation dtype on the device (fp16 engines keep every float
// activation as float16), so float -> float is a copy: layout-agnostic and in place.
// A cast to float16 or bfloat16 in an engine with float32 activations still rounds to the
// narrow type's precision, as the model asks. Everything else runs on plain data.
#include <cuda_fp16.h>

#include <limits>
#include <memory>
#include <string>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/kernels/elementwise.cuh"
#include "ops/cast.h"

namespace kiln {

namespace {

using cuda::load_acc;
using cuda::store_as;

template <class T>
inline constexpr bool kIsFloat =
    std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

template <class To, class From>
struct CastFn {
  __device__ To operator()(From v) const {
    if constexpr (std::is_same_v<To, bool>) {
      return load_acc(v) != 0;
    } else if constexpr (std::is_same_v<From, bool>) {
      return store_as<To>(v ? 1 : 0);
    } else if constexpr (!kIsFloat<To> && kIsFloat<From>) {
      const double d = static_cast<double>(load_acc(v));
      if (isnan(d)) return To(0);
      if (d >= static_cast<double>(std::numeric_limits<To>::max()))
        return std::numeric_limits<To>::max();
      if (d <= static_cast<double>(std::numeric_limits<To>::lowest()))
        return std::numeric_limits<To>::lowest();
      return static_cast<To>(d);
    } else if constexpr (std::is_same_v<To, __half> || std::is_same_v<To, __nv_bfloat16>) {
      return store_as<To>(static_cast<float>(load_acc(v)));
    } else {
      return static_cast<To>(load_acc(v));
    }
  }
};

// A cast to float16 or bfloat16 (Narrow) whose output the device keeps as float32: rounded
// as Narrow would be.
template <class Narrow, class From>
struct ThroughNarrowFn {
  __device__ float operator()(From v) const {
    return static_cast<float>(load_acc(CastFn<Narrow, From>{}(v)));
  }
};

bool supported(DataType dt) {
  switch (dt) {
    case DataType::kFloat32:
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kBool:
    case DataType::kUInt8: return true;
    default: return false;
  }
}

// Calls f(T{}) with the device element type of dt (one of supported()).
template <class F>
Status dispatch(DataType dt, F&& f) {
  switch (dt) {
    case DataType::kFloat32: return f(float{});
    case DataType::kFloat16: return f(__half{});
    case DataType::kBFloat16: return f(__nv_bfloat16{});
    case DataType::kInt32: return f(int32_t{});
    case DataType::kInt64: return f(int64_t{});
    case DataType::kBool: return f(bool{});
    case DataType::kUInt8: return f(uint8_t{});
    default: return unsupported(std::string("Cast of ") + dtype_name(dt));
  }
}

class CastKernel final : public CudaKernel {
 public:
  CastKernel(DataType from, DataType to)
      : float_copy_(is_device_float(from) && is_device_float(to)), to_(to) {}

  Layout input_layout(int i, Layout offered) const override {
    return float_copy_ ? offered : Layout::kPlain;
  }
  int inplace_input() const override { return float_copy_ ? 0 : -1; }
  std::string tactic() const override { return float_copy_ ? "kiln copy" : "kiln cast"; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override {
    if (in.empty() || !in[0].present()) return invalid_argument("input 0 is missing");
    from_ = in[0].dtype;
    out_dtype_ = is_device_float(to_) ? ctx.act_dtype() : to_;
    if (!supported(from_)) return unsupported(std::string("Cast from ") + dtype_name(from_));
    if (float_copy_ && from_ != out_dtype_)
      return invalid_argument(std::string("float input in ") + dtype_name(from_) + ", expected " +
                              dtype_name(out_dtype_));
    out[0] =
        TensorDesc{out_dtype_, in[0].shape, nullptr, float_copy_ ? in[0].layout : Layout::kPlain};
    return Status::ok();
  }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    const TensorRef& x = *in[0];
    TensorRef& y = *out[0];
    const int64_t n = x.desc.numel();
    if ((to_ == DataType::kFloat16 || to_ == DataType::kBFloat16) &&
        out_dtype_ == DataType::kFloat32) {
      return dispatch(from_, [&](auto from_tag) -> Status {
        using From = decltype(from_tag);
        return dispatch(to_, [&](auto narrow_tag) -> Status {
          using Narrow = decltype(narrow_tag);
          if constexpr (std::is_same_v<Narrow, __half> || std::is_same_v<Narrow, __nv_bfloat16>)
            return cuda::launch_map(static_cast<const From*>(x.data), static_cast<float*>(y.data),
                                    n, ThroughNarrowFn<Narrow, From>{}, run.stream,
                                    "cast through a narrow float");
          return internal_error("cast through a narrow float");
        });
      });
    }
    if (from_ == out_dtype_) {
      if (x.data != y.data && n > 0)
        KILN_CUDA(
            cudaMemcpyAsync(y.data, x.data, x.desc.nbytes(), cudaMemcpyDeviceToDevice, run.stream));
      return Status::ok();
    }
    return dispatch(from_, [&](auto from_tag) -> Status {
      using From = decltype(from_tag);
      return dispatch(out_dtype_, [&](auto to_tag) -> Status {
        using To = decltype(to_tag);
        return cuda::launch_map(static_cast<const From*>(x.data), static_cast<To*>(y.data), n,
                                CastFn<To, From>{}, run.stream, "cast");
      });
    });
  }

 private:
  bool float_copy_;
  DataType to_;
  DataType from_ = DataType::kUndefined;
  DataType out_dtype_ = DataType::kUndefined;
};

Result<std::unique_ptr<CudaKernel>> make_cast(const Node& node, Precision) {
  if (!node.input(0)) return invalid_argument("input 0 is missing");
  if (!node.attrs.has("to")) return invalid_argument("missing attribute 'to'");
  const DataType from = node.inputs[0]->dtype;
  const DataType to = cast_attrs(node).to;
  if (!supported(from) || !supported(to))
    return unsupported(std::string("Cast from ") + dtype_name(from) + " to " + dtype_name(to) +
                       " (float32/float16/int32/int64/bool/uint8 only)");
  return std::unique_ptr<CudaKernel>(std::make_unique<CastKernel>(from, to));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(Cast, make_cast);

}  // namespace kiln
