// Flatten: [d0..dn-1] → [d0·…·d(axis-1), d(axis)·…·d(n-1)]. Data is moved unchanged.

#include <cstring>

#include "ops/op_util.h"

namespace kiln {

namespace {

Status infer_flatten(const Node& node, const std::vector<TensorDesc>& in,
                     std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  if (dtype_size(in[0].dtype) == 0)
    return unsupported(std::string("Flatten on ") + dtype_name(in[0].dtype));
  const Shape& s = in[0].shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  int64_t axis = node.attrs.get_int("axis", 1);
  // Unlike most axes, axis == rank is valid here (everything goes into the outer dim).
  if (axis < -rank || axis > rank)
    return invalid_argument("axis " + std::to_string(axis) + " out of range for rank " +
                            std::to_string(rank));
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= s[i];
  out[0] = {in[0].dtype, {outer, inner}};
  return Status::ok();
}

Status run_flatten(const Node& node, const std::vector<const Tensor*>& in,
                   const std::vector<Tensor*>& out) {
  if (out[0]->nbytes()) std::memcpy(out[0]->raw(), in[0]->raw(), out[0]->nbytes());
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Flatten, infer_flatten, run_flatten);

}  // namespace kiln
