#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/half.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return invalid_argument("expected a positive value, got " + std::to_string(v));
  return v;
}

Status use(int v) {
  KILN_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return x > 10 ? out_of_range("too big") : Status::ok();
}

TEST(Status, ContextIsPrependedAsErrorsTravel) {
  Status s = use(-1).with_context("node 'a' (Relu)");
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "node 'a' (Relu): expected a positive value, got -1");
  EXPECT_TRUE(use(3).is_ok());
  EXPECT_EQ(use(11).code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(Status::ok().with_context("x").is_ok());
}

TEST(Half, RoundTripsAndRoundsToNearestEven) {
  for (float f : {0.f, -0.f, 1.f, -2.5f, 65504.f, 6.1035156e-05f, 5.9604645e-08f, 0.1f})
    EXPECT_EQ(half_bits_to_float(float_to_half_bits(f)), static_cast<float>(Half(f))) << f;
  EXPECT_EQ(float_to_half_bits(1.f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(65504.f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(1e6f), 0x7c00);              // overflow → inf
  EXPECT_EQ(float_to_half_bits(5.9604645e-08f), 0x0001);    // smallest subnormal
  EXPECT_EQ(float_to_half_bits(1.f + 1.f / 2048), 0x3c00);  // tie → even
  EXPECT_EQ(float_to_half_bits(1.f + 3.f / 2048), 0x3c02);  // tie → even (up)
  EXPECT_NEAR(half_bits_to_float(0x3555), 0.333251953f, 1e-9);
  EXPECT_TRUE(std::isnan(half_bits_to_float(float_to_half_bits(NAN))));
  EXPECT_EQ(float_to_bf16_bits(1.f), 0x3f80);
  EXPECT_EQ(bf16_bits_to_float(0x4049), 3.140625f);
}

TEST(Half, SaturatedConversionKeepsValuesInRange) {
  bool c = true;
  EXPECT_EQ(float_to_half_bits_saturated(1.f, &c), 0x3c00);
  EXPECT_FALSE(c);
  EXPECT_EQ(float_to_half_bits_saturated(0.f, &c), 0x0000);
  EXPECT_FALSE(c);
  EXPECT_EQ(float_to_half_bits_saturated(1e-12f, &c), 0x0001);  // not 0
  EXPECT_TRUE(c);
  EXPECT_EQ(float_to_half_bits_saturated(-1e-12f, &c), 0x8001);
  EXPECT_TRUE(c);
  EXPECT_EQ(float_to_half_bits_saturated(-1e9f, &c), 0xfbff);  // -65504, not -inf
  EXPECT_TRUE(c);
  EXPECT_EQ(float_to_half_bits_saturated(INFINITY, &c), 0x7c00);  // inf stays inf
  EXPECT_FALSE(c);
  EXPECT_EQ(float_to_half_bits_saturated(5.9604645e-08f, &c), 0x0001);
  EXPECT_FALSE(c);
  Fp16Saturation s;
  for (float f : {1.f, 1e-12f, 2.f, -1e9f}) s.convert(f);
  EXPECT_EQ(s.changed, 2);
  EXPECT_EQ(s.total, 4);
  EXPECT_EQ(s.note("constant 'eps'"),
            "fp16: constant 'eps': 2 of 4 values outside fp16's range (such as 1e-12) saturated "
            "to ±2^-24");
  EXPECT_EQ(Fp16Saturation{}.note("x"), "");
}

TEST(Tensor, ShallowCopyDeepClone) {
  Tensor a = Tensor::from_floats({2, 2}, {1, 2, 3, 4});
  Tensor b = a;
  Tensor c = a.clone();
  a.data<float>()[0] = 9;
  EXPECT_EQ(b.data<float>()[0], 9);
  EXPECT_EQ(c.data<float>()[0], 1);
  EXPECT_EQ(a.reshaped({4}).shape(), Shape({4}));
  EXPECT_EQ(a.nbytes(), 16u);
  EXPECT_EQ(shape_str(a.shape()), "[2,2]");
  EXPECT_EQ(Tensor::from_int64s({3}, {1, -2, 3}).to_int64s(), (std::vector<int64_t>{1, -2, 3}));
}

// A tensor over a taken byte string: no copy (the data pointer is the string's own), the
// values are the bytes, and copies share the buffer.
TEST(Tensor, FromBytesTakesTheBufferWithoutCopy) {
  const std::vector<float> v{1.5f, -2.f, 3.25f, 4.f, 5.f, 6.f};
  std::string bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  const char* where = bytes.data();
  Tensor t = Tensor::from_bytes(DataType::kFloat32, {2, 3}, std::move(bytes));
  EXPECT_EQ(static_cast<const void*>(t.raw()), static_cast<const void*>(where));
  EXPECT_EQ(t.shape(), Shape({2, 3}));
  EXPECT_EQ(t.to_floats(), v);
  Tensor shared = t.reshaped({6});
  t.data<float>()[5] = 7.f;
  EXPECT_EQ(shared.data<float>()[5], 7.f);
  // A short string keeps its bytes inside the string object (no heap buffer): still valid.
  std::string small("\x01\x00\x02\x00", 4);
  Tensor s = Tensor::from_bytes(DataType::kInt16, {2}, std::move(small));
  EXPECT_EQ(s.to_int64s(), (std::vector<int64_t>{1, 2}));
}

}  // namespace
}  // namespace kiln
