#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

double exp_formula(double x, const Attributes&) { return std::pow(2.718281828459045, x); }

TEST(Exp, MatchesFormulaForEveryFloatType) { check_unary_float(OpKind::Exp, {}, exp_formula); }

TEST(Exp, OverflowIsInfinity) {
  Tensor x = Tensor::from_floats({2}, {100.f, -200.f});
  Tensor y = run_ok(OpKind::Exp, {}, {&x});
  EXPECT_TRUE(std::isinf(y.data<float>()[0]));
  EXPECT_EQ(y.data<float>()[1], 0.f);
}

}  // namespace
}  // namespace kiln::test
