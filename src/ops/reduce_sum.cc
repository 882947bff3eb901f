// ReduceSum: the sum over the given axes. axes is optional input 1 (int64); absent or empty reduces
// all axes, or none when noop_with_empty_axes=1. keepdims default 1. The shared machinery is in
// reduce.h.

#include "ops/reduce.h"

namespace kiln {

namespace {

Status infer_reduce_sum(const Node& node, const std::vector<TensorDesc>& in,
                        std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 2));
  KILN_RETURN_IF_ERROR(check_reduce_dtype(ReduceKind::kSum, in[0].dtype));
  KILN_ASSIGN_OR_RETURN(ReduceSpec spec, reduce_spec_from_input(node, in));
  out[0] = {in[0].dtype, spec.out_shape};
  return Status::ok();
}

Status run_reduce_sum(const Node& node, const std::vector<const Tensor*>& in,
                      const std::vector<Tensor*>& out) {
  KILN_ASSIGN_OR_RETURN(ReduceSpec spec, reduce_spec_from_input(node, reduce_descs(in)));
  return run_reduce(ReduceKind::kSum, *in[0], spec, *out[0]);
}

}  // namespace

KILN_REGISTER_OP(ReduceSum, infer_reduce_sum, run_reduce_sum);

}  // namespace kiln
