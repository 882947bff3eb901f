// QuantizeLinear: float32 (or float16) x to int8/uint8 with a scale and zero point, or to
// float8 e4m3 codes (zero point 0: x / scale rounded to the nearest e4m3 value, saturating at
// ±448, as opset 19 with saturate=1), per tensor or per axis (quantize_linear.h). The shared
// geometry check serves DequantizeLinear too.

#include "ops/quantize_linear.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/half.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"

namespace kiln {

Result<QuantGeometry> quant_geometry(const Node& node, const std::vector<TensorDesc>& in) {
  const Shape& x = in[0].shape;
  const Shape& scale = in[1].shape;
  QuantGeometry g;
  for (int64_t d : x) g.inner *= d;
  if (scale.size() > 1)
    return invalid_argument("input 1 (scale): expected a scalar or a 1-D tensor, got rank " +
                            std::to_string(scale.size()));
  if (in.size() > 2 && in[2].present() && in[2].shape != scale)
    return invalid_argument("input 2 (zero point): shape differs from the scale's");
  // A scalar, or a 1-D scale of one element, is per tensor.
  if (scale.empty() || scale[0] == 1) return g;
  KILN_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(quantize_linear_attrs(node).axis,
                                                     static_cast<int64_t>(x.size())));
  if (x[axis] != scale[0]) {
    return invalid_argument("input 1 (scale): " + std::to_string(scale[0]) + " scales for axis " +
                            std::to_string(axis) + " of size " + std::to_string(x[axis]));
  }
  g.outer = 1;
  g.inner = 1;
  for (int64_t i = 0; i < axis; ++i) g.outer *= x[i];
  for (size_t i = axis + 1; i < x.size(); ++i) g.inner *= x[i];
  g.channels = x[axis];
  return g;
}

Result<QuantGeometry> quant_geometry(const Node& node, const std::vector<const Tensor*>& in) {
  std::vector<TensorDesc> descs;
  for (const Tensor* t : in) descs.push_back(t ? TensorDesc{t->dtype(), t->shape()} : TensorDesc{});
  return quant_geometry(node, descs);
}

bool fp8_zero_point_is_zero(const Node& node) {
  const Value* zp = node.input(2);
  return !zp || !zp->is_constant() || fp8_codes_are_zero(zp->constant);
}

bool fp8_codes_are_zero(const Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if ((t.data<uint8_t>()[i] & 0x7f) != 0) return false;
  return true;
}

int64_t quantize_value(float x, float scale, int64_t zero_point, int64_t lo, int64_t hi) {
  const float r = std::nearbyint(x / scale);  // the default rounding mode: half to even
  if (std::isnan(r)) return std::clamp<int64_t>(zero_point, lo, hi);
  const double v = static_cast<double>(r) + static_cast<double>(zero_point);
  return static_cast<int64_t>(std::clamp(v, static_cast<double>(lo), static_cast<double>(hi)));
}

std::vector<float> floats_of(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  load_floats(t.raw(), v.size(), t.dtype(), v.data());
  return v;
}

namespace {

constexpr DataType kQuantFloat[] = {DataType::kFloat32, DataType::kFloat16};
constexpr DataType kQuantInt[] = {DataType::kUInt8, DataType::kInt8, DataType::kFloat8E4M3};

Status infer_quantize_linear(const Node& node, const std::vector<TensorDesc>& in,
                             std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 2, 3));
  KILN_RETURN_IF_ERROR(expect_dtype(in, 0, kQuantFloat));
  KILN_RETURN_IF_ERROR(expect_dtype(in, 1, kQuantFloat));
  const bool has_zp = in.size() > 2 && in[2].present();
  if (has_zp) KILN_RETURN_IF_ERROR(expect_dtype(in, 2, kQuantInt));
  if (has_zp && in[2].dtype == DataType::kFloat8E4M3 && !fp8_zero_point_is_zero(node))
    return invalid_argument("input 2 (zero point): a float8 zero point must be 0");
  KILN_RETURN_IF_ERROR(quant_geometry(node, in).status());
  out[0] = {has_zp ? in[2].dtype : DataType::kUInt8, in[0].shape};
  return Status::ok();
}

template <class Q>
void quantize_rows(const QuantGeometry& g, const float* x, const float* scale, const Q* zp, Q* y) {
  constexpr int64_t lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t c = 0; c < g.channels; ++c) {
      const int64_t base = (o * g.channels + c) * g.inner;
      const float s = scale[g.channels == 1 ? 0 : c];
      const int64_t z = zp ? zp[g.channels == 1 ? 0 : c] : 0;
      for (int64_t i = 0; i < g.inner; ++i)
        y[base + i] = static_cast<Q>(quantize_value(x[base + i], s, z, lo, hi));
    }
}

Status run_quantize_linear(const Node& node, const std::vector<const Tensor*>& in,
                           const std::vector<Tensor*>& out) {
  KILN_ASSIGN_OR_RETURN(QuantGeometry g, quant_geometry(node, in));
  const std::vector<float> x = floats_of(*in[0]);
  const std::vector<float> scale = floats_of(*in[1]);
  const Tensor* zp = in.size() > 2 ? in[2] : nullptr;
  if (out[0]->dtype() == DataType::kFloat8E4M3) {
    if (zp && !fp8_codes_are_zero(*zp))
      return invalid_argument("input 2 (zero point): a float8 zero point must be 0");
    uint8_t* y = out[0]->data<uint8_t>();
    for (int64_t o = 0; o < g.outer; ++o)
      for (int64_t c = 0; c < g.channels; ++c) {
        const int64_t base = (o * g.channels + c) * g.inner;
        const float s = scale[g.channels == 1 ? 0 : c];
        for (int64_t i = 0; i < g.inner; ++i) y[base + i] = float_to_fp8e4m3_bits(x[base + i] / s);
      }
  } else if (out[0]->dtype() == DataType::kInt8)
    quantize_rows<int8_t>(g, x.data(), scale.data(), zp ? zp->data<int8_t>() : nullptr,
                          out[0]->data<int8_t>());
  else
    quantize_rows<uint8_t>(g, x.data(), scale.data(), zp ? zp->data<uint8_t>() : nullptr,
                           out[0]->data<uint8_t>());
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(QuantizeLinear, infer_quantize_linear, run_quantize_linear);

}  // namespace kiln
