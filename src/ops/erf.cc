// Erf: y = erf(x) = 2/√π ∫₀ˣ e^(-t²) dt, float types (GELU's exact form in exported models:
// x · 0.5 · (1 + erf(x / √2))).

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status run_erf(const Node& node, const std::vector<const Tensor*>& in,
               const std::vector<Tensor*>& out) {
  return run_unary_float(*in[0], *out[0], [](auto x) { return std::erf(x); });
}

}  // namespace

KILN_REGISTER_OP(Erf, infer_unary_float, run_erf);

}  // namespace kiln
