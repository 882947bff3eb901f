// Einsum's reference kernel: the matmul, transpose and reduction forms against kiln's own
// MatMul, Transpose and hand-computed values; diagonals, the implicit output order, ellipsis
// broadcasting, integer dtypes; the errors an equation can earn.
#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

Attributes eq(const char* e) {
  Attributes a;
  a.set("equation", std::string(e));
  return a;
}

TEST(Einsum, BatchMatMulMatchesMatMul) {
  for (const char* e : {"bij,bjk->bik", "b i j , b j k -> b i k", "...ij,...jk->...ik"}) {
    SCOPED_TRACE(e);
    Tensor a = random_of(DataType::kFloat32, {3, 4, 5}, 1),
           b = random_of(DataType::kFloat32, {3, 5, 2}, 2);
    expect_near(run_ok(OpKind::Einsum, eq(e), {&a, &b}), run_ok(OpKind::MatMul, {}, {&a, &b}),
                1e-5);
  }
}

TEST(Einsum, EllipsisBroadcastsLikeMatMul) {
  Tensor a = random_of(DataType::kFloat32, {2, 1, 3, 4}, 3),
         b = random_of(DataType::kFloat32, {5, 4, 2}, 4);
  expect_near(run_ok(OpKind::Einsum, eq("...ij,...jk->...ik"), {&a, &b}),
              run_ok(OpKind::MatMul, {}, {&a, &b}), 1e-5);
}

// MaxViT's attention: q·kᵀ over heads and windows, then the weights times v.
TEST(Einsum, AttentionForms) {
  Tensor q = random_of(DataType::kFloat32, {1, 3, 2, 5, 4}, 5),
         k = random_of(DataType::kFloat32, {1, 3, 2, 6, 4}, 6);
  Tensor kt = run_ok(OpKind::Transpose,
                     [] {
                       Attributes a;
                       a.set("perm", std::vector<int64_t>{0, 1, 2, 4, 3});
                       return a;
                     }(),
                     {&k});
  Tensor s = run_ok(OpKind::Einsum, eq("BGHID,BGHJD->BGHIJ"), {&q, &k});
  expect_near(s, run_ok(OpKind::MatMul, {}, {&q, &kt}), 1e-5);
  Tensor v = random_of(DataType::kFloat32, {1, 3, 2, 6, 4}, 7);
  expect_near(run_ok(OpKind::Einsum, eq("BGHIJ,BGHJD->BGHID"), {&s, &v}),
              run_ok(OpKind::MatMul, {}, {&s, &v}), 1e-5, 1e-6);
}

TEST(Einsum, TransposeAndImplicitOrder) {
  Tensor x = random_of(DataType::kFloat32, {2, 3}, 8);
  Attributes perm;
  perm.set("perm", std::vector<int64_t>{1, 0});
  const Tensor t = run_ok(OpKind::Transpose, perm, {&x});
  expect_near(run_ok(OpKind::Einsum, eq("ij->ji"), {&x}), t, 0);
  expect_near(run_ok(OpKind::Einsum, eq("ba"), {&x}), t, 0);  // implicit: letters sorted
  expect_near(run_ok(OpKind::Einsum, eq("ab"), {&x}), x, 0);
}

TEST(Einsum, HandComputed) {
  Tensor m = make_tensor(DataType::kFloat32, {3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expect_near(run_ok(OpKind::Einsum, eq("ii->i"), {&m}),
              make_tensor(DataType::kFloat32, {3}, {1, 5, 9}), 0);
  expect_near(run_ok(OpKind::Einsum, eq("ii"), {&m}), make_tensor(DataType::kFloat32, {}, {15}), 0);
  expect_near(run_ok(OpKind::Einsum, eq("ij->"), {&m}), make_tensor(DataType::kFloat32, {}, {45}),
              0);
  expect_near(run_ok(OpKind::Einsum, eq("ij->i"), {&m}),
              make_tensor(DataType::kFloat32, {3}, {6, 15, 24}), 0);
  Tensor u = make_tensor(DataType::kFloat32, {3}, {1, 2, 3}),
         w = make_tensor(DataType::kFloat32, {3}, {4, 5, 6});
  expect_near(run_ok(OpKind::Einsum, eq("i,i"), {&u, &w}),
              make_tensor(DataType::kFloat32, {}, {32}), 0);
  expect_near(run_ok(OpKind::Einsum, eq("i,j->ij"), {&u, &w}),
              make_tensor(DataType::kFloat32, {3, 3}, {4, 5, 6, 8, 10, 12, 12, 15, 18}), 0);
  // Batch diagonal, and an ellipsis summed away by an explicit output without it.
  Tensor b = make_tensor(DataType::kFloat32, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expect_near(run_ok(OpKind::Einsum, eq("...ii->...i"), {&b}),
              make_tensor(DataType::kFloat32, {2, 2}, {1, 4, 5, 8}), 0);
  expect_near(run_ok(OpKind::Einsum, eq("...ij->j"), {&b}),
              make_tensor(DataType::kFloat32, {2}, {16, 20}), 0);
}

TEST(Einsum, IntegerAndHalfDtypes) {
  for (DataType dt : {DataType::kInt32, DataType::kInt64, DataType::kFloat16, DataType::kFloat64}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor a = random_of(dt, {2, 3, 4}, 9, -5, 5), b = random_of(dt, {2, 4, 3}, 10, -5, 5);
    expect_near(run_ok(OpKind::Einsum, eq("bij,bjk->bik"), {&a, &b}),
                run_ok(OpKind::MatMul, {}, {&a, &b}), dt == DataType::kFloat16 ? 1e-2 : 1e-9);
  }
}

TEST(Einsum, Errors) {
  Tensor a = random_of(DataType::kFloat32, {2, 3}, 11),
         b = random_of(DataType::kFloat32, {4, 5}, 12);
  expect_error(OpKind::Einsum, eq("ij,jk->ik"), {&a, &b}, "axis 0 of input 1 has size 4");
  expect_error(OpKind::Einsum, eq("ij->ik"), {&a}, "output letter 'k' is in no input");
  expect_error(OpKind::Einsum, eq("ij->ii"), {&a}, "output letter repeats");
  expect_error(OpKind::Einsum, eq("ij,jk->ik"), {&a}, "2 input terms for 1 inputs");
  expect_error(OpKind::Einsum, eq("ijk->i"), {&a}, "does not match term 0");
  expect_error(OpKind::Einsum, eq("i1->i"), {&a}, "character '1' is not a letter");
  expect_error(OpKind::Einsum, eq("..i->i"), {&a}, "'.' outside one '...'");
  expect_error(OpKind::Einsum, {}, {&a}, "attribute 'equation' is missing");
  Tensor c = random_of(DataType::kInt32, {3, 2}, 13);
  expect_error(OpKind::Einsum, eq("ij,jk->ik"), {&a, &c}, "expected float32");
}

}  // namespace
}  // namespace kiln::test
