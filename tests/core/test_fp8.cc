// float8 e4m3fn (DataType::kFloat8E4M3): every code decoded against the format's definition,
// encoding against the nearest grid value found by search, saturation, NaN and tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "core/half.h"
#include "kiln/tensor.h"

namespace kiln {
namespace {

// The value of code b by the format's definition: sign, 4 exponent bits (bias 7), 3 mantissa
// bits, subnormals at exponent 0, and S.1111.111 the only NaN.
double by_definition(int b) {
  const int sign = b >> 7, e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  const double mag = e == 0 ? m / 8.0 * std::pow(2.0, -6) : (1 + m / 8.0) * std::pow(2.0, e - 7);
  return sign ? -mag : mag;
}

TEST(Fp8E4m3, DecodesEveryCode) {
  for (int b = 0; b < 256; ++b) {
    const double want = by_definition(b);
    const float got = fp8e4m3_bits_to_float(static_cast<uint8_t>(b));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << b;
      continue;
    }
    EXPECT_EQ(got, want) << b;
    EXPECT_EQ(float_to_fp8e4m3_bits(got), b == 0x80 ? 0x80 : b) << "round trip of " << b;
  }
  EXPECT_EQ(fp8e4m3_bits_to_float(0x7e), 448.f);
  EXPECT_EQ(fp8e4m3_bits_to_float(0x01), std::ldexp(1.f, -9));
  EXPECT_EQ(fp8e4m3_bits_to_float(0x08), std::ldexp(1.f, -6));
}

TEST(Fp8E4m3, EncodesToTheNearestValueTiesToEven) {
  std::vector<double> grid;  // the non-negative finite values, ascending
  for (int b = 0; b <= 0x7e; ++b) grid.push_back(by_definition(b));
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> exponent(-12.f, 9.f);
  for (int t = 0; t < 20000; ++t) {
    const float x = std::exp2(exponent(rng)) * (rng() & 1 ? 1.f : -1.f);
    const uint8_t got = float_to_fp8e4m3_bits(x);
    const double a = std::fabs(static_cast<double>(x));
    // Brute force: the nearest grid value, ties to the even code (a 0 last bit).
    int best = 0;
    for (int b = 1; b <= 0x7e; ++b) {
      const double d = std::fabs(grid[b] - a), e = std::fabs(grid[best] - a);
      if (d < e || (d == e && (b & 1) == 0)) best = b;
    }
    if (a >= 448) best = 0x7e;  // saturation
    EXPECT_EQ(got & 0x7f, best) << x;
    EXPECT_EQ(got & 0x80, x < 0 ? 0x80 : 0) << x;
  }
  // Exact ties between neighbours go to the even code.
  EXPECT_EQ(float_to_fp8e4m3_bits(1.0625f), 0x38);  // between 1 (0x38) and 1.125 (0x39)
  EXPECT_EQ(float_to_fp8e4m3_bits(1.1875f), 0x3a);  // between 1.125 (0x39) and 1.25 (0x3a)
  EXPECT_EQ(float_to_fp8e4m3_bits(std::ldexp(1.f, -10)), 0x00);  // half the least subnormal
  EXPECT_EQ(float_to_fp8e4m3_bits(std::ldexp(3.f, -10)), 0x02);  // 1.5 subnormal steps
}

TEST(Fp8E4m3, SaturatesAndKeepsNaN) {
  EXPECT_EQ(float_to_fp8e4m3_bits(447.f), 0x7e);
  EXPECT_EQ(float_to_fp8e4m3_bits(1e6f), 0x7e);
  EXPECT_EQ(float_to_fp8e4m3_bits(-1e6f), 0xfe);
  EXPECT_EQ(float_to_fp8e4m3_bits(std::numeric_limits<float>::infinity()), 0x7e);
  EXPECT_EQ(float_to_fp8e4m3_bits(-std::numeric_limits<float>::infinity()), 0xfe);
  EXPECT_EQ(float_to_fp8e4m3_bits(std::numeric_limits<float>::quiet_NaN()), 0x7f);
  EXPECT_EQ(float_to_fp8e4m3_bits(-0.f), 0x80);
  EXPECT_EQ(float_to_fp8e4m3_bits(1e-9f), 0x00);
}

TEST(Fp8E4m3, TensorsStoreAndLoadCodes) {
  EXPECT_EQ(dtype_size(DataType::kFloat8E4M3), 1u);
  EXPECT_STREQ(dtype_name(DataType::kFloat8E4M3), "float8e4m3");
  const std::vector<float> v = {0.f, 1.f, -2.5f, 448.f, 1000.f, 0.0137f};
  Tensor t(DataType::kFloat8E4M3, {6});
  store_floats(v.data(), v.size(), DataType::kFloat8E4M3, t.raw());
  std::vector<float> back(6);
  load_floats(t.raw(), 6, DataType::kFloat8E4M3, back.data());
  EXPECT_EQ(back, (std::vector<float>{0.f, 1.f, -2.5f, 448.f, 448.f, 0.013671875f}));
  EXPECT_EQ(t.at_double(2), -2.5);
}

}  // namespace
}  // namespace kiln
