// LeakyRelu: y = x for x >= 0, alpha * x otherwise; float types; alpha 0.01.

#include "ops/activation_attrs.h"
#include "ops/elementwise.h"

namespace kiln {

namespace {

Status run_leaky_relu(const Node& node, const std::vector<const Tensor*>& in,
                      const std::vector<Tensor*>& out) {
  const float alpha = leaky_relu_attrs(node).alpha;
  return run_unary_float(*in[0], *out[0], [&](auto x) {
    using C = decltype(x);
    return x >= C(0) ? x : C(alpha) * x;
  });
}

}  // namespace

KILN_REGISTER_OP(LeakyRelu, infer_unary_float, run_leaky_relu);

}  // namespace kiln
