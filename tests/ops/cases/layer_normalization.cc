// LayerNormalization: ConvNeXt's channels-last rows, ViT's tokens, short and long rows, more
// than one normalized axis, scale broadcast over the normalized axes, no bias, the default
// axis, a single element, the Mean and InvStdDev outputs.
#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

// axis 99: the attribute absent (default -1).
OpCase ln(std::string name, const Shape& x, int64_t axis, const Shape& scale, uint32_t seed,
          bool bias = true, size_t outputs = 1) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::LayerNormalization;
  c.outputs = outputs;
  if (axis != 99) c.attrs.set("axis", axis);
  c.attrs.set("epsilon", 1e-6f);
  c.inputs.push_back({random_tensor(x, seed, -3.f, 3.f)});
  c.inputs.push_back({random_tensor(scale, seed + 1, 0.2f, 1.5f), true});
  if (bias) c.inputs.push_back({random_tensor(scale, seed + 2, -1.f, 1.f), true});
  return c;
}

}  // namespace

KILN_OP_CASES(layer_normalization) {
  return {
      ln("convnext", {2, 7, 7, 96}, 99, {96}, 800),
      ln("vit_tokens", {1, 14, 14, 384}, -1, {384}, 803),
      ln("wide_rows", {4, 1536}, 1, {1536}, 806),
      ln("short_rows", {3, 5, 13}, -1, {13}, 809),
      ln("two_axes", {3, 5, 13}, 1, {5, 13}, 812),
      ln("broadcast_scale", {2, 6, 4, 8}, 1, {1, 1, 8}, 815),
      ln("no_bias", {2, 6, 4, 8}, 2, {4, 8}, 818, false),
      ln("long_rows", {2, 3, 2056}, -1, {2056}, 821),
      ln("mean_and_inv_std_dev", {5, 40}, -1, {40}, 824, true, 3),
      ln("long_rows_mean", {2, 3, 2056}, -1, {2056}, 827, true, 2),
      ln("one_element", {1, 1}, 0, {1, 1}, 830),
  };
}

}  // namespace kiln::test
