// Floor: y = ⌊x⌋, float types.

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status run_floor(const Node& node, const std::vector<const Tensor*>& in,
                 const std::vector<Tensor*>& out) {
  return run_unary_float(*in[0], *out[0], [](auto x) { return std::floor(x); });
}

}  // namespace

KILN_REGISTER_OP(Floor, infer_unary_float, run_floor);

}  // namespace kiln
