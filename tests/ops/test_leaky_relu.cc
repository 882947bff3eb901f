#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

double leaky_relu(double x, const Attributes& a) {
  return x >= 0 ? x : a.get_float("alpha", 0.01f) * x;
}

TEST(LeakyRelu, DefaultAlpha) { check_unary_float(OpKind::LeakyRelu, {}, leaky_relu); }

TEST(LeakyRelu, CustomAlpha) {
  Attributes a;
  a.set("alpha", 0.2f);
  check_unary_float(OpKind::LeakyRelu, a, leaky_relu);
}

TEST(LeakyRelu, HandComputedValues) {
  Tensor x = Tensor::from_floats({3}, {-2.f, 0.f, 3.f});
  expect_near(run_ok(OpKind::LeakyRelu, {}, {&x}), Tensor::from_floats({3}, {-0.02f, 0, 3}), 1e-8);
}

}  // namespace
}  // namespace kiln::test
