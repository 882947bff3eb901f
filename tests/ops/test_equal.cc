#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

TEST(Equal, BroadcastsOnEveryNumericTypeWithBoolOutput) {
  // Small integer values (also for floats) so that equal pairs are frequent.
  const std::vector<DataType> types = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                                       DataType::kBFloat16, DataType::kInt8,    DataType::kUInt8,
                                       DataType::kInt16,    DataType::kUInt16,  DataType::kInt32,
                                       DataType::kUInt32,   DataType::kInt64,   DataType::kUInt64,
                                       DataType::kBool};
  uint32_t seed = 1;
  for (DataType dt : types)
    for (const auto& [sa, sb] : kBroadcastCases) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape_str(sa) + " " + shape_str(sb));
      Tensor a = make_tensor(dt, sa, values_of(random_of(DataType::kInt32, sa, ++seed, 0, 3)));
      Tensor b = make_tensor(dt, sb, values_of(random_of(DataType::kInt32, sb, ++seed, 0, 3)));
      Tensor want = naive_broadcast(DataType::kBool, {&a, &b},
                                    [](const std::vector<double>& v) { return v[0] == v[1]; });
      expect_near(run_ok(OpKind::Equal, {}, {&a, &b}), want, 0);
    }
}

TEST(Equal, FloatSpecialValues) {
  Tensor a = Tensor::from_floats({3}, {0.f, NAN, 1.f});
  Tensor b = Tensor::from_floats({3}, {-0.f, NAN, 1.0000001f});
  expect_near(run_ok(OpKind::Equal, {}, {&a, &b}), make_tensor(DataType::kBool, {3}, {1, 0, 0}), 0);
}

TEST(Equal, Errors) {
  check_binary_errors(OpKind::Equal);
  Tensor a = random_of(DataType::kInt32, {3}, 1);
  Tensor b = random_of(DataType::kInt64, {3}, 2);
  expect_error(OpKind::Equal, {}, {&a, &b}, "input 1: expected int32");
}

}  // namespace
}  // namespace kiln::test
