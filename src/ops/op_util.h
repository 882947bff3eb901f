// Helpers shared by the reference kernels and shape rules: input checks, axis handling,
// broadcasting, and dispatch from a runtime DataType to a C++ element type.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/half.h"
#include "ops/op_registry.h"

namespace kiln {

// Requires at least `min` present inputs at the front (ONNX: required inputs come first).
Status check_input_count(const std::vector<TensorDesc>& in, size_t min, size_t max);

// Every present input has input 0's dtype ("input 2: expected float32, got float16").
Status check_same_dtypes(const std::vector<TensorDesc>& in);

// Maps a possibly negative axis into [0, rank); error names the attribute.
Result<int64_t> normalize_axis(int64_t axis, int64_t rank, const char* what = "axis");

// Row-major strides of `shape` (in elements).
std::vector<int64_t> strides_of(const Shape& shape);

// Numpy-style multidirectional broadcast of any number of shapes.
Result<Shape> broadcast_shapes(const std::vector<Shape>& shapes);

// Strides to read a tensor of shape `from` as if broadcast to `to` (0 on broadcast dims).
// `from` must be broadcastable to `to`.
std::vector<int64_t> broadcast_strides(const Shape& from, const Shape& to);

// Calls f(index) for every multi-index of `shape` in row-major order, keeping a flat offset
// per operand: f(out_index, offsets) where offsets[k] advances by strides[k].
// Kept simple on purpose: reference kernels favour clarity over speed.
template <class F>
void for_each_broadcast(const Shape& shape, const std::vector<std::vector<int64_t>>& strides,
                        F&& f) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t n = shape_numel(shape);
  std::vector<int64_t> idx(rank, 0);
  std::vector<int64_t> off(strides.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, off);
    for (int64_t d = rank - 1; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < strides.size(); ++k) off[k] += strides[k][d];
      if (idx[d] < shape[d]) break;
      for (size_t k = 0; k < strides.size(); ++k) off[k] -= strides[k][d] * shape[d];
      idx[d] = 0;
    }
  }
}

// Calls f(T{}) with the C++ type of `dt` among the numeric types (floats incl. Half and
// BFloat16, all integer widths, bool: one byte, 0 or 1). Returns unsupported for strings/undefined.
template <class F>
Status dispatch_numeric(DataType dt, F&& f) {
  switch (dt) {
    case DataType::kFloat32: return f(float{});
    case DataType::kFloat64: return f(double{});
    case DataType::kFloat16: return f(Half{});
    case DataType::kBFloat16: return f(BFloat16{});
    case DataType::kInt8: return f(int8_t{});
    case DataType::kUInt8: return f(uint8_t{});
    case DataType::kInt16: return f(int16_t{});
    case DataType::kUInt16: return f(uint16_t{});
    case DataType::kInt32: return f(int32_t{});
    case DataType::kUInt32: return f(uint32_t{});
    case DataType::kInt64: return f(int64_t{});
    case DataType::kUInt64: return f(uint64_t{});
    case DataType::kBool: return f(bool{});
    default: return unsupported(std::string("element type ") + dtype_name(dt));
  }
}

// Same, restricted to floating types (Half/BFloat16/float/double).
template <class F>
Status dispatch_float(DataType dt, F&& f) {
  switch (dt) {
    case DataType::kFloat32: return f(float{});
    case DataType::kFloat64: return f(double{});
    case DataType::kFloat16: return f(Half{});
    case DataType::kBFloat16: return f(BFloat16{});
    default:
      return unsupported(std::string("element type ") + dtype_name(dt) +
                         " (this op takes float types)");
  }
}

// The DataType of a C++ element type (inverse of dispatch).
template <class T>
constexpr DataType dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return DataType::kFloat32;
  else if constexpr (std::is_same_v<T, double>)
    return DataType::kFloat64;
  else if constexpr (std::is_same_v<T, Half>)
    return DataType::kFloat16;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return DataType::kBFloat16;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DataType::kInt8;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DataType::kUInt8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DataType::kInt16;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return DataType::kUInt16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DataType::kInt32;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return DataType::kUInt32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DataType::kInt64;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return DataType::kUInt64;
  else if constexpr (std::is_same_v<T, bool>)
    return DataType::kBool;
  else
    return DataType::kUndefined;
}

// Reads a shape-like input (int64 tensor) whose value must be known.
Result<std::vector<int64_t>> known_int64s(const TensorDesc& d, const char* what);

}  // namespace kiln
