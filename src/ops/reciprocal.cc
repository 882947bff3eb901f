// Reciprocal: y = 1 / x, float types (±inf at 0).

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status run_reciprocal(const Node& node, const std::vector<const Tensor*>& in,
                      const std::vector<Tensor*>& out) {
  return run_unary_float(*in[0], *out[0], [](auto x) { return decltype(x){1} / x; });
}

}  // namespace

KILN_REGISTER_OP(Reciprocal, infer_unary_float, run_reciprocal);

}  // namespace kiln
