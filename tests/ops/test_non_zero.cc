// NonZero on random data (a third of the elements zero) against the multi-indices counted
// from the flat index, for several dtypes and ranks; a scalar; an all-zero input.
#include <random>

#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

// Random values of `dt` with about a third of them exactly zero.
Tensor sparse(DataType dt, const Shape& shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> pick(-4, 7);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (double& x : v) {
    const int r = pick(gen);
    x = r < 0 ? 0 : dt == DataType::kBool ? 1 : r + 0.5 * (dt == DataType::kFloat32);
  }
  return make_tensor(dt, shape, v);
}

TEST(NonZero, RandomDataGivesTheRowMajorIndices) {
  const Shape shapes[] = {{17}, {3, 5}, {2, 3, 4}, {2, 1, 3, 5}, {4, 0, 2}};
  uint32_t seed = 1;
  for (DataType dt : {DataType::kFloat32, DataType::kInt64, DataType::kUInt8, DataType::kBool})
    for (const Shape& s : shapes) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape_str(s));
      Tensor x = sparse(dt, s, seed++);
      // The expected columns: each nonzero flat index split into its coordinates.
      std::vector<std::vector<int64_t>> cols;
      for (int64_t f = 0; f < x.numel(); ++f) {
        if (x.at_double(f) == 0) continue;
        std::vector<int64_t> c(s.size());
        int64_t rest = f;
        for (size_t d = s.size(); d-- > 0;) {
          c[d] = rest % s[d];
          rest /= s[d];
        }
        cols.push_back(c);
      }
      const int64_t n = static_cast<int64_t>(cols.size());
      std::vector<int64_t> want(s.size() * cols.size());
      for (size_t j = 0; j < cols.size(); ++j)
        for (size_t d = 0; d < s.size(); ++d) want[d * cols.size() + j] = cols[j][d];
      Tensor got = run_ok(OpKind::NonZero, {}, {&x});
      ASSERT_EQ(got.dtype(), DataType::kInt64);
      ASSERT_EQ(got.shape(), (Shape{static_cast<int64_t>(s.size()), n}));
      EXPECT_EQ(got.to_int64s(), want);
    }
}

TEST(NonZero, ScalarsAndAllZeros) {
  Tensor one = make_tensor(DataType::kFloat32, {}, {2.5});
  EXPECT_EQ(run_ok(OpKind::NonZero, {}, {&one}).shape(), (Shape{0, 1}));
  Tensor zeros = make_tensor(DataType::kInt32, {2, 3}, {0, 0, 0, 0, 0, 0});
  EXPECT_EQ(run_ok(OpKind::NonZero, {}, {&zeros}).shape(), (Shape{2, 0}));
}

}  // namespace
}  // namespace kiln::test
