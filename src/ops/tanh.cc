// Tanh: y = tanh(x), float types.

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status run_tanh(const Node& node, const std::vector<const Tensor*>& in,
                const std::vector<Tensor*>& out) {
  return run_unary_float(*in[0], *out[0], [](auto x) { return std::tanh(x); });
}

}  // namespace

KILN_REGISTER_OP(Tanh, infer_unary_float, run_tanh);

}  // namespace kiln
