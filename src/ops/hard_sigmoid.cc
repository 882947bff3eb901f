// HardSigmoid: y = max(0, min(1, alpha * x + beta)), float types; alpha 0.2, beta 0.5.

#include "ops/activation_attrs.h"
#include "ops/elementwise.h"

namespace kiln {

namespace {

Status run_hard_sigmoid(const Node& node, const std::vector<const Tensor*>& in,
                        const std::vector<Tensor*>& out) {
  const HardSigmoidAttrs a = hard_sigmoid_attrs(node);
  const float alpha = a.alpha, beta = a.beta;
  return run_unary_float(*in[0], *out[0], [&](auto x) {
    using C = decltype(x);
    return std::max(C(0), std::min(C(1), C(alpha) * x + C(beta)));
  });
}

}  // namespace

KILN_REGISTER_OP(HardSigmoid, infer_unary_float, run_hard_sigmoid);

}  // namespace kiln
