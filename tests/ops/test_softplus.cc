#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

double softplus(double x, const Attributes&) { return std::log(std::exp(x) + 1); }

TEST(Softplus, MatchesFormulaForEveryFloatType) {
  check_unary_float(OpKind::Softplus, {}, softplus, -10, 10);
}

TEST(Softplus, LargeInputsStayFinite) {
  // exp(100) overflows float; softplus(x) ≈ x for large x and ≈ exp(x) for very negative x.
  Tensor x = Tensor::from_floats({3}, {100.f, 1000.f, -100.f});
  expect_near(run_ok(OpKind::Softplus, {}, {&x}),
              Tensor::from_floats({3}, {100.f, 1000.f, static_cast<float>(std::exp(-100.0))}), 0,
              1e-6);
}

}  // namespace
}  // namespace kiln::test
