#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

TEST(Mul, BroadcastsOnSeveralTypes) {
  check_binary(
      OpKind::Mul,
      {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
       DataType::kInt8, DataType::kUInt8, DataType::kInt32, DataType::kInt64, DataType::kUInt64},
      [](double a, double b) { return a * b; }, 0, 11, 0, 11);
  check_binary(
      OpKind::Mul, {DataType::kFloat32, DataType::kInt16, DataType::kInt64},
      [](double a, double b) { return a * b; }, -100, 100, -100, 100);
}

TEST(Mul, IntegersWrapAround) {
  Tensor a = make_tensor(DataType::kUInt16, {2}, {65535, 300});
  Tensor b = make_tensor(DataType::kUInt16, {2}, {65535, 300});
  // 65535² mod 2^16 = 1; 90000 mod 65536 = 24464.
  expect_near(run_ok(OpKind::Mul, {}, {&a, &b}), make_tensor(DataType::kUInt16, {2}, {1, 24464}),
              0);
  Tensor c = make_tensor(DataType::kInt64, {1}, {4611686018427387904.0});  // 2^62
  Tensor four = make_tensor(DataType::kInt64, {1}, {4});
  EXPECT_EQ(run_ok(OpKind::Mul, {}, {&c, &four}).data<int64_t>()[0], 0);
}

TEST(Mul, Errors) { check_binary_errors(OpKind::Mul); }

}  // namespace
}  // namespace kiln::test
