// Exp: y = e^x, float types.

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status run_exp(const Node& node, const std::vector<const Tensor*>& in,
               const std::vector<Tensor*>& out) {
  return run_unary_float(*in[0], *out[0], [](auto x) { return std::exp(x); });
}

}  // namespace

KILN_REGISTER_OP(Exp, infer_unary_float, run_exp);

}  // namespace kiln
