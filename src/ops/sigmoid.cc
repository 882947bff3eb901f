// Sigmoid: y = 1 / (1 + exp(-x)), float types.

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status run_sigmoid(const Node& node, const std::vector<const Tensor*>& in,
                   const std::vector<Tensor*>& out) {
  // Two branches so exp never overflows: for x < 0, exp(x) / (1 + exp(x)).
  return run_unary_float(*in[0], *out[0], [](auto x) {
    using C = decltype(x);
    if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
    const C e = std::exp(x);
    return e / (C(1) + e);
  });
}

}  // namespace

KILN_REGISTER_OP(Sigmoid, infer_unary_float, run_sigmoid);

}  // namespace kiln
