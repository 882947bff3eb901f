#include "ops/reduce_test_util.h"

namespace kiln::test {
namespace {

TEST(ReduceMax, MatchesNaiveOnEveryCaseAndDtype) {
  check_reduce_cases(OpKind::ReduceMax, NaiveReduce::kMax,
                     {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16,
                      DataType::kBFloat16, DataType::kInt32, DataType::kInt64, DataType::kUInt32,
                      DataType::kUInt64, DataType::kInt8, DataType::kUInt8},
                     /*axes_as_input=*/false);
}

// ONNX's reduce_max do_not_keepdims example, by hand.
TEST(ReduceMax, HandComputed) {
  Tensor x = make_tensor(DataType::kFloat32, {3, 2, 2}, {5, 1, 20, 2, 30, 1, 40, 2, 55, 1, 60, 2});
  Attributes a;
  a.set("axes", std::vector<int64_t>{1});
  a.set("keepdims", int64_t{0});
  expect_near(run_ok(OpKind::ReduceMax, a, {&x}),
              make_tensor(DataType::kFloat32, {3, 2}, {20, 2, 40, 2, 60, 2}), 0);
}

TEST(ReduceMax, NanPropagates) {
  Tensor x = make_tensor(DataType::kFloat32, {2, 3}, {1, NAN, 3, 4, 5, 6});
  Attributes a;
  a.set("axes", std::vector<int64_t>{1});
  Tensor y = run_ok(OpKind::ReduceMax, a, {&x});
  ASSERT_EQ(y.numel(), 2);
  EXPECT_TRUE(std::isnan(y.data<float>()[0]));
  EXPECT_EQ(y.data<float>()[1], 6.f);
}

TEST(ReduceMax, Errors) {
  check_reduce_errors(OpKind::ReduceMax, /*axes_as_input=*/false);
  Tensor x = random_of(DataType::kInt16, {2, 3}, 1);
  expect_error(OpKind::ReduceMax, {}, {&x}, "int16");
}

}  // namespace
}  // namespace kiln::test
