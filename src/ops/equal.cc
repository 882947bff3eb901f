// Equal: C = (A == B) with numpy broadcasting; any numeric dtype incl. bool; C is bool.
// Half/BFloat16 compare as float, so +0 == -0 and NaN != NaN.

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status infer_equal(const Node& node, const std::vector<TensorDesc>& in,
                   std::vector<TensorDesc>& out) {
  return infer_binary_broadcast(in, out, kNumericTypes, DataType::kBool);
}

Status run_equal(const Node& node, const std::vector<const Tensor*>& in,
                 const std::vector<Tensor*>& out) {
  return dispatch_numeric(in[0]->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    map_binary<T, T, bool>(*in[0], *in[1], *out[0], [](auto a, auto b) { return a == b; });
    return Status::ok();
  });
}

}  // namespace

KILN_REGISTER_OP(Equal, infer_equal, run_equal);

}  // namespace kiln
