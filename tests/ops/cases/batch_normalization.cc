// Standalone BatchNormalization (constant statistics): ranks 2 to 5, channel counts for every
// vector width (8, 4, 2 and odd), the default epsilon, and fuse_channel_affine's form (mean 0,
// var 1, epsilon 0, a Relu epilogue; rank 4 and rank 2).
#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

OpCase bn(std::string name, const Shape& x, uint32_t seed, float epsilon,
          bool affine_form = false) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::BatchNormalization;
  if (epsilon >= 0) c.attrs.set("epsilon", epsilon);
  const int64_t ch = x[1];
  c.inputs.push_back({random_tensor(x, seed, -2.f, 2.f)});
  c.inputs.push_back({random_tensor({ch}, seed + 1, 0.5f, 1.5f), true});
  c.inputs.push_back({random_tensor({ch}, seed + 2, -1.f, 1.f), true});
  if (affine_form) {
    c.inputs.push_back({Tensor::from_floats({ch}, std::vector<float>(ch, 0.f)), true});
    c.inputs.push_back({Tensor::from_floats({ch}, std::vector<float>(ch, 1.f)), true});
    c.epilogue.act = Activation::kRelu;
  } else {
    c.inputs.push_back({random_tensor({ch}, seed + 3, -0.5f, 0.5f), true});
    c.inputs.push_back({random_tensor({ch}, seed + 4, 0.1f, 2.f), true});
  }
  return c;
}

}  // namespace

KILN_OP_CASES(batch_normalization) {
  return {
      bn("odd", {2, 17, 9, 11}, 600, 1e-3f),
      bn("three_channels", {1, 3, 7, 5}, 605, 1e-3f),
      bn("eight_channels", {2, 8, 5, 5}, 615, 1e-3f),
      bn("four_channels", {1, 4, 3, 3}, 625, 1e-3f),
      bn("two_channels", {2, 2, 3, 5}, 635, 1e-3f),
      bn("vector_channels", {4, 64, 14, 14}, 610, 1e-3f),
      bn("rank2", {5, 12}, 620, 1e-3f),
      bn("rank3", {3, 6, 10}, 630, 1e-3f),
      bn("rank5", {1, 3, 2, 4, 5}, 640, 1e-3f),
      bn("pooled", {2, 16, 1, 1}, 650, 1e-3f),
      bn("default_epsilon", {2, 24, 6, 7}, 660, -1.f),
      bn("affine_relu", {2, 24, 6, 7}, 670, 0.f, true),
      bn("affine_relu_odd", {3, 13, 5, 4}, 680, 0.f, true),
      bn("affine_relu_rank2", {2, 16}, 690, 0.f, true),
  };
}

}  // namespace kiln::test
