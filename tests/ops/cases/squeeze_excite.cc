// SqueezeExcite (kiln's own op, ops/squeeze_excite.h): the activations MobileNetV3 and
// EfficientNet use, omitted biases, a map large enough that the CUDA squeeze splits along H·W,
// channel counts that are no multiple of 8 or 32, and batches past one block of images.
#include "ops/squeeze_excite.h"

#include <string>

#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

OpCase se(std::string name, const Shape& x, int64_t r, Activation a1, Activation a2, bool biases,
          uint32_t seed) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::SqueezeExcite;
  SqueezeExciteAttrs a;
  a.squeeze = a1;
  a.excite = a2;
  if (a2 == Activation::kHardSigmoid) {
    a.excite_alpha = 1.f / 6.f;
    a.excite_beta = 0.5f;
  }
  set_squeeze_excite_attrs(a, &c.attrs);
  const int64_t ch = x[1];
  c.inputs.push_back({random_tensor(x, seed, -2.f, 2.f)});
  c.inputs.push_back({random_tensor({r, ch, 1, 1}, seed + 1, -0.5f, 0.5f), true});
  c.inputs.push_back({biases ? random_tensor({r}, seed + 2) : Tensor(), biases});
  c.inputs.push_back({random_tensor({ch, r, 1, 1}, seed + 3, -0.5f, 0.5f), true});
  c.inputs.push_back({biases ? random_tensor({ch}, seed + 4) : Tensor(), biases});
  return c;
}

}  // namespace

KILN_OP_CASES(squeeze_excite) {
  using A = Activation;
  uint32_t seed = 1600;
  return {
      se("silu_sigmoid", {2, 16, 5, 7}, 4, A::kSilu, A::kSigmoid, true, seed += 10),
      se("relu_hard_sigmoid", {3, 24, 4, 4}, 6, A::kRelu, A::kHardSigmoid, true, seed += 10),
      se("no_biases_no_squeeze_activation", {1, 8, 3, 3}, 2, A::kNone, A::kSigmoid, false,
         seed += 10),
      se("large_map", {2, 32, 40, 40}, 8, A::kSilu, A::kSigmoid, true, seed += 10),
      se("wide", {3, 120, 6, 6}, 30, A::kRelu, A::kHardSigmoid, true, seed += 10),
      se("odd_channels", {2, 13, 3, 5}, 5, A::kSilu, A::kSigmoid, true, seed += 10),
      se("batch_11", {11, 24, 2, 2}, 6, A::kSilu, A::kSigmoid, true, seed += 10),
      se("batch_37", {37, 8, 2, 3}, 3, A::kRelu, A::kSigmoid, true, seed += 10),
  };
}

}  // namespace kiln::test
