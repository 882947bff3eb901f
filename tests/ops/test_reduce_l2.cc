#include "ops/reduce_test_util.h"

namespace kiln::test {
namespace {

TEST(ReduceL2, MatchesNaiveOnEveryCaseAndDtype) {
  check_reduce_cases(
      OpKind::ReduceL2, NaiveReduce::kL2,
      {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
       DataType::kInt32, DataType::kInt64, DataType::kUInt32, DataType::kUInt64},
      /*axes_as_input=*/false);
}

// ONNX's reduce_l2 keepdims example, by hand: sqrt(1 + 4), sqrt(9 + 16), ...
TEST(ReduceL2, HandComputed) {
  Tensor x = make_tensor(DataType::kFloat32, {3, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  Attributes a;
  a.set("axes", std::vector<int64_t>{2});
  expect_near(run_ok(OpKind::ReduceL2, a, {&x}),
              make_tensor(DataType::kFloat32, {3, 2, 1},
                          {2.23606798, 5.0, 7.81024968, 10.63014581, 13.45362405, 16.2788206}),
              1e-6);
}

TEST(ReduceL2, Errors) {
  check_reduce_errors(OpKind::ReduceL2, /*axes_as_input=*/false);
  Tensor x = random_of(DataType::kInt8, {2, 3}, 1);
  expect_error(OpKind::ReduceL2, {}, {&x}, "int8");
}

}  // namespace
}  // namespace kiln::test
