// Neg: y = −x, floats and signed integers (integers wrap: −INT_MIN is INT_MIN, as numpy
// and ONNX Runtime give).

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status run_neg(const Node& node, const std::vector<const Tensor*>& in,
               const std::vector<Tensor*>& out) {
  return run_unary_signed(*in[0], *out[0], [](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>)
      return -x;  // −0 for 0, as IEEE negation gives
    else
      return wrapping_sub(decltype(x){0}, x);
  });
}

}  // namespace

KILN_REGISTER_OP(Neg, infer_unary_signed, run_neg);

}  // namespace kiln
