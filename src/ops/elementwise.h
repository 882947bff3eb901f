// Shared pieces of the elementwise ops (activations, broadcasting arithmetic, comparisons,
// Cast): dtype checks, shape rules, the element loops and value conversion. Each op file
// keeps only its formula and its registration; the loops live here once.
//
// Element functions are generic lambdas called on ComputeT<T> values: Half and BFloat16
// compute in float, every other type in itself. Results are converted back to the output
// element type.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "ops/op_util.h"

namespace kiln {

template <class T>
using ComputeT =
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <class T>
inline constexpr bool kIsFloatType =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T>
inline constexpr bool kIsIntType = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Dtype sets the ops accept (ONNX type constraints).
inline constexpr DataType kFloatTypes[] = {DataType::kFloat32, DataType::kFloat64,
                                           DataType::kFloat16, DataType::kBFloat16};
// Every numeric type except bool.
inline constexpr DataType kArithmeticTypes[] = {
    DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
    DataType::kInt8,    DataType::kUInt8,   DataType::kInt16,   DataType::kUInt16,
    DataType::kInt32,   DataType::kUInt32,  DataType::kInt64,   DataType::kUInt64};
// Every type dispatch_numeric handles (arithmetic types and bool).
inline constexpr DataType kNumericTypes[] = {
    DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
    DataType::kInt8,    DataType::kUInt8,   DataType::kInt16,   DataType::kUInt16,
    DataType::kInt32,   DataType::kUInt32,  DataType::kInt64,   DataType::kUInt64,
    DataType::kBool};

// "input 1: expected one of float32, float64, float16, bfloat16; got int64".
Status expect_dtype(const std::vector<TensorDesc>& in, size_t index,
                    std::span<const DataType> allowed);
// "input 1: expected float32 (the dtype of input 0), got int64".
Status expect_same_dtype(const std::vector<TensorDesc>& in, size_t index, size_t like);

// Shape rule of the unary float ops (Sigmoid, Tanh, Exp...): one float input; the output
// has its dtype and shape. Usable directly as an OpDef's infer.
Status infer_unary_float(const Node& node, const std::vector<TensorDesc>& in,
                         std::vector<TensorDesc>& out);

// Shape rule of the unary ops that take signed numbers (Neg, Abs...): one input whose dtype is a
// float or a signed integer; the output has its dtype and shape.
Status infer_unary_signed(const Node& node, const std::vector<TensorDesc>& in,
                          std::vector<TensorDesc>& out);

// Shape rule of binary ops with numpy multidirectional broadcasting: two inputs whose
// dtypes are in `allowed`, equal unless `same_dtype` is false (Pow); the output has
// `out_dtype`, or input 0's dtype when that is kUndefined.
Status infer_binary_broadcast(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                              std::span<const DataType> allowed,
                              DataType out_dtype = DataType::kUndefined, bool same_dtype = true);

// Cast semantics for one value, shared by Cast and Pow:
//  - to bool: x != 0 (NaN is true);  from bool: 0 or 1;
//  - float to integer: truncation toward zero (numpy astype); NaN gives 0 and values
//    beyond the target's range saturate to its min/max, so no conversion is undefined;
//  - integer to integer: modulo 2^bits (numpy astype, C++20 conversion);
//  - to float16/bfloat16: through float, rounding to nearest even.
template <class To, class From>
To convert_value(From v) {
  using C = ComputeT<From>;
  if constexpr (std::is_same_v<To, bool>) {
    return static_cast<C>(v) != C(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return To(static_cast<ComputeT<To>>(v ? 1 : 0));
  } else if constexpr (kIsIntType<To> && kIsFloatType<From>) {
    const double d = static_cast<double>(static_cast<C>(v));
    if (std::isnan(d)) return To(0);
    if (d >= static_cast<double>(std::numeric_limits<To>::max()))
      return std::numeric_limits<To>::max();
    if (d <= static_cast<double>(std::numeric_limits<To>::lowest()))
      return std::numeric_limits<To>::lowest();
    return static_cast<To>(d);
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(static_cast<C>(v)));
  } else {
    return static_cast<To>(static_cast<C>(v));
  }
}

// Integer +, -, * wrap around modulo 2^bits, as numpy and ONNX Runtime do. Computing in
// uint64 keeps signed overflow (undefined behaviour in C++) out of the kernels; the
// conversion back is modular (C++20). Floats use the plain operator.
template <class C>
C wrapping_add(C a, C b) {
  if constexpr (kIsIntType<C>)
    return static_cast<C>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  else
    return a + b;
}
template <class C>
C wrapping_sub(C a, C b) {
  if constexpr (kIsIntType<C>)
    return static_cast<C>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  else
    return a - b;
}
template <class C>
C wrapping_mul(C a, C b) {
  if constexpr (kIsIntType<C>)
    return static_cast<C>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  else
    return a * b;
}

// y[i] = f(x[i]) for a tensor of element type T (x and y may be the same tensor).
template <class T, class F>
void map_unary(const Tensor& x, Tensor& y, F&& f) {
  const T* px = x.data<T>();
  T* py = y.data<T>();
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) py[i] = T(f(static_cast<ComputeT<T>>(px[i])));
}

// Runs f on every element of a float tensor: the body of the unary float ops.
template <class F>
Status run_unary_float(const Tensor& x, Tensor& y, F&& f) {
  return dispatch_float(x.dtype(), [&](auto tag) -> Status {
    map_unary<decltype(tag)>(x, y, f);
    return Status::ok();
  });
}

// Runs f on every element of a float or signed integer tensor (Neg, Abs).
template <class F>
Status run_unary_signed(const Tensor& x, Tensor& y, F&& f) {
  return dispatch_numeric(x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (kIsFloatType<T> || (kIsIntType<T> && std::is_signed_v<T>)) {
      map_unary<T>(x, y, f);
      return Status::ok();
    } else {
      return unsupported(std::string("dtype ") + dtype_name(x.dtype()));
    }
  });
}

// out[i] = f(a[ia], b[ib]) over the numpy broadcast of a and b (out has the broadcast
// shape); f gets ComputeT<TA> and ComputeT<TB> values.
template <class TA, class TB, class TO, class F>
void map_binary(const Tensor& a, const Tensor& b, Tensor& out, F&& f) {
  const TA* pa = a.data<TA>();
  const TB* pb = b.data<TB>();
  TO* po = out.data<TO>();
  auto apply = [&](int64_t i, int64_t ia, int64_t ib) {
    po[i] = TO(f(static_cast<ComputeT<TA>>(pa[ia]), static_cast<ComputeT<TB>>(pb[ib])));
  };
  if (a.shape() == out.shape() && b.shape() == out.shape()) {  // no broadcast: flat loop
    for (int64_t i = 0; i < out.numel(); ++i) apply(i, i, i);
    return;
  }
  const std::vector<std::vector<int64_t>> strides = {broadcast_strides(a.shape(), out.shape()),
                                                     broadcast_strides(b.shape(), out.shape())};
  for_each_broadcast(out.shape(), strides,
                     [&](int64_t i, const std::vector<int64_t>& off) { apply(i, off[0], off[1]); });
}

// The body of a binary op whose inputs and output share one arithmetic (non-bool) dtype.
template <class F>
Status run_binary_arithmetic(const Tensor& a, const Tensor& b, Tensor& out, F&& f) {
  return dispatch_numeric(a.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return unsupported("arithmetic on bool tensors");
    } else {
      map_binary<T, T, T>(a, b, out, f);
      return Status::ok();
    }
  });
}

}  // namespace kiln
