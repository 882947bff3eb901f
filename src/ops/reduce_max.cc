// ReduceMax: the largest element over the given axes (NaN propagates). axes is an attribute (empty
// or absent: all axes), keepdims default 1. The shared machinery is in reduce.h.

#include "ops/reduce.h"

namespace kiln {

namespace {

Status infer_reduce_max(const Node& node, const std::vector<TensorDesc>& in,
                        std::vector<TensorDesc>& out) {
  return infer_reduce_attr_axes(ReduceKind::kMax, node, in, out);
}

Status run_reduce_max(const Node& node, const std::vector<const Tensor*>& in,
                      const std::vector<Tensor*>& out) {
  return run_reduce_attr_axes(ReduceKind::kMax, node, in, out);
}

}  // namespace

KILN_REGISTER_OP(ReduceMax, infer_reduce_max, run_reduce_max);

}  // namespace kiln
