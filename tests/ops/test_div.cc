#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

TEST(Div, FloatsBroadcast) {
  check_binary(
      OpKind::Div,
      {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16},
      [](double a, double b) { return a / b; }, -10, 10, 0.5, 4);
}

TEST(Div, IntegersTruncateTowardZero) {
  // Divisors in [1, 9): never zero. trunc, not numpy's floor, for negative quotients.
  check_binary(
      OpKind::Div, {DataType::kInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64},
      [](double a, double b) { return std::trunc(a / b); }, -100, 100, 1, 9);
  check_binary(
      OpKind::Div, {DataType::kUInt8, DataType::kUInt32, DataType::kUInt64},
      [](double a, double b) { return std::trunc(a / b); }, 0, 200, 1, 9);
  Tensor a = make_tensor(DataType::kInt32, {4}, {-7, 7, -7, 7});
  Tensor b = make_tensor(DataType::kInt32, {4}, {2, 2, -2, -2});
  expect_near(run_ok(OpKind::Div, {}, {&a, &b}), make_tensor(DataType::kInt32, {4}, {-3, 3, 3, -3}),
              0);
}

TEST(Div, IntegerDivisionByZeroIsAnError) {
  Tensor a = make_tensor(DataType::kInt32, {3}, {1, 2, 3});
  Tensor b = make_tensor(DataType::kInt32, {3}, {1, 0, 1});
  expect_error(OpKind::Div, {}, {&a, &b}, "integer division by zero");
  Tensor u = make_tensor(DataType::kUInt8, {1}, {0});
  expect_error(OpKind::Div, {}, {&u, &u}, "integer division by zero");
}

TEST(Div, MinByMinusOneWraps) {
  Tensor a = make_tensor(DataType::kInt64, {1}, {-9223372036854775808.0});
  Tensor b = make_tensor(DataType::kInt64, {1}, {-1});
  EXPECT_EQ(run_ok(OpKind::Div, {}, {&a, &b}).data<int64_t>()[0], INT64_MIN);
  Tensor c = make_tensor(DataType::kInt8, {1}, {-128});
  Tensor d = make_tensor(DataType::kInt8, {1}, {-1});
  EXPECT_EQ(run_ok(OpKind::Div, {}, {&c, &d}).data<int8_t>()[0], -128);
}

TEST(Div, FloatDivisionByZeroIsInfinity) {
  Tensor a = Tensor::from_floats({3}, {1.f, -1.f, 0.f});
  Tensor b = Tensor::from_floats({1}, {0.f});
  Tensor y = run_ok(OpKind::Div, {}, {&a, &b});
  EXPECT_EQ(y.data<float>()[0], INFINITY);
  EXPECT_EQ(y.data<float>()[1], -INFINITY);
  EXPECT_TRUE(std::isnan(y.data<float>()[2]));
}

TEST(Div, Errors) { check_binary_errors(OpKind::Div); }

}  // namespace
}  // namespace kiln::test
