// HardSwish: y = x * max(0, min(1, x / 6 + 0.5)), float types.

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status run_hard_swish(const Node& node, const std::vector<const Tensor*>& in,
                      const std::vector<Tensor*>& out) {
  return run_unary_float(*in[0], *out[0], [](auto x) {
    using C = decltype(x);
    return x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5)));
  });
}

}  // namespace

KILN_REGISTER_OP(HardSwish, infer_unary_float, run_hard_swish);

}  // namespace kiln
