#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

double sqrt_formula(double x, const Attributes&) { return std::pow(x, 0.5); }

TEST(Sqrt, MatchesFormulaForEveryFloatType) {
  check_unary_float(OpKind::Sqrt, {}, sqrt_formula, 0, 100);
}

TEST(Sqrt, NegativeInputIsNaN) {
  Tensor x = Tensor::from_floats({3}, {-1.f, 0.f, 4.f});
  Tensor y = run_ok(OpKind::Sqrt, {}, {&x});
  EXPECT_TRUE(std::isnan(y.data<float>()[0]));
  EXPECT_EQ(y.data<float>()[1], 0.f);
  EXPECT_EQ(y.data<float>()[2], 2.f);
}

}  // namespace
}  // namespace kiln::test
