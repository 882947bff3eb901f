#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

double hard_sigmoid(double x, const Attributes& a) {
  double y = a.get_float("alpha", 0.2f) * x + a.get_float("beta", 0.5f);
  return y < 0 ? 0 : (y > 1 ? 1 : y);
}

TEST(HardSigmoid, DefaultAttributes) {
  check_unary_float(OpKind::HardSigmoid, {}, hard_sigmoid, -5, 5);
}

TEST(HardSigmoid, CustomAlphaBeta) {
  Attributes a;
  a.set("alpha", 0.5f);
  a.set("beta", 0.6f);
  check_unary_float(OpKind::HardSigmoid, a, hard_sigmoid, -3, 3);
}

TEST(HardSigmoid, HandComputedValues) {
  Tensor x = Tensor::from_floats({4}, {-10.f, -1.f, 1.f, 10.f});
  expect_near(run_ok(OpKind::HardSigmoid, {}, {&x}), Tensor::from_floats({4}, {0, 0.3f, 0.7f, 1}),
              1e-7);
}

}  // namespace
}  // namespace kiln::test
