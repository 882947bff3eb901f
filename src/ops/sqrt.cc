// Sqrt: y = sqrt(x), float types (NaN for x < 0).

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status run_sqrt(const Node& node, const std::vector<const Tensor*>& in,
                const std::vector<Tensor*>& out) {
  return run_unary_float(*in[0], *out[0], [](auto x) { return std::sqrt(x); });
}

}  // namespace

KILN_REGISTER_OP(Sqrt, infer_unary_float, run_sqrt);

}  // namespace kiln
