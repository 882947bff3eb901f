// Abs: y = |x|, floats and signed integers (|INT_MIN| wraps to INT_MIN, as numpy gives).

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status run_abs(const Node& node, const std::vector<const Tensor*>& in,
               const std::vector<Tensor*>& out) {
  return run_unary_signed(*in[0], *out[0], [](auto x) {
    return x < decltype(x){0} ? wrapping_sub(decltype(x){0}, x) : x;
  });
}

}  // namespace

KILN_REGISTER_OP(Abs, infer_unary_signed, run_abs);

}  // namespace kiln
