#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

TEST(Sub, BroadcastsOnSeveralTypes) {
  check_binary(
      OpKind::Sub,
      {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
       DataType::kInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64},
      [](double a, double b) { return a - b; }, -50, 50, -50, 50);
}

TEST(Sub, UnsignedWrapsAround) {
  // uint8: 3 - 5 = 254, as numpy and ONNX Runtime compute it.
  Tensor a = make_tensor(DataType::kUInt8, {3}, {3, 200, 0});
  Tensor b = make_tensor(DataType::kUInt8, {3}, {5, 100, 1});
  expect_near(run_ok(OpKind::Sub, {}, {&a, &b}),
              make_tensor(DataType::kUInt8, {3}, {254, 100, 255}), 0);
}

TEST(Sub, IsNotCommutative) {
  Tensor a = Tensor::from_floats({2, 1}, {10.f, 20.f});
  Tensor b = Tensor::from_floats({3}, {1.f, 2.f, 3.f});
  expect_near(run_ok(OpKind::Sub, {}, {&a, &b}), Tensor::from_floats({2, 3}, {9, 8, 7, 19, 18, 17}),
              0);
}

TEST(Sub, Errors) { check_binary_errors(OpKind::Sub); }

}  // namespace
}  // namespace kiln::test
