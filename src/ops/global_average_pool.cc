// GlobalAveragePool: the mean of each (n, c) plane over all spatial dims of an (N, C, D1..Dn)
// input (n ≥ 1); the output is (N, C, 1, .., 1). It is a Reduce over the spatial axes, so
// the kernel is reduce.h's.

#include "ops/reduce.h"

namespace kiln {

namespace {

Status infer_global_average_pool(const Node& node, const std::vector<TensorDesc>& in,
                                 std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  KILN_ASSIGN_OR_RETURN(ReduceSpec spec, global_pool_spec(in[0], "GlobalAveragePool"));
  out[0] = {in[0].dtype, spec.out_shape};
  return Status::ok();
}

Status run_global_average_pool(const Node& node, const std::vector<const Tensor*>& in,
                               const std::vector<Tensor*>& out) {
  KILN_ASSIGN_OR_RETURN(ReduceSpec spec, global_pool_spec({in[0]->dtype(), in[0]->shape(), in[0]},
                                                          "GlobalAveragePool"));
  return run_reduce(ReduceKind::kMean, *in[0], spec, *out[0]);
}

}  // namespace

KILN_REGISTER_OP(GlobalAveragePool, infer_global_average_pool, run_global_average_pool);

}  // namespace kiln
