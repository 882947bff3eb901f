// Ceil: y = ⌈x⌉, float types.

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status run_ceil(const Node& node, const std::vector<const Tensor*>& in,
                const std::vector<Tensor*>& out) {
  return run_unary_float(*in[0], *out[0], [](auto x) { return std::ceil(x); });
}

}  // namespace

KILN_REGISTER_OP(Ceil, infer_unary_float, run_ceil);

}  // namespace kiln
