// PRelu: y = x for x >= 0, slope * x otherwise. slope broadcasts to X's shape
// (unidirectional: Y always has X's shape); any arithmetic dtype, shared by X and slope.

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status infer_prelu(const Node& node, const std::vector<TensorDesc>& in,
                   std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(infer_binary_broadcast(in, out, kArithmeticTypes));
  if (out[0].shape != in[0].shape)
    return invalid_argument("slope shape " + shape_str(in[1].shape) +
                            " does not broadcast to X shape " + shape_str(in[0].shape));
  return Status::ok();
}

Status run_prelu(const Node& node, const std::vector<const Tensor*>& in,
                 const std::vector<Tensor*>& out) {
  return run_binary_arithmetic(*in[0], *in[1], *out[0], [](auto x, auto slope) {
    using C = decltype(x);
    return x < C(0) ? wrapping_mul(slope, x) : x;
  });
}

}  // namespace

KILN_REGISTER_OP(PRelu, infer_prelu, run_prelu);

}  // namespace kiln
