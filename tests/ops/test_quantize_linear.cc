// QuantizeLinear and DequantizeLinear's reference kernels: rounding half to even, saturation,
// zero points, per-tensor and per-axis scales, and the round trip, against values written
// out by hand or computed plainly here.
#include <cmath>

#include "core/half.h"
#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

Attributes axis(int64_t a) {
  Attributes attrs;
  attrs.set("axis", a);
  return attrs;
}

TEST(QuantizeLinear, RoundsHalfToEvenAndSaturates) {
  Tensor x = Tensor::from_floats({8}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 300.f, -300.f, 0.26f});
  Tensor scale = Tensor::from_floats({}, {1.0f});
  Tensor zp_i8 = make_tensor(DataType::kInt8, {}, {0});
  expect_near(run_ok(OpKind::QuantizeLinear, {}, {&x, &scale, &zp_i8}),
              make_tensor(DataType::kInt8, {8}, {0, 2, 2, 0, -2, 127, -128, 0}), 0);
  // No zero point: uint8, zero point 0.
  expect_near(run_ok(OpKind::QuantizeLinear, {}, {&x, &scale}),
              make_tensor(DataType::kUInt8, {8}, {0, 2, 2, 0, 0, 255, 0, 0}), 0);
  Tensor zp_u8 = make_tensor(DataType::kUInt8, {}, {128});
  Tensor half = Tensor::from_floats({}, {0.5f});
  expect_near(run_ok(OpKind::QuantizeLinear, {}, {&x, &half, &zp_u8}),
              make_tensor(DataType::kUInt8, {8}, {129, 131, 133, 127, 125, 255, 0, 129}), 0);
}

TEST(QuantizeLinear, PerAxisScalesAndZeroPoints) {
  Tensor x = random_tensor({2, 3, 4}, 7, -3.f, 3.f);
  Tensor scale = Tensor::from_floats({3}, {0.02f, 0.05f, 0.1f});
  Tensor zp = make_tensor(DataType::kInt8, {3}, {0, -10, 5});
  Tensor y = run_ok(OpKind::QuantizeLinear, axis(1), {&x, &scale, &zp});
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int c = static_cast<int>((i / 4) % 3);
    const double q =
        std::nearbyint(x.data<float>()[i] / scale.data<float>()[c]) + zp.data<int8_t>()[c];
    EXPECT_EQ(y.data<int8_t>()[i], std::fmin(127, std::fmax(-128, q))) << i;
  }
  // The last axis, written negative.
  Tensor s4 = Tensor::from_floats({4}, {0.1f, 0.2f, 0.3f, 0.4f});
  Tensor y2 = run_ok(OpKind::QuantizeLinear, axis(-1), {&x, &s4});
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_EQ(
        y2.data<uint8_t>()[i],
        std::fmin(255, std::fmax(0, std::nearbyint(x.data<float>()[i] / s4.data<float>()[i % 4]))));
}

TEST(DequantizeLinear, PerTensorAndPerAxis) {
  Tensor x = make_tensor(DataType::kInt8, {2, 3}, {-128, -1, 0, 1, 50, 127});
  Tensor scale = Tensor::from_floats({}, {0.5f});
  Tensor zp = make_tensor(DataType::kInt8, {}, {-1});
  expect_near(run_ok(OpKind::DequantizeLinear, {}, {&x, &scale, &zp}),
              Tensor::from_floats({2, 3}, {-63.5f, 0.f, 0.5f, 1.f, 25.5f, 64.f}), 0);
  Tensor scales = Tensor::from_floats({3}, {1.f, 0.1f, 2.f});
  expect_near(run_ok(OpKind::DequantizeLinear, axis(1), {&x, &scales}),
              Tensor::from_floats({2, 3}, {-128.f, -0.1f, 0.f, 1.f, 5.f, 254.f}), 1e-6);
  Tensor i32 = make_tensor(DataType::kInt32, {3}, {-100000, 0, 7});
  Tensor s = Tensor::from_floats({}, {0.001f});
  expect_near(run_ok(OpKind::DequantizeLinear, {}, {&i32, &s}),
              Tensor::from_floats({3}, {-100.f, 0.f, 0.007f}), 1e-6, 1e-6);
}

