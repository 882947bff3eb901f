// DequantizeLinear: int8/uint8/int32 x back to float with a scale and zero point, or float8
// e4m3 codes (zero point 0) times the scale, per tensor or per axis (quantize_linear.h). The
// output has the scale's dtype.

#include <string>

#include "core/half.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"
#include "ops/quantize_linear.h"

namespace kiln {

namespace {

constexpr DataType kDequantInt[] = {DataType::kUInt8, DataType::kInt8, DataType::kInt32,
                                    DataType::kFloat8E4M3};
constexpr DataType kDequantFloat[] = {DataType::kFloat32, DataType::kFloat16};

Status infer_dequantize_linear(const Node& node, const std::vector<TensorDesc>& in,
                               std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 2, 3));
  KILN_RETURN_IF_ERROR(expect_dtype(in, 0, kDequantInt));
  KILN_RETURN_IF_ERROR(expect_dtype(in, 1, kDequantFloat));
  if (in.size() > 2 && in[2].present()) KILN_RETURN_IF_ERROR(expect_same_dtype(in, 2, 0));
  if (in[0].dtype == DataType::kFloat8E4M3 && !fp8_zero_point_is_zero(node))
    return invalid_argument("input 2 (zero point): a float8 zero point must be 0");
  KILN_RETURN_IF_ERROR(quant_geometry(node, in).status());
  out[0] = {in[1].dtype, in[0].shape};
  return Status::ok();
}

template <class Q>
void dequantize_rows(const QuantGeometry& g, const Q* x, const float* scale, const Q* zp,
                     float* y) {
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t c = 0; c < g.channels; ++c) {
      const int64_t base = (o * g.channels + c) * g.inner;
      const float s = scale[g.channels == 1 ? 0 : c];
      const int64_t z = zp ? zp[g.channels == 1 ? 0 : c] : 0;
      for (int64_t i = 0; i < g.inner; ++i)
        y[base + i] = static_cast<float>(static_cast<int64_t>(x[base + i]) - z) * s;
    }
}

Status run_dequantize_linear(const Node& node, const std::vector<const Tensor*>& in,
                             const std::vector<Tensor*>& out) {
  KILN_ASSIGN_OR_RETURN(QuantGeometry g, quant_geometry(node, in));
  const std::vector<float> scale = floats_of(*in[1]);
  const Tensor* zp = in.size() > 2 ? in[2] : nullptr;
  std::vector<float> y(static_cast<size_t>(in[0]->numel()));
  if (in[0]->dtype() == DataType::kFloat8E4M3) {
    if (zp && !fp8_codes_are_zero(*zp))
      return invalid_argument("input 2 (zero point): a float8 zero point must be 0");
    const uint8_t* x = in[0]->data<uint8_t>();
    for (int64_t o = 0; o < g.outer; ++o)
      for (int64_t c = 0; c < g.channels; ++c) {
        const int64_t base = (o * g.channels + c) * g.inner;
        const float s = scale[g.channels == 1 ? 0 : c];
        for (int64_t i = 0; i < g.inner; ++i) y[base + i] = fp8e4m3_bits_to_float(x[base + i]) * s;
      }
    store_floats(y.data(), y.size(), out[0]->dtype(), out[0]->raw());
    return Status::ok();
  }
  return dispatch_numeric(in[0]->dtype(), [&](auto tag) -> Status {
    using Q = decltype(tag);
    if constexpr (std::is_same_v<Q, int8_t> || std::is_same_v<Q, uint8_t> ||
                  std::is_same_v<Q, int32_t>) {
      dequantize_rows<Q>(g, in[0]->data<Q>(), scale.data(), zp ? zp->data<Q>() : nullptr, y.data());
      store_floats(y.data(), y.size(), out[0]->dtype(), out[0]->raw());
      return Status::ok();
    }
    return internal_error("DequantizeLinear of " + std::string(dtype_name(in[0]->dtype())));
  });
}

}  // namespace

KILN_REGISTER_OP(DequantizeLinear, infer_dequantize_linear, run_dequantize_linear);

}  // namespace kiln
