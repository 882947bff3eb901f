// QuantizeLinear and DequantizeLinear (ONNX opsets 10 and 13): the linear 8-bit mapping of
// explicitly quantized (Q/DQ) models.
//   quantize:    y = saturate(round_half_to_even(x / scale) + zero_point)
//   dequantize:  y = (x - zero_point) * scale
// `scale` (and `zero_point`, of the 8-bit dtype, default uint8 0) is a scalar for per-tensor
// quantization, or 1-D of length dim[axis] for per-axis quantization (opset 13, axis default
// 1); every reference kernel and backend reads them through QuantParams.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ops/op_registry.h"

namespace kiln {

struct QuantizeLinearAttrs {
  int64_t axis = 1;
};
inline QuantizeLinearAttrs quantize_linear_attrs(const Node& n) {
  QuantizeLinearAttrs a;
  a.axis = n.attrs.get_int("axis", a.axis);
  return a;
}

// The geometry of a (de)quantization: x viewed as [outer, channels, inner] around the axis
// (channels 1 for per-tensor).
struct QuantGeometry {
  int64_t outer = 1, channels = 1, inner = 1;
};

// Checks scale and zero point against x's shape (input 0) and the axis, and gives the
// geometry. `what` is "QuantizeLinear" or "DequantizeLinear" for errors.
Result<QuantGeometry> quant_geometry(const Node& node, const std::vector<TensorDesc>& in);
// The same, for a kernel's input tensors (nullptr for an omitted zero point).
Result<QuantGeometry> quant_geometry(const Node& node, const std::vector<const Tensor*>& in);

// Whether node's float8 zero point (input 2) is ±0, absent, or not a constant (the kernel
// checks that one: fp8_codes_are_zero). ONNX allows no other.
bool fp8_zero_point_is_zero(const Node& node);
bool fp8_codes_are_zero(const Tensor& t);

// Round half to even, then saturate to [lo, hi]: ONNX's QuantizeLinear rounding.
int64_t quantize_value(float x, float scale, int64_t zero_point, int64_t lo, int64_t hi);

// The elements of a float32, float16 or bfloat16 tensor as floats.
std::vector<float> floats_of(const Tensor& t);

}  // namespace kiln
