#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

double neg_formula(double x, const Attributes&) { return -x; }

TEST(Neg, MatchesFormulaForEveryFloatType) {
  check_unary_float(OpKind::Neg, {}, neg_formula, -4, 4, false);
}

// Shape subgraphs negate int64 pads (PyTorch's F.pad export); integers wrap as numpy's do.
TEST(Neg, SignedIntegersAndTheirWrap) {
  for (DataType dt : {DataType::kInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = random_of(dt, {2, 5}, 7, -100, 100);
    Tensor want = naive_broadcast(dt, {&x}, [](const std::vector<double>& a) { return -a[0]; });
    expect_near(run_ok(OpKind::Neg, {}, {&x}), want, 0, 0);
  }
  Tensor m = Tensor::from_int64s({2}, {std::numeric_limits<int64_t>::min(), 5});
  Tensor y = run_ok(OpKind::Neg, {}, {&m});
  EXPECT_EQ(y.data<int64_t>()[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(y.data<int64_t>()[1], -5);
  Tensor zero = Tensor::from_floats({1}, {0.f});
  EXPECT_TRUE(std::signbit(run_ok(OpKind::Neg, {}, {&zero}).data<float>()[0]));
}

TEST(Neg, UnsignedAndBoolAreRefused) {
  Tensor u = random_of(DataType::kUInt8, {3}, 1, 0, 9);
  expect_error(OpKind::Neg, {}, {&u}, "got uint8");
  Tensor b = random_of(DataType::kBool, {3}, 1);
  expect_error(OpKind::Neg, {}, {&b}, "got bool");
}

}  // namespace
}  // namespace kiln::test
