// TopK on random data against a full sort of each slice (value, then index), along every axis,
// largest and smallest, with ties and NaNs; k of 0 and of the whole axis; bad k refused.
#include <algorithm>
#include <cmath>
#include <random>

#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

// The expected values and indices by sorting (key, index) pairs of each slice along `axis`.
void expect_top_k(const Tensor& x, int64_t axis, int64_t k, bool largest) {
  SCOPED_TRACE("axis " + std::to_string(axis) + " k " + std::to_string(k) +
               (largest ? " largest" : " smallest"));
  const Shape& s = x.shape();
  Attributes a;
  a.set("axis", axis);
  a.set("largest", int64_t{largest});
  Tensor kt = Tensor::from_int64s({1}, {k});
  auto out = run_op(OpKind::TopK, a, {&x, &kt}, 2);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const int64_t ax = axis < 0 ? axis + static_cast<int64_t>(s.size()) : axis;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < ax; ++d) outer *= s[d];
  for (size_t d = ax + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t n = s[ax];
  Shape os = s;
  os[ax] = k;
  ASSERT_EQ((*out)[0].shape(), os);
  ASSERT_EQ((*out)[1].shape(), os);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      // Key: NaN beyond every number; ties by the lower index.
      std::vector<std::pair<double, int64_t>> v;
      for (int64_t j = 0; j < n; ++j) {
        double e = x.at_double((o * n + j) * inner + i);
        const double key = std::isnan(e) ? INFINITY : e;  // the data holds no infinity
        v.push_back({largest ? -key : key, j});
      }
      std::sort(v.begin(), v.end());
      for (int64_t j = 0; j < k; ++j) {
        const int64_t at = (o * k + j) * inner + i;
        const int64_t want_index = v[j].second;
        EXPECT_EQ((*out)[1].to_int64s()[at], want_index) << "slice " << o << "," << i;
        const double want = x.at_double((o * n + want_index) * inner + i);
        const double got = (*out)[0].at_double(at);
        EXPECT_TRUE(got == want || (std::isnan(got) && std::isnan(want))) << got << " vs " << want;
      }
    }
}

TEST(TopK, RandomDataMatchesAFullSort) {
  std::mt19937 gen(3);
  for (DataType dt : {DataType::kFloat32, DataType::kInt64, DataType::kFloat16}) {
    // Values from a small set, so ties are common.
    std::uniform_int_distribution<int> pick(-6, 6);
    const Shape s = {3, 7, 5};
    std::vector<double> v(static_cast<size_t>(shape_numel(s)));
    for (double& e : v) e = pick(gen) * (dt == DataType::kInt64 ? 1 : 0.25);
    Tensor x = make_tensor(dt, s, v);
    for (int64_t axis : {0, 1, 2, -1})
      for (bool largest : {true, false})
        for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{3}})
          expect_top_k(x, axis, std::min(k, s[axis < 0 ? 2 : axis]), largest);
    expect_top_k(x, 1, 7, true);
  }
  Tensor nan = make_tensor(DataType::kFloat32, {6}, {1, NAN, -2, 5, NAN, 0});
  expect_top_k(nan, 0, 6, true);
  Tensor two = Tensor::from_int64s({1}, {2});
  Tensor want_first = run_ok(OpKind::TopK, {}, {&nan, &two});
  EXPECT_TRUE(std::isnan(want_first.at_double(0)) && std::isnan(want_first.at_double(1)));
}

TEST(TopK, BadKIsRefused) {
  Tensor x = random_tensor({2, 4}, 5);
  Tensor big = Tensor::from_int64s({1}, {5}), neg = Tensor::from_int64s({1}, {-1});
  Tensor two = Tensor::from_int64s({2}, {1, 1});
  expect_error(OpKind::TopK, {}, {&x, &big}, "k = 5 is outside 0 to 4", 2);
  expect_error(OpKind::TopK, {}, {&x, &neg}, "k = -1", 2);
  expect_error(OpKind::TopK, {}, {&x, &two}, "must hold one value", 2);
  Tensor s = make_tensor(DataType::kFloat32, {}, {1});
  Tensor one = Tensor::from_int64s({1}, {1});
  expect_error(OpKind::TopK, {}, {&s, &one}, "scalar", 2);
}

}  // namespace
}  // namespace kiln::test
