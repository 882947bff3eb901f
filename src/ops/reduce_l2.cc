// ReduceL2: sqrt(Σx²) over the given axes (Swin V2's cosine attention normalizes q and k with
// it). axes is an attribute through opset 17 (empty or absent: all axes), keepdims default 1.
// The shared machinery is in reduce.h.

#include "ops/reduce.h"

namespace kiln {

namespace {

Status infer_reduce_l2(const Node& node, const std::vector<TensorDesc>& in,
                       std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  KILN_RETURN_IF_ERROR(check_reduce_dtype(ReduceKind::kL2, in[0].dtype));
  KILN_ASSIGN_OR_RETURN(ReduceSpec spec, reduce_spec_from_attr(node, in[0].shape));
  out[0] = {in[0].dtype, spec.out_shape};
  return Status::ok();
}

Status run_reduce_l2(const Node& node, const std::vector<const Tensor*>& in,
                     const std::vector<Tensor*>& out) {
  KILN_ASSIGN_OR_RETURN(ReduceSpec spec, reduce_spec_from_attr(node, in[0]->shape()));
  return run_reduce(ReduceKind::kL2, *in[0], spec, *out[0]);
}

}  // namespace

KILN_REGISTER_OP(ReduceL2, infer_reduce_l2, run_reduce_l2);

}  // namespace kiln
