// Add: C = A + B with numpy broadcasting, any arithmetic dtype; integers wrap around.

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status infer_add(const Node& node, const std::vector<TensorDesc>& in,
                 std::vector<TensorDesc>& out) {
  return infer_binary_broadcast(in, out, kArithmeticTypes);
}

Status run_add(const Node& node, const std::vector<const Tensor*>& in,
               const std::vector<Tensor*>& out) {
  return run_binary_arithmetic(*in[0], *in[1], *out[0],
                               [](auto a, auto b) { return wrapping_add(a, b); });
}

}  // namespace

KILN_REGISTER_OP(Add, infer_add, run_add);

}  // namespace kiln
