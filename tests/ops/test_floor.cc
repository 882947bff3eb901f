#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

double floor_formula(double x, const Attributes&) { return std::floor(x); }

TEST(Floor, MatchesFormulaForEveryFloatType) {
  check_unary_float(OpKind::Floor, {}, floor_formula, -4, 4);
}

}  // namespace
}  // namespace kiln::test