TEST(QuantizeLinear, RoundTripIsWithinHalfAStep) {
  Tensor x = random_tensor({3, 5, 7}, 11, -2.f, 2.f);
  Tensor scale = Tensor::from_floats({}, {2.f / 127});
  Tensor zp = make_tensor(DataType::kInt8, {}, {0});
  Tensor q = run_ok(OpKind::QuantizeLinear, {}, {&x, &scale, &zp});
  Tensor back = run_ok(OpKind::DequantizeLinear, {}, {&q, &scale, &zp});
  expect_near(back, x, 1.0 / 127 + 1e-6);
}

// float8 e4m3 codes: the zero point's dtype picks them; x / scale rounds to the nearest e4m3
// value and saturates at ±448; a nonzero float8 zero point is refused.
Tensor fp8_tensor(const Shape& shape, const std::vector<float>& v) {
  Tensor t(DataType::kFloat8E4M3, shape);
  store_floats(v.data(), v.size(), DataType::kFloat8E4M3, t.raw());
  return t;
}

TEST(QuantizeLinear, Float8E4m3Codes) {
  Tensor x = random_tensor({2, 3, 5}, 13, -6.f, 6.f);
  Tensor scale = Tensor::from_floats({}, {0.01f});
  Tensor zp = fp8_tensor({}, {0.f});
  Tensor q = run_ok(OpKind::QuantizeLinear, {}, {&x, &scale, &zp});
  ASSERT_EQ(q.dtype(), DataType::kFloat8E4M3);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float want = std::fmin(448.f, std::fmax(-448.f, x.data<float>()[i] / 0.01f));
    EXPECT_EQ(q.data<uint8_t>()[i], float_to_fp8e4m3_bits(want)) << i;
  }
  // Back: code · scale, within half an e4m3 step (1/16 of the value) where nothing saturated.
  Tensor back = run_ok(OpKind::DequantizeLinear, {}, {&q, &scale, &zp});
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = x.data<float>()[i], b = back.data<float>()[i];
    if (std::fabs(v) < 4.4f)
      EXPECT_NEAR(b, v, std::fabs(v) / 16 + 1e-6) << i;
    else
      EXPECT_EQ(std::fabs(b), 4.48f) << i;
  }
  // Per axis.
  Tensor scales = Tensor::from_floats({3}, {0.01f, 1.f, 100.f});
  Tensor zps = fp8_tensor({3}, {0.f, 0.f, 0.f});
  Attributes a;
  a.set("axis", int64_t{1});
  Tensor qa = run_ok(OpKind::QuantizeLinear, a, {&x, &scales, &zps});
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_EQ(qa.data<uint8_t>()[i],
              float_to_fp8e4m3_bits(x.data<float>()[i] / scales.data<float>()[(i / 5) % 3]));
  Tensor nonzero = fp8_tensor({}, {1.f});
  auto r = run_op(OpKind::QuantizeLinear, {}, {&x, &scale, &nonzero});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("float8 zero point must be 0"), std::string::npos);
  EXPECT_FALSE(run_op(OpKind::DequantizeLinear, {}, {&q, &scale, &nonzero}).is_ok());
}

TEST(QuantizeLinear, Errors) {
  Tensor x = random_tensor({2, 3}, 3);
  Tensor wrong = Tensor::from_floats({4}, {1, 1, 1, 1});
  auto r = run_op(OpKind::QuantizeLinear, axis(1), {&x, &wrong});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("4 scales for axis 1 of size 3"), std::string::npos)
      << r.status().message();
  Tensor s = Tensor::from_floats({}, {1.f});
  Tensor zp16 = make_tensor(DataType::kInt16, {}, {0});
  EXPECT_FALSE(run_op(OpKind::QuantizeLinear, {}, {&x, &s, &zp16}).is_ok());
  Tensor zp3 = make_tensor(DataType::kInt8, {3}, {0, 0, 0});
  EXPECT_FALSE(run_op(OpKind::QuantizeLinear, {}, {&x, &s, &zp3}).is_ok());
  Tensor f = Tensor::from_floats({2}, {1, 2});
  EXPECT_FALSE(run_op(OpKind::DequantizeLinear, {}, {&f, &s}).is_ok());
}

}  // namespace
}  // namespace kiln::test
