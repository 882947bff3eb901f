// Identity: Y = X (a copy), any numeric dtype. Sequence and optional types are not tensors
// and never reach kiln's IR.

#include <cstring>

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status infer_identity(const Node& node, const std::vector<TensorDesc>& in,
                      std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  KILN_RETURN_IF_ERROR(expect_dtype(in, 0, kNumericTypes));
  out[0] = {in[0].dtype, in[0].shape, in[0].value};
  return Status::ok();
}

Status run_identity(const Node& node, const std::vector<const Tensor*>& in,
                    const std::vector<Tensor*>& out) {
  std::memcpy(out[0]->raw(), in[0]->raw(), in[0]->nbytes());
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Identity, infer_identity, run_identity);

}  // namespace kiln
