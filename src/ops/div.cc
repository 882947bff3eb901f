// Div: C = A / B with numpy broadcasting, any arithmetic dtype.
//
// Integers use C++ division, which truncates toward zero (the ONNX definition, unlike
// numpy's floor division for negative operands). An integer division by zero is an error
// (InvalidArgument "integer division by zero") rather than a crash or an arbitrary value;
// INT_MIN / -1 wraps to INT_MIN. Floats follow IEEE (x / 0 is ±inf or NaN).

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status infer_div(const Node& node, const std::vector<TensorDesc>& in,
                 std::vector<TensorDesc>& out) {
  return infer_binary_broadcast(in, out, kArithmeticTypes);
}

Status run_div(const Node& node, const std::vector<const Tensor*>& in,
               const std::vector<Tensor*>& out) {
  bool divided_by_zero = false;
  KILN_RETURN_IF_ERROR(run_binary_arithmetic(*in[0], *in[1], *out[0], [&](auto a, auto b) {
    using C = decltype(a);
    if constexpr (kIsIntType<C>) {
      if (b == C(0)) {
        divided_by_zero = true;
        return C(0);
      }
      // The one signed quotient that overflows (and traps on x86): min / -1.
      if constexpr (std::is_signed_v<C>)
        if (b == C(-1)) return wrapping_sub(C(0), a);
      return static_cast<C>(a / b);
    } else {
      return a / b;
    }
  }));
  if (divided_by_zero) return invalid_argument("integer division by zero");
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Div, infer_div, run_div);

}  // namespace kiln
