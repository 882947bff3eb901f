#include "ops/reduce_test_util.h"

namespace kiln::test {
namespace {

TEST(ReduceSum, MatchesNaiveOnEveryCaseAndDtype) {
  check_reduce_cases(
      OpKind::ReduceSum, NaiveReduce::kSum,
      {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
       DataType::kInt32, DataType::kInt64, DataType::kUInt32, DataType::kUInt64},
      /*axes_as_input=*/true);
}

// Absent or empty axes: all axes, or (noop_with_empty_axes=1) none at all.
TEST(ReduceSum, EmptyAxesAndNoop) {
  Tensor x = random_of(DataType::kFloat32, {2, 3, 4}, 5);
  Tensor empty_axes = Tensor::from_int64s({0}, {});
  Tensor axis1 = Tensor::from_int64s({1}, {1});
  Tensor all = naive_reduce(x, {0, 1, 2}, {1, 1, 1}, NaiveReduce::kSum);
  struct Case {
    const char* name;
    const Tensor* axes;
    int64_t noop;
    Tensor want;
  };
  const std::vector<Case> cases = {
      {"absent", nullptr, 0, all},
      {"empty", &empty_axes, 0, all},
      {"absent noop", nullptr, 1, x},
      {"empty noop", &empty_axes, 1, x},
      {"axis 1 noop", &axis1, 1, naive_reduce(x, {1}, {2, 1, 4}, NaiveReduce::kSum)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Attributes a;
    a.set("noop_with_empty_axes", c.noop);
    std::vector<const Tensor*> ins = {&x};
    if (c.axes) ins.push_back(c.axes);
    expect_near(run_ok(OpKind::ReduceSum, a, ins), c.want, 1e-5, 1e-5);
  }
}

// ONNX's reduce_sum keepdims example, by hand.
TEST(ReduceSum, HandComputed) {
  Tensor x = make_tensor(DataType::kFloat32, {3, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  Tensor axes = Tensor::from_int64s({1}, {1});
  expect_near(run_ok(OpKind::ReduceSum, {}, {&x, &axes}),
              make_tensor(DataType::kFloat32, {3, 1, 2}, {4, 6, 12, 14, 20, 22}), 0);
}

TEST(ReduceSum, Errors) {
  check_reduce_errors(OpKind::ReduceSum, /*axes_as_input=*/true);
  Tensor x = random_of(DataType::kFloat32, {2, 3}, 1);
  Tensor axes2d = Tensor::from_int64s({1, 1}, {1});
  expect_error(OpKind::ReduceSum, {}, {&x, &axes2d}, "must be 1-D");
  Tensor float_axes = random_of(DataType::kFloat32, {1}, 1);
  expect_error(OpKind::ReduceSum, {}, {&x, &float_axes}, "must be int64, got float32");
  Attributes noop;
  noop.set("noop_with_empty_axes", int64_t{3});
  expect_error(OpKind::ReduceSum, noop, {&x}, "noop_with_empty_axes must be 0 or 1");
}

}  // namespace
}  // namespace kiln::test
