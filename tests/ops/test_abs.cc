#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

double abs_formula(double x, const Attributes&) { return std::fabs(x); }

TEST(Abs, MatchesFormulaForEveryFloatType) {
  check_unary_float(OpKind::Abs, {}, abs_formula, -4, 4, false);
}

TEST(Abs, SignedIntegers) {
  for (DataType dt : {DataType::kInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = random_of(dt, {3, 4}, 11, -100, 100);
    Tensor want =
        naive_broadcast(dt, {&x}, [](const std::vector<double>& a) { return std::fabs(a[0]); });
    expect_near(run_ok(OpKind::Abs, {}, {&x}), want, 0, 0);
  }
  Tensor b = random_of(DataType::kBool, {3}, 1);
  expect_error(OpKind::Abs, {}, {&b}, "got bool");
}

}  // namespace
}  // namespace kiln::test
