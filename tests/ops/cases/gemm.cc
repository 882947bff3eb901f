// Gemm: a Linear layer (B transposed, bias [N]) with each epilogue a classifier head or an MLP
// fuses (Relu, Clip, a residual), B not transposed, A transposed, alpha and beta, a [M, N] and
// a [1, N] and a scalar C, no C (also with a residual), one row (batch 1) and a wide K; int8
// (fuse_int8_conv) Linear layers, B transposed or not.
#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

// A [M, K] (or [K, M] with trans_a) times constant B [N, K] (trans_b) or [K, N], plus C of
// `c_shape` (empty: no C).
OpCase gemm(std::string name, int64_t m, int64_t k, int64_t n, uint32_t seed, bool trans_b = true,
            const Shape& c_shape = {-1}, Activation act = Activation::kNone, bool residual = false,
            bool trans_a = false, float alpha = 1.f, float beta = 1.f) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::Gemm;
  if (trans_a) c.attrs.set("transA", int64_t{1});
  if (trans_b) c.attrs.set("transB", int64_t{1});
  if (alpha != 1.f) c.attrs.set("alpha", alpha);
  if (beta != 1.f) c.attrs.set("beta", beta);
  c.inputs.push_back({random_tensor(trans_a ? Shape{k, m} : Shape{m, k}, seed)});
  c.inputs.push_back(
      {random_tensor(trans_b ? Shape{n, k} : Shape{k, n}, seed + 1, -0.3f, 0.3f), true});
  const Shape cs = c_shape == Shape{-1} ? Shape{n} : c_shape;
  if (cs != Shape{0}) c.inputs.push_back({random_tensor(cs, seed + 2), true});
  if (residual) {  // after C, or at C's place when there is none (as fuse_epilogue adds it)
    c.epilogue.residual_input = static_cast<int>(c.inputs.size());
    c.inputs.push_back({random_tensor({m, n}, seed + 3)});
  }
  c.epilogue.act = act;
  if (act == Activation::kClip) {
    c.epilogue.alpha = 0.f;
    c.epilogue.beta = 6.f;
  }
  return c;
}

// oneDNN's inner product adds a bias [N] only: another C runs on the reference kernel.
OpCase on_reference(OpCase c) {
  c.onednn_reference = "oneDNN's inner product takes a C of [N] only";
  return c;
}

}  // namespace

KILN_OP_CASES(gemm) {
  return {
      gemm("linear", 4, 64, 32, 900),
      gemm("linear_relu", 3, 96, 40, 904, true, {-1}, Activation::kRelu),
      gemm("linear_clip", 2, 48, 24, 908, true, {-1}, Activation::kClip),
      gemm("residual_relu", 5, 32, 32, 912, true, {-1}, Activation::kRelu, true),
      gemm("b_not_transposed", 6, 40, 17, 916, false),
      gemm("a_transposed", 7, 24, 12, 920, true, {-1}, Activation::kNone, false, true),
      gemm("alpha_beta", 4, 32, 16, 924, true, {-1}, Activation::kNone, false, false, 0.5f, 2.f),
      on_reference(gemm("c_matrix", 3, 16, 10, 928, true, {3, 10})),
      on_reference(gemm("c_scalar", 3, 16, 10, 932, true, {})),
      gemm("no_c", 2, 20, 9, 936, true, {0}),
      gemm("c_row", 4, 33, 17, 948, true, {1, 17}),
      gemm("sigmoid", 2, 12, 7, 952, true, {-1}, Activation::kSigmoid),
      gemm("residual_no_c", 2, 8, 5, 956, false, {0}, Activation::kNone, true),
      gemm("one_row", 1, 512, 100, 940),
      gemm("wide_k", 2, 2048, 64, 944),
      // int8 (fuse_int8_conv): inputs uniform in [-1, 1), a scale of 0.9 / 127 saturates the
      // largest tenth; the weights per output channel (B's rows with transB, else columns).
      int8_layer(gemm("linear", 4, 64, 32, 1900), 0, 0.9f / 127),
      int8_layer(gemm("linear_relu", 3, 96, 40, 1904, true, {-1}, Activation::kRelu), 0, 1.f / 127),
      int8_layer(gemm("residual_relu", 5, 32, 32, 1912, true, {-1}, Activation::kRelu, true), 0,
                 1.f / 127),
      int8_layer(gemm("b_not_transposed", 6, 40, 17, 1916, false), 1, 0.8f / 127),
      int8_layer(gemm("no_c", 2, 20, 9, 1936, true, {0}), 0, 1.f / 127),
      int8_layer(gemm("classifier", 2, 2048, 1000, 1944), 0, 1.f / 127),
  };
}

}  // namespace kiln::test
