#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

// Naive softmax along `axis` (normalized), computed in double with coordinates.
Tensor naive_softmax(const Tensor& x, int64_t axis) {
  const Shape& s = x.shape();
  int64_t inner = 1;
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  std::vector<double> y(x.numel());
  for (int64_t i = 0; i < x.numel(); ++i) {
    // The line through element i along `axis` starts at i - coord(axis) * inner.
    const int64_t c = (i / inner) % s[axis];
    const int64_t start = i - c * inner;
    double mx = -INFINITY, sum = 0;
    for (int64_t k = 0; k < s[axis]; ++k) mx = std::max(mx, x.at_double(start + k * inner));
    for (int64_t k = 0; k < s[axis]; ++k) sum += std::exp(x.at_double(start + k * inner) - mx);
    y[i] = std::exp(x.at_double(i) - mx) / sum;
  }
  return make_tensor(x.dtype(), s, y);
}

TEST(Softmax, MatchesNaiveForAxesShapesAndDtypes) {
  struct Case {
    Shape shape;
    std::optional<int64_t> axis;  // nullopt: attribute absent (default -1)
    int64_t normalized;
  };
  const std::vector<Case> cases = {
      {{2, 3, 4}, std::nullopt, 2}, {{2, 3, 4}, 0, 0},  {{2, 3, 4}, 1, 1}, {{2, 3, 4}, 2, 2},
      {{2, 3, 4}, -3, 0},           {{2, 3, 4}, -2, 1}, {{7}, 0, 0},       {{2, 3, 4, 5}, 1, 1},
      {{1, 1000}, -1, 1},           {{3, 0, 2}, 2, 2},
  };
  uint32_t seed = 60;
  for (const Case& c : cases)
    for (DataType dt : kTestFloatTypes) {
      SCOPED_TRACE(shape_str(c.shape) + " axis " + std::to_string(c.normalized) + " " +
                   dtype_name(dt));
      Tensor x = random_of(dt, c.shape, ++seed, -5, 5);
      Attributes a;
      if (c.axis) a.set("axis", *c.axis);
      expect_near(run_ok(OpKind::Softmax, a, {&x}), naive_softmax(x, c.normalized), rtol_of(dt),
                  rtol_of(dt));
    }
}

// Without subtracting the max, exp(1000) overflows to inf and the result is NaN.
TEST(Softmax, LargeInputsStayFinite) {
  Tensor x = make_tensor(DataType::kFloat32, {2, 3}, {1000, 1001, 1002, -1000, -1001, -1002});
  expect_near(run_ok(OpKind::Softmax, {}, {&x}),
              make_tensor(DataType::kFloat32, {2, 3},
                          {0.09003057, 0.24472848, 0.66524094, 0.66524094, 0.24472848, 0.09003057}),
              1e-6);
}

TEST(Softmax, Errors) {
  Tensor x = random_of(DataType::kFloat32, {2, 3}, 1);
  Attributes a;
  a.set("axis", int64_t{2});
  expect_error(OpKind::Softmax, a, {&x}, "axis 2 out of range for rank 2");
  a.set("axis", int64_t{-3});
  expect_error(OpKind::Softmax, a, {&x}, "out of range");
  Tensor s = random_of(DataType::kFloat32, {}, 1);
  expect_error(OpKind::Softmax, {}, {&s}, "out of range for rank 0");
  Tensor xi = random_of(DataType::kInt32, {2, 3}, 1);
  expect_error(OpKind::Softmax, {}, {&xi}, "int32");
}

}  // namespace
}  // namespace kiln::test
