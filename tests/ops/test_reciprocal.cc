#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

double reciprocal_formula(double x, const Attributes&) { return 1.0 / x; }

TEST(Reciprocal, MatchesFormulaForEveryFloatType) {
  check_unary_float(OpKind::Reciprocal, {}, reciprocal_formula, 0.25, 4);
}

TEST(Reciprocal, ZeroGivesInfinity) {
  Tensor x = Tensor::from_floats({3}, {0.f, -0.f, -2.f});
  Tensor y = run_ok(OpKind::Reciprocal, {}, {&x});
  EXPECT_EQ(y.data<float>()[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(y.data<float>()[1], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(y.data<float>()[2], -0.5f);
}

}  // namespace
}  // namespace kiln::test
