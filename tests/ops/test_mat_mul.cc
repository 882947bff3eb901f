#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

// numpy.matmul in double: 1-D operands promoted (and the added dim dropped by reshaping to
// the hand-written `out`), batch dims broadcast by coordinates.
Tensor naive_mat_mul(const Tensor& a, const Tensor& b, const Shape& out) {
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  const size_t batch_rank = std::max(as.size(), bs.size()) - 2;
  // Left-pad both to the same rank with 1s; batch dim = the non-1 one.
  as.insert(as.begin(), batch_rank + 2 - as.size(), 1);
  bs.insert(bs.begin(), batch_rank + 2 - bs.size(), 1);
  Shape batch(batch_rank);
  for (size_t d = 0; d < batch_rank; ++d) batch[d] = as[d] == 1 ? bs[d] : as[d];
  std::vector<double> y(shape_numel(batch) * m * n);
  for (int64_t bi = 0; bi < shape_numel(batch); ++bi) {
    int64_t a_off = 0, b_off = 0, rem = bi, a_mul = 1, b_mul = 1;
    for (int64_t d = static_cast<int64_t>(batch_rank) - 1; d >= 0; --d) {
      const int64_t c = rem % batch[d];
      rem /= batch[d];
      a_off += (as[d] == 1 ? 0 : c) * a_mul;
      b_off += (bs[d] == 1 ? 0 : c) * b_mul;
      a_mul *= as[d];
      b_mul *= bs[d];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t kk = 0; kk < k; ++kk)
          s += a.at_double(a_off * m * k + i * k + kk) * b.at_double(b_off * k * n + kk * n + j);
        y[(bi * m + i) * n + j] = s;
      }
  }
  return make_tensor(a.dtype(), out, y);
}

TEST(MatMul, MatchesNaiveOnShapesAndDtypes) {
  struct Case {
    Shape a, b, out;  // out by hand
  };
  const std::vector<Case> cases = {
      {{2, 3}, {3, 4}, {2, 4}},
      {{3}, {3, 4}, {4}},
      {{2, 3}, {3}, {2}},
      {{3}, {3}, {}},
      {{2, 2, 3}, {3, 4}, {2, 2, 4}},
      {{3, 4}, {5, 4, 2}, {5, 3, 2}},
      {{2, 1, 3, 4}, {5, 4, 2}, {2, 5, 3, 2}},
      {{4}, {2, 4, 3}, {2, 3}},
      {{2, 3, 4}, {4}, {2, 3}},
      {{3, 1, 2, 5}, {1, 4, 5, 6}, {3, 4, 2, 6}},
      {{1, 5}, {5, 1}, {1, 1}},
      {{0, 3}, {3, 4}, {0, 4}},
      {{2, 0}, {0, 3}, {2, 3}},
      {{0, 2, 3}, {3, 2}, {0, 2, 2}},
      {{16, 40}, {40, 24}, {16, 24}},
  };
  const std::vector<DataType> dtypes = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                                        DataType::kBFloat16, DataType::kInt32,   DataType::kInt64,
                                        DataType::kUInt32,   DataType::kUInt64};
  uint32_t seed = 80;
  for (const Case& c : cases)
    for (DataType dt : dtypes) {
      SCOPED_TRACE(shape_str(c.a) + " x " + shape_str(c.b) + " " + dtype_name(dt));
      const bool is_unsigned = dt == DataType::kUInt32 || dt == DataType::kUInt64;
      Tensor a = random_of(dt, c.a, ++seed, is_unsigned ? 0 : -4, 4);
      Tensor b = random_of(dt, c.b, ++seed, is_unsigned ? 0 : -4, 4);
      const double tol = dt == DataType::kFloat32 ? 1e-5 : rtol_of(dt);
      expect_near(run_ok(OpKind::MatMul, {}, {&a, &b}), naive_mat_mul(a, b, c.out), tol, tol);
    }
}

TEST(MatMul, HandComputed) {
  Tensor a = make_tensor(DataType::kFloat32, {2, 2}, {1, 2, 3, 4});
  Tensor b = make_tensor(DataType::kFloat32, {2, 2}, {5, 6, 7, 8});
  expect_near(run_ok(OpKind::MatMul, {}, {&a, &b}),
              make_tensor(DataType::kFloat32, {2, 2}, {19, 22, 43, 50}), 0);
}

TEST(MatMul, Errors) {
  Tensor a = random_of(DataType::kFloat32, {2, 3}, 1);
  Tensor b = random_of(DataType::kFloat32, {4, 2}, 2);
  expect_error(OpKind::MatMul, {}, {&a, &b}, "inner dimensions differ: [2,3] × [4,2]");
  Tensor ba = random_of(DataType::kFloat32, {2, 2, 3}, 1);
  Tensor bb = random_of(DataType::kFloat32, {3, 3, 4}, 2);
  expect_error(OpKind::MatMul, {}, {&ba, &bb}, "do not broadcast");
  Tensor s = random_of(DataType::kFloat32, {}, 1);
  expect_error(OpKind::MatMul, {}, {&s, &a}, "rank ≥ 1");
  Tensor b64 = random_of(DataType::kFloat64, {3, 2}, 2);
  expect_error(OpKind::MatMul, {}, {&a, &b64}, "input 1: expected float32, got float64");
  Tensor i8 = random_of(DataType::kInt8, {2, 3}, 1);
  expect_error(OpKind::MatMul, {}, {&i8, &i8}, "int8");
}

}  // namespace
}  // namespace kiln::test
