// Log: y = ln x, float types (−inf at 0, NaN below).

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status run_log(const Node& node, const std::vector<const Tensor*>& in,
               const std::vector<Tensor*>& out) {
  return run_unary_float(*in[0], *out[0], [](auto x) { return std::log(x); });
}

}  // namespace

KILN_REGISTER_OP(Log, infer_unary_float, run_log);

}  // namespace kiln
