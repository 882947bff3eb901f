#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

struct GemmCase {
  // A constructor rather than an aggregate: the table below leaves trailing fields out.
  GemmCase(std::string name_, int64_t m_, int64_t k_, int64_t n_, int64_t trans_a_ = 0,
           int64_t trans_b_ = 0, float alpha_ = 1, float beta_ = 1,
           std::optional<Shape> c_ = std::nullopt)
      : name(std::move(name_)),
        m(m_),
        k(k_),
        n(n_),
        trans_a(trans_a_),
        trans_b(trans_b_),
        alpha(alpha_),
        beta(beta_),
        c(std::move(c_)) {}
  std::string name;
  int64_t m, k, n;
  int64_t trans_a, trans_b;
  float alpha, beta;       // integers, so the same case runs on integer dtypes
  std::optional<Shape> c;  // nullopt: no C input
};

// Y = alpha * A'B' + beta * C, in double, by coordinates.
Tensor naive_gemm(const GemmCase& g, const Tensor& a, const Tensor& b, const Tensor* c) {
  std::vector<double> y(g.m * g.n);
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double s = 0;
      for (int64_t k = 0; k < g.k; ++k)
        s += a.at_double(g.trans_a ? k * g.m + i : i * g.k + k) *
             b.at_double(g.trans_b ? j * g.k + k : k * g.n + j);
      y[i * g.n + j] = g.alpha * s;
      if (c) {
        // C broadcast to (M, N): missing leading dims and size-1 dims repeat.
        const Shape& cs = c->shape();
        int64_t ci = cs.size() == 2   ? (cs[0] == 1 ? 0 : i) * cs[1] + (cs[1] == 1 ? 0 : j)
                     : cs.size() == 1 ? (cs[0] == 1 ? 0 : j)
                                      : 0;
        y[i * g.n + j] += g.beta * c->at_double(ci);
      }
    }
  return make_tensor(a.dtype(), {g.m, g.n}, y);
}

TEST(Gemm, MatchesNaiveOnCasesAndDtypes) {
  const std::vector<GemmCase> cases = {
      {"plain", 3, 5, 4},
      {"transA", 3, 5, 4, 1, 0},
      {"transB", 3, 5, 4, 0, 1},
      {"both trans, alpha, beta, C (M,N)", 3, 5, 4, 1, 1, 3, -2, Shape{3, 4}},
      {"C (N)", 4, 6, 5, 0, 0, 1, 1, Shape{5}},
      {"C (1)", 4, 6, 5, 0, 1, 1, 2, Shape{1}},
      {"C scalar", 4, 6, 5, 1, 0, 2, 1, Shape{}},
      {"C (M,1)", 4, 6, 5, 0, 0, 1, 1, Shape{4, 1}},
      {"C (1,N)", 4, 6, 5, 1, 1, 1, 1, Shape{1, 5}},
      {"beta 0", 2, 3, 2, 0, 0, 1, 0, Shape{2, 2}},
      {"M=1", 1, 16, 8, 0, 1, 1, 1, Shape{8}},
      {"K=1", 5, 1, 3},
      {"N=1", 5, 7, 1, 1, 0},
      {"K=0 gives beta*C", 3, 0, 2, 0, 0, 1, 3, Shape{3, 2}},
      {"larger", 17, 33, 29, 0, 1, 1, 1, Shape{29}},
  };
  const std::vector<DataType> dtypes = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                                        DataType::kBFloat16, DataType::kInt32,   DataType::kInt64};
  uint32_t seed = 70;
  for (const GemmCase& g : cases)
    for (DataType dt : dtypes) {
      SCOPED_TRACE(g.name + " " + dtype_name(dt));
      Tensor a = random_of(dt, g.trans_a ? Shape{g.k, g.m} : Shape{g.m, g.k}, ++seed);
      Tensor b = random_of(dt, g.trans_b ? Shape{g.n, g.k} : Shape{g.k, g.n}, ++seed);
      Tensor c = g.c ? random_of(dt, *g.c, ++seed) : Tensor();
      Attributes attrs;
      if (g.trans_a) attrs.set("transA", g.trans_a);
      if (g.trans_b) attrs.set("transB", g.trans_b);
      if (g.alpha != 1) attrs.set("alpha", g.alpha);
      if (g.beta != 1) attrs.set("beta", g.beta);
      std::vector<const Tensor*> ins = {&a, &b};
      if (g.c) ins.push_back(&c);
      // float32 and narrower accumulate in float: allow K rounding steps of slack.
      const double tol = dt == DataType::kFloat32 ? 1e-5 : rtol_of(dt);
      expect_near(run_ok(OpKind::Gemm, attrs, ins), naive_gemm(g, a, b, g.c ? &c : nullptr), tol,
                  tol);
    }
}

TEST(Gemm, OmittedCIsLikeNoC) {
  Tensor a = random_of(DataType::kFloat32, {2, 3}, 1);
  Tensor b = random_of(DataType::kFloat32, {3, 4}, 2);
  GemmCase g{"", 2, 3, 4};
  expect_near(run_ok(OpKind::Gemm, {}, {&a, &b, nullptr}), naive_gemm(g, a, b, nullptr), 1e-6,
              1e-6);
}

TEST(Gemm, Errors) {
  Tensor a = random_of(DataType::kFloat32, {2, 3}, 1);
  Tensor b = random_of(DataType::kFloat32, {3, 4}, 2);
  Tensor b_bad = random_of(DataType::kFloat32, {2, 4}, 2);
  Tensor a3 = random_of(DataType::kFloat32, {1, 2, 3}, 1);
  Tensor c_bad = random_of(DataType::kFloat32, {3, 4}, 3);
  Tensor c_rank3 = random_of(DataType::kFloat32, {1, 2, 4}, 3);
  Tensor b64 = random_of(DataType::kFloat64, {3, 4}, 2);
  Tensor ai8 = random_of(DataType::kInt8, {2, 3}, 1);
  Tensor ai = random_of(DataType::kInt32, {2, 3}, 1);
  Tensor bi = random_of(DataType::kInt32, {3, 4}, 1);
  expect_error(OpKind::Gemm, {}, {&a, &b_bad}, "inner dimensions differ");
  Attributes trans;
  trans.set("transB", int64_t{1});
  expect_error(OpKind::Gemm, trans, {&a, &b}, "(transposed)");
  expect_error(OpKind::Gemm, {}, {&a3, &b}, "input 0: expected rank 2");
  expect_error(OpKind::Gemm, {}, {&a, &b, &c_bad}, "does not broadcast to [2,4]");
  expect_error(OpKind::Gemm, {}, {&a, &b, &c_rank3}, "does not broadcast");
  expect_error(OpKind::Gemm, {}, {&a, &b64}, "input 1: expected float32, got float64");
  expect_error(OpKind::Gemm, {}, {&ai8, &b}, "int8");
  Attributes half;
  half.set("alpha", 0.5f);
  expect_error(OpKind::Gemm, half, {&ai, &bi}, "non-integer alpha");
  expect_error(OpKind::Gemm, {}, {&a}, "inputs");
}

}  // namespace
}  // namespace kiln::test
