// Reduce* test cases and a naive reduction: every input element is mapped by its
// coordinates to its output element (reduced coordinates dropped or set to 0).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ops/elementwise_test_util.h"

namespace kiln::test {

enum class NaiveReduce { kSum, kMean, kMax, kL2 };

struct ReduceCase {
  Shape in;
  std::optional<std::vector<int64_t>> axes;  // nullopt: absent (attribute or input)
  int64_t keepdims = -1;                     // -1: attribute absent (default 1)
  Shape want_out;                            // by hand
};

// Fields: in, axes, keepdims, want_out.
inline const std::vector<ReduceCase> kReduceCases = {
    {{2, 3, 4}, std::vector<int64_t>{1}, 1, {2, 1, 4}},
    {{2, 3, 4}, std::vector<int64_t>{1}, 0, {2, 4}},
    {{2, 3, 4}, std::vector<int64_t>{0, 2}, 0, {3}},
    {{2, 3, 4}, std::vector<int64_t>{2, 0}, -1, {1, 3, 1}},
    {{2, 3, 4}, std::vector<int64_t>{-1}, 1, {2, 3, 1}},
    {{2, 3, 4}, std::vector<int64_t>{-3, -1}, 0, {3}},
    {{2, 3, 4}, std::nullopt, -1, {1, 1, 1}},
    {{2, 3, 4}, std::nullopt, 0, {}},
    {{2, 3, 4, 5}, std::vector<int64_t>{1, 3}, 1, {2, 1, 4, 1}},
    {{2, 3, 4, 5}, std::vector<int64_t>{0, 1, 2, 3}, 0, {}},
    {{7}, std::vector<int64_t>{0}, 0, {}},
    {{}, std::nullopt, -1, {}},
    {{2, 0, 3}, std::vector<int64_t>{2}, 1, {2, 0, 1}},
    {{2, 0, 3}, std::vector<int64_t>{1}, 1, {2, 1, 3}},  // reduces an empty axis
};

inline std::vector<int64_t> normalized_axes(const ReduceCase& c) {
  const int64_t rank = static_cast<int64_t>(c.in.size());
  std::vector<int64_t> axes;
  if (!c.axes || c.axes->empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  else
    for (int64_t a : *c.axes) axes.push_back(a < 0 ? a + rank : a);
  return axes;
}

// Expected output of reducing `x` over `axes` (normalized), shaped `out`.
inline Tensor naive_reduce(const Tensor& x, const std::vector<int64_t>& axes, const Shape& out,
                           NaiveReduce kind) {
  const int64_t rank = x.rank();
  const bool is_int = !dtype_is_float(x.dtype());
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) reduced[a] = true;
  // Output element strides over the *kept* axes only.
  Shape kept;
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d]) kept.push_back(x.dim(d));
  const int64_t n_out = shape_numel(out);
  EXPECT_EQ(n_out, shape_numel(kept));
  std::vector<double> acc(
      n_out, kind == NaiveReduce::kMax ? -std::numeric_limits<double>::infinity() : 0.0);
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d]) count *= x.dim(d);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t rem = i, o = 0, mul = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      const int64_t c = rem % x.dim(d);
      rem /= x.dim(d);
      if (!reduced[d]) {
        o += c * mul;
        mul *= x.dim(d);
      }
    }
    const double v = x.at_double(i);
    if (kind == NaiveReduce::kMax)
      acc[o] = std::max(acc[o], v);
    else
      acc[o] += kind == NaiveReduce::kL2 ? v * v : v;
  }
  if (kind == NaiveReduce::kL2)
    for (double& a : acc) a = is_int ? std::trunc(std::sqrt(a)) : std::sqrt(a);
  if (kind == NaiveReduce::kMean)
    for (double& a : acc) a = is_int ? (count ? std::trunc(a / count) : 0) : a / count;
  return make_tensor(x.dtype(), out, acc);
}

inline Attributes reduce_attrs(const ReduceCase& c, bool axes_attr) {
  Attributes a;
  if (axes_attr && c.axes) a.set("axes", *c.axes);
  if (c.keepdims >= 0) a.set("keepdims", c.keepdims);
  return a;
}

// Runs every case for every dtype. Axes go as an attribute, or as int64 input 1.
inline void check_reduce_cases(OpKind op, NaiveReduce kind, const std::vector<DataType>& dtypes,
                               bool axes_as_input) {
  uint32_t seed = 40;
  for (const ReduceCase& c : kReduceCases)
    for (DataType dt : dtypes) {
      // The max of nothing is -inf, which integer types cannot hold.
      bool empty_reduce = shape_numel(c.in) == 0 && shape_numel(c.want_out) > 0;
      if (empty_reduce && kind == NaiveReduce::kMax && !dtype_is_float(dt)) continue;
      SCOPED_TRACE(shape_str(c.in) + " keepdims=" + std::to_string(c.keepdims) + " " +
                   dtype_name(dt));
      const bool is_unsigned =
          dt == DataType::kUInt8 || dt == DataType::kUInt32 || dt == DataType::kUInt64;
      Tensor x = random_of(dt, c.in, ++seed, is_unsigned ? 0 : -50, 50);
      Tensor axes;
      std::vector<const Tensor*> ins = {&x};
      if (axes_as_input && c.axes) {
        axes = Tensor::from_int64s({static_cast<int64_t>(c.axes->size())}, *c.axes);
        ins.push_back(&axes);
      }
      Tensor want = naive_reduce(x, normalized_axes(c), c.want_out, kind);
      Tensor got = run_ok(op, reduce_attrs(c, !axes_as_input), ins);
      if (empty_reduce && kind == NaiveReduce::kMax) {
        // -inf everywhere; expect_near's |a - b| is NaN for equal infinities.
        ASSERT_EQ(got.shape(), want.shape());
        for (int64_t i = 0; i < got.numel(); ++i) EXPECT_EQ(got.at_double(i), -INFINITY);
      } else {
        expect_near(got, want, rtol_of(dt), rtol_of(dt));
      }
    }
}

// Errors shared by the Reduce ops, axes given the op's way.
inline void check_reduce_errors(OpKind op, bool axes_as_input) {
  Tensor x = random_of(DataType::kFloat32, {2, 3, 4}, 1);
  auto run_axes = [&](std::vector<int64_t> axes, const std::string& needle) {
    Attributes a;
    if (axes_as_input) {
      Tensor t = Tensor::from_int64s({static_cast<int64_t>(axes.size())}, axes);
      expect_error(op, a, {&x, &t}, needle);
    } else {
      a.set("axes", axes);
      expect_error(op, a, {&x}, needle);
    }
  };
  run_axes({3}, "axes entry 3 out of range for rank 3");
  run_axes({-4}, "out of range");
  run_axes({1, -2}, "repeats axis 1");
  Attributes keep;
  keep.set("keepdims", int64_t{2});
  expect_error(op, keep, {&x}, "keepdims must be 0 or 1");
  Tensor b = random_of(DataType::kBool, {2, 3}, 1);
  expect_error(op, {}, {&b}, "bool");
}

}  // namespace kiln::test
