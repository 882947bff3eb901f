#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

double tanh_formula(double x, const Attributes&) {
  return (std::exp(x) - std::exp(-x)) / (std::exp(x) + std::exp(-x));
}

TEST(Tanh, MatchesFormulaForEveryFloatType) {
  check_unary_float(OpKind::Tanh, {}, tanh_formula, -5, 5);
}

TEST(Tanh, LargeInputsGiveOne) {
  Tensor x = Tensor::from_floats({2}, {-500.f, 500.f});
  expect_near(run_ok(OpKind::Tanh, {}, {&x}), Tensor::from_floats({2}, {-1, 1}), 0);
}

}  // namespace
}  // namespace kiln::test
