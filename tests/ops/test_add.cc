#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

const std::vector<DataType> kAllArithmetic = {
    DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
    DataType::kInt8,    DataType::kUInt8,   DataType::kInt16,   DataType::kUInt16,
    DataType::kInt32,   DataType::kUInt32,  DataType::kInt64,   DataType::kUInt64};

TEST(Add, BroadcastsOnEveryArithmeticType) {
  check_binary(
      OpKind::Add, kAllArithmetic, [](double a, double b) { return a + b; }, 0, 50, 0, 50);
}

TEST(Add, SignedNegativeValues) {
  check_binary(
      OpKind::Add, {DataType::kFloat32, DataType::kInt32, DataType::kInt64},
      [](double a, double b) { return a + b; }, -100, 100, -100, 100);
}

TEST(Add, IntegersWrapAround) {
  Tensor a = make_tensor(DataType::kInt8, {2}, {120, -128});
  Tensor b = make_tensor(DataType::kInt8, {2}, {10, -1});
  expect_near(run_ok(OpKind::Add, {}, {&a, &b}), make_tensor(DataType::kInt8, {2}, {-126, 127}), 0);
  Tensor c = make_tensor(DataType::kInt32, {1}, {2147483647});
  Tensor one = make_tensor(DataType::kInt32, {1}, {1});
  expect_near(run_ok(OpKind::Add, {}, {&c, &one}),
              make_tensor(DataType::kInt32, {1}, {-2147483648.0}), 0);
}

TEST(Add, Errors) {
  check_binary_errors(OpKind::Add);
  Tensor a = random_of(DataType::kFloat32, {3}, 1);
  Tensor b = random_of(DataType::kInt64, {3}, 2);
  expect_error(OpKind::Add, {}, {&a, &b}, "input 1: expected float32");
  Tensor t = random_of(DataType::kBool, {3}, 3);
  expect_error(OpKind::Add, {}, {&t, &t}, "got bool");
}

}  // namespace
}  // namespace kiln::test
