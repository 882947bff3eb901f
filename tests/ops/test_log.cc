#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

double log_formula(double x, const Attributes&) { return std::log(x); }

TEST(Log, MatchesFormulaForEveryFloatType) {
  check_unary_float(OpKind::Log, {}, log_formula, 0.01, 50);
}

TEST(Log, ZeroAndNegative) {
  Tensor x = Tensor::from_floats({2}, {0.f, -1.f});
  Tensor y = run_ok(OpKind::Log, {}, {&x});
  EXPECT_EQ(y.data<float>()[0], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(y.data<float>()[1]));
}

}  // namespace
}  // namespace kiln::test
