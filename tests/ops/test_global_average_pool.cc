#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

// Naive: one mean per (n, c) plane of a contiguous (N, C, spatial...) tensor.
Tensor naive_global_average_pool(const Tensor& x) {
  const int64_t planes = x.dim(0) * x.dim(1), plane = x.numel() / std::max<int64_t>(planes, 1);
  Shape out = {x.dim(0), x.dim(1)};
  out.resize(x.rank(), 1);
  std::vector<double> y(planes);
  for (int64_t p = 0; p < planes; ++p) {
    double acc = 0.0;
    for (int64_t i = 0; i < plane; ++i) {
      double v = x.at_double(p * plane + i);
      acc += v;
    }
    y[p] = acc / static_cast<double>(plane);
  }
  return make_tensor(x.dtype(), out, y);
}

TEST(GlobalAveragePool, MatchesNaiveForRanksAndDtypes) {
  uint32_t seed = 30;
  for (DataType dt : kTestFloatTypes)
    for (const Shape& shape : {Shape{2, 3, 7}, Shape{2, 4, 5, 6}, Shape{1, 3, 2, 3, 4},
                               Shape{3, 2, 1, 1}, Shape{1, 1, 9, 1, 2, 2}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape_str(shape));
      Tensor x = random_of(dt, shape, ++seed);
      expect_near(run_ok(OpKind::GlobalAveragePool, {}, {&x}), naive_global_average_pool(x),
                  rtol_of(dt), rtol_of(dt));
    }
}

TEST(GlobalAveragePool, Errors) {
  Tensor x2 = random_of(DataType::kFloat32, {2, 3}, 1);
  expect_error(OpKind::GlobalAveragePool, {}, {&x2}, "rank ≥ 3");
  Tensor xi = random_of(DataType::kInt32, {1, 2, 3}, 1);
  expect_error(OpKind::GlobalAveragePool, {}, {&xi}, "int32");
  Tensor x = random_of(DataType::kFloat32, {1, 2, 3}, 1);
  expect_error(OpKind::GlobalAveragePool, {}, {&x, &x}, "inputs");
}

}  // namespace
}  // namespace kiln::test
