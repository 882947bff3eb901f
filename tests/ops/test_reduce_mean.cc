#include "ops/reduce_test_util.h"

namespace kiln::test {
namespace {

TEST(ReduceMean, MatchesNaiveOnEveryCaseAndDtype) {
  check_reduce_cases(
      OpKind::ReduceMean, NaiveReduce::kMean,
      {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
       DataType::kInt32, DataType::kInt64, DataType::kUInt32, DataType::kUInt64},
      /*axes_as_input=*/false);
}

// ONNX's reduce_mean keepdims example, by hand.
TEST(ReduceMean, HandComputed) {
  Tensor x = make_tensor(DataType::kFloat32, {3, 2, 2}, {5, 1, 20, 2, 30, 1, 40, 2, 55, 1, 60, 2});
  Attributes a;
  a.set("axes", std::vector<int64_t>{1});
  expect_near(run_ok(OpKind::ReduceMean, a, {&x}),
              make_tensor(DataType::kFloat32, {3, 1, 2}, {12.5, 1.5, 35, 1.5, 57.5, 1.5}), 1e-6);
}

TEST(ReduceMean, IntegerMeanTruncates) {
  Tensor x = make_tensor(DataType::kInt32, {2, 3}, {1, 2, 2, -1, -2, -2});
  Attributes a;
  a.set("axes", std::vector<int64_t>{1});
  a.set("keepdims", int64_t{0});
  expect_near(run_ok(OpKind::ReduceMean, a, {&x}), make_tensor(DataType::kInt32, {2}, {1, -1}), 0);
}

TEST(ReduceMean, Errors) {
  check_reduce_errors(OpKind::ReduceMean, /*axes_as_input=*/false);
  Tensor x = random_of(DataType::kInt8, {2, 3}, 1);
  expect_error(OpKind::ReduceMean, {}, {&x}, "int8");
}

}  // namespace
}  // namespace kiln::test
