#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

double sigmoid(double x, const Attributes&) { return 1 / (1 + std::exp(-x)); }

TEST(Sigmoid, MatchesFormulaForEveryFloatType) {
  check_unary_float(OpKind::Sigmoid, {}, sigmoid, -8, 8);
}

TEST(Sigmoid, ExtremeInputsSaturateWithoutNaN) {
  Tensor x = Tensor::from_floats({4}, {-1000.f, -100.f, 100.f, 1000.f});
  expect_near(run_ok(OpKind::Sigmoid, {}, {&x}), Tensor::from_floats({4}, {0, 0, 1, 1}), 1e-30);
}

}  // namespace
}  // namespace kiln::test
