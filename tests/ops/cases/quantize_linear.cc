// QuantizeLinear and DequantizeLinear, per tensor (the CUDA kernels' forms; the reference runs
// the per-axis ones, tests/ops/test_quantize_linear.cc): int8, uint8 and float8 e4m3, with
// and without a zero point, values past both ends of the range (e4m3 saturates at ±448), and
// element counts a vector load does not divide.
#include <random>
#include <string>

#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

Tensor scalar_of(DataType dt, int v) {
  Tensor t(dt, {});
  if (dt == DataType::kInt8)
    *t.data<int8_t>() = static_cast<int8_t>(v);
  else
    *t.data<uint8_t>() = static_cast<uint8_t>(v);
  return t;
}

OpCase quantize(std::string name, const Shape& x, float scale, DataType q, int zero_point,
                uint32_t seed) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::QuantizeLinear;
  c.inputs.push_back({random_tensor(x, seed, -3.f, 3.f)});  // |x| / scale beyond 127 too
  c.inputs.push_back({Tensor::from_floats({}, {scale}), true});
  c.inputs.push_back({scalar_of(q, zero_point), true});
  return c;
}

OpCase dequantize(std::string name, const Shape& x, float scale, DataType q, int zero_point,
                  uint32_t seed) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::DequantizeLinear;
  Tensor codes(q, x);
  std::mt19937 gen(seed);
  for (int64_t i = 0; i < codes.numel(); ++i) {
    uint8_t b = static_cast<uint8_t>(gen());
    if (q == DataType::kFloat8E4M3 && (b & 0x7f) == 0x7f) b = 0;  // e4m3's NaN codes
    static_cast<uint8_t*>(codes.raw())[i] = b;
  }
  c.inputs.push_back({codes});
  c.inputs.push_back({Tensor::from_floats({}, {scale}), true});
  c.inputs.push_back({scalar_of(q, zero_point), true});
  return c;
}

}  // namespace

KILN_OP_CASES(quantize_linear) {
  uint32_t seed = 2100;
  return {
      quantize("int8", {2, 8, 5, 6}, 0.02f, DataType::kInt8, 0, seed++),
      quantize("int8_zero_point", {2, 3, 7, 5}, 0.05f, DataType::kInt8, -7, seed++),
      quantize("uint8", {3, 17}, 0.013f, DataType::kUInt8, 128, seed++),
      dequantize("int8", {2, 8, 5, 6}, 0.02f, DataType::kInt8, 0, seed++),
      dequantize("int8_zero_point", {2, 3, 7, 5}, 0.05f, DataType::kInt8, 5, seed++),
      dequantize("uint8", {3, 17}, 0.013f, DataType::kUInt8, 128, seed++),
      quantize("fp8", {2, 16, 5, 6}, 0.005f, DataType::kFloat8E4M3, 0, seed++),
      dequantize("fp8", {2, 16, 5, 6}, 0.02f, DataType::kFloat8E4M3, 0, seed++),
  };
}

}  // namespace kiln::test
