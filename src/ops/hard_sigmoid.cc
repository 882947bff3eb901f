// HardSigmoid: y = max(0, min(1, alpha * x + beta)), float types; alpha 0.2, beta 0.5.

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status run_hard_sigmoid(const Node& node, const std::vector<const Tensor*>& in,
                        const std::vector<Tensor*>& out) {
  const float alpha = node.attrs.get_float("alpha", 0.2f);
  const float beta = node.attrs.get_float("beta", 0.5f);
  return run_unary_float(*in[0], *out[0], [&](auto x) {
    using C = decltype(x);
    return std::max(C(0), std::min(C(1), C(alpha) * x + C(beta)));
  });
}

}  // namespace

KILN_REGISTER_OP(HardSigmoid, infer_unary_float, run_hard_sigmoid);

}  // namespace kiln
