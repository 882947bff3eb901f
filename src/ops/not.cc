// Not: elementwise logical negation of a bool tensor.

#include "ops/op_util.h"

namespace kiln {

namespace {

Status infer_not(const Node& node, const std::vector<TensorDesc>& in,
                 std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  if (in[0].dtype != DataType::kBool)
    return invalid_argument(std::string("input 0: expected bool, got ") + dtype_name(in[0].dtype));
  out[0] = {DataType::kBool, in[0].shape};
  return Status::ok();
}

Status run_not(const Node& node, const std::vector<const Tensor*>& in,
               const std::vector<Tensor*>& out) {
  const auto* x = static_cast<const uint8_t*>(in[0]->raw());
  auto* y = static_cast<uint8_t*>(out[0]->raw());
  for (int64_t i = 0; i < in[0]->numel(); ++i) y[i] = x[i] ? 0 : 1;
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Not, infer_not, run_not);

}  // namespace kiln
