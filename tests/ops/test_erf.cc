#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

// erf from its Taylor series 2/√π · Σ (-1)ⁿ x^(2n+1) / (n! (2n+1)), in long double. On the
// random inputs' range [-4, 4] the largest term is about 4^33/16! ≈ 4e6, so the sum keeps
// ~1e-13 absolute accuracy, below double's tolerance here.
double erf_series(double x, const Attributes&) {
  long double term = x, sum = x;
  for (int n = 1; n < 120; ++n) {
    term *= -static_cast<long double>(x) * x / n;
    sum += term / (2 * n + 1);
  }
  return static_cast<double>(sum * 2 / std::sqrt(3.14159265358979323846L));
}

TEST(Erf, MatchesSeriesForEveryFloatType) { check_unary_float(OpKind::Erf, {}, erf_series); }

TEST(Erf, HandComputedValuesAndLimits) {
  Tensor x = Tensor::from_floats({5}, {0.f, 1.f, -0.5f, 10.f, -INFINITY});
  Tensor y = run_ok(OpKind::Erf, {}, {&x});
  EXPECT_EQ(y.data<float>()[0], 0.f);
  EXPECT_NEAR(y.data<float>()[1], 0.8427007929f, 1e-7);
  EXPECT_NEAR(y.data<float>()[2], -0.5204998778f, 1e-7);
  EXPECT_EQ(y.data<float>()[3], 1.f);
  EXPECT_EQ(y.data<float>()[4], -1.f);
}

}  // namespace
}  // namespace kiln::test
