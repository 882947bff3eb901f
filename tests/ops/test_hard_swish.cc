#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

// Piecewise form of x * relu6(x + 3) / 6.
double hard_swish(double x, const Attributes&) {
  if (x <= -3) return 0;
  if (x >= 3) return x;
  return x * (x + 3) / 6;
}

TEST(HardSwish, MatchesFormulaForEveryFloatType) {
  check_unary_float(OpKind::HardSwish, {}, hard_swish, -6, 6);
}

}  // namespace
}  // namespace kiln::test
