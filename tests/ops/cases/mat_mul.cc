// MatMul: a Linear layer as transformers and ConvNeXt export it (A of rank 2 to 4 times a
// constant [K, N] matrix) with the fused bias [N], GELU, a residual; two activations (attention's
// Q·Kᵀ, batched, broadcast over a leading dim); a vector times a matrix; int8 Linear layers.
#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

// A of `a` times B of `b` (constant when `b_const`), with a bias [N] at input 2 when `bias`,
// a residual of the output's shape when `residual`, and `act`.
OpCase matmul(std::string name, const Shape& a, const Shape& b, uint32_t seed, bool b_const,
              bool bias = false, Activation act = Activation::kNone, bool residual = false,
              const Shape& out = {}) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::MatMul;
  c.inputs.push_back({random_tensor(a, seed)});
  c.inputs.push_back({random_tensor(b, seed + 1, -0.3f, 0.3f), b_const});
  if (bias) {
    c.inputs.push_back({random_tensor({b.back()}, seed + 2), true});
    c.epilogue.bias_input = 2;
  }
  if (residual) {
    c.epilogue.residual_input = static_cast<int>(c.inputs.size());
    c.inputs.push_back({random_tensor(out, seed + 3)});
  }
  c.epilogue.act = act;
  return c;
}

}  // namespace

KILN_OP_CASES(mat_mul) {
  return {
      matmul("linear_rank2", {8, 64}, {64, 48}, 950, true),
      matmul("linear_bias", {2, 7, 96}, {96, 384}, 954, true, true),
      matmul("linear_bias_gelu", {2, 3, 3, 96}, {96, 384}, 958, true, true, Activation::kGelu),
      matmul("linear_bias_residual", {2, 5, 64}, {64, 64}, 962, true, true, Activation::kNone, true,
             {2, 5, 64}),
      matmul("linear_relu_residual", {3, 32}, {32, 32}, 966, true, false, Activation::kRelu, true,
             {3, 32}),
      matmul("rank4_bias_residual_relu", {1, 7, 7, 32}, {32, 32}, 986, true, true,
             Activation::kRelu, true, {1, 7, 7, 32}),
      matmul("odd_sizes", {5, 13}, {13, 7}, 970, true),
      matmul("attention_scores", {2, 4, 9, 16}, {2, 4, 16, 9}, 974, false),
      matmul("broadcast_batch", {3, 6, 8}, {8, 5}, 978, false),
      matmul("vector_matrix", {24}, {24, 10}, 982, true),
      // int8 (fuse_int8_conv): B [K, N] on a grid per column.
      int8_layer(matmul("linear_rank2", {8, 64}, {64, 48}, 1950, true), 1, 0.9f / 127),
      int8_layer(
          matmul("linear_bias_gelu", {2, 3, 3, 96}, {96, 384}, 1958, true, true, Activation::kGelu),
          1, 1.f / 127),
      int8_layer(matmul("linear_bias_residual", {2, 5, 64}, {64, 64}, 1962, true, true,
                        Activation::kNone, true, {2, 5, 64}),
                 1, 1.f / 127),
  };
}

}  // namespace kiln::test
