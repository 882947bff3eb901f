// Softplus: y = ln(exp(x) + 1), float types.

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status run_softplus(const Node& node, const std::vector<const Tensor*>& in,
                    const std::vector<Tensor*>& out) {
  // Written as max(x, 0) + log1p(exp(-|x|)) so exp never overflows for large x.
  return run_unary_float(*in[0], *out[0], [](auto x) {
    using C = decltype(x);
    return std::max(x, C(0)) + std::log1p(std::exp(-std::fabs(x)));
  });
}

}  // namespace

KILN_REGISTER_OP(Softplus, infer_unary_float, run_softplus);

}  // namespace kiln
