#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

double ceil_formula(double x, const Attributes&) { return std::ceil(x); }

TEST(Ceil, MatchesFormulaForEveryFloatType) {
  check_unary_float(OpKind::Ceil, {}, ceil_formula, -4, 4);
}

}  // namespace
}  // namespace kiln::test
