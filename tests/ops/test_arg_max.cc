// ArgMax on random data with many ties, along every axis, with and without keepdims and
// select_last_index, against a scan that collects every maximum's index; NaN wins; an empty
// axis, a scalar and a bad axis are refused.
#include <cmath>
#include <random>

#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

// The indices along `axis` where slice (o, i) reaches its maximum (every NaN if it has one).
std::vector<int64_t> maxima(const Tensor& x, int64_t axis, int64_t o, int64_t i) {
  const Shape& s = x.shape();
  int64_t inner = 1;
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t n = s[axis];
  std::vector<double> v;
  for (int64_t j = 0; j < n; ++j) v.push_back(x.at_double((o * n + j) * inner + i));
  std::vector<int64_t> at;
  bool any_nan = false;
  for (double e : v) any_nan = any_nan || std::isnan(e);
  double best = -INFINITY;
  for (double e : v)
    if (!std::isnan(e)) best = std::max(best, e);
  for (int64_t j = 0; j < n; ++j)
    if (any_nan ? std::isnan(v[j]) : v[j] == best) at.push_back(j);
  return at;
}

void expect_arg_max(const Tensor& x, int64_t axis, bool keepdims, bool last) {
  SCOPED_TRACE("axis " + std::to_string(axis) + (keepdims ? " keepdims" : "") +
               (last ? " last" : ""));
  Attributes a;
  a.set("axis", axis);
  a.set("keepdims", int64_t{keepdims});
  a.set("select_last_index", int64_t{last});
  const Tensor got = run_ok(OpKind::ArgMax, a, {&x});
  const Shape& s = x.shape();
  const int64_t ax = axis < 0 ? axis + static_cast<int64_t>(s.size()) : axis;
  Shape want_shape = s;
  if (keepdims)
    want_shape[ax] = 1;
  else
    want_shape.erase(want_shape.begin() + ax);
  ASSERT_EQ(got.dtype(), DataType::kInt64);
  ASSERT_EQ(got.shape(), want_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < ax; ++d) outer *= s[d];
  for (size_t d = ax + 1; d < s.size(); ++d) inner *= s[d];
  const std::vector<int64_t> g = got.to_int64s();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const std::vector<int64_t> m = maxima(x, ax, o, i);
      EXPECT_EQ(g[o * inner + i], last ? m.back() : m.front()) << "slice " << o << "," << i;
    }
}

TEST(ArgMax, RandomDataWithTiesMatchesAScan) {
  std::mt19937 gen(11);
  std::uniform_int_distribution<int> pick(-4, 4);  // few values: ties are common
  const Shape s = {3, 5, 4};
  std::vector<double> v(static_cast<size_t>(shape_numel(s)));
  for (double& e : v) e = pick(gen) * 0.5;
  for (DataType dt : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64, DataType::kInt32}) {
    SCOPED_TRACE(dtype_name(dt));
    std::vector<double> w = v;
    if (dt == DataType::kInt64 || dt == DataType::kInt32)
      for (double& e : w) e = std::round(e * 2);
    const Tensor x = make_tensor(dt, s, w);
    for (int64_t axis : {0, 1, 2, -1, -3})
      for (bool keepdims : {true, false})
        for (bool last : {false, true}) expect_arg_max(x, axis, keepdims, last);
  }
}

TEST(ArgMax, NanCountsAsTheLargest) {
  const Tensor x = make_tensor(DataType::kFloat32, {2, 5}, {1, NAN, 7, NAN, 2, 3, 9, -1, 9, 0});
  for (bool last : {false, true}) expect_arg_max(x, 1, true, last);
  Attributes a;
  a.set("axis", int64_t{1});
  EXPECT_EQ(run_ok(OpKind::ArgMax, a, {&x}).to_int64s(), (std::vector<int64_t>{1, 1}));
  a.set("select_last_index", int64_t{1});
  EXPECT_EQ(run_ok(OpKind::ArgMax, a, {&x}).to_int64s(), (std::vector<int64_t>{3, 3}));
}

TEST(ArgMax, DefaultsToAxisZeroKeepingIt) {
  const Tensor x = make_tensor(DataType::kFloat32, {3, 2}, {1, 8, 5, 2, 4, 3});
  const Tensor got = run_ok(OpKind::ArgMax, {}, {&x});
  EXPECT_EQ(got.shape(), (Shape{1, 2}));
  EXPECT_EQ(got.to_int64s(), (std::vector<int64_t>{1, 0}));
}

TEST(ArgMax, BadInputsAreRefused) {
  const Tensor x = random_tensor({2, 3}, 4);
  Attributes a;
  a.set("axis", int64_t{2});
  expect_error(OpKind::ArgMax, a, {&x}, "axis");
  const Tensor empty = make_tensor(DataType::kFloat32, {2, 0}, {});
  a.set("axis", int64_t{1});
  expect_error(OpKind::ArgMax, a, {&empty}, "is empty");
  const Tensor scalar = make_tensor(DataType::kFloat32, {}, {1});
  expect_error(OpKind::ArgMax, {}, {&scalar}, "scalar");
  expect_error(OpKind::ArgMax, {}, {&x, &x}, "inputs");
}

}  // namespace
}  // namespace kiln::test
