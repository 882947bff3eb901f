// ReduceL2: sqrt(Σx²) over the given axes (Swin V2's cosine attention normalizes q and k with
// it). axes is an attribute through opset 17 (empty or absent: all axes), keepdims default 1.
// The shared machinery is in reduce.h.

#include "ops/reduce.h"

namespace kiln {

namespace {

Status infer_reduce_l2(const Node& node, const std::vector<TensorDesc>& in,
                       std::vector<TensorDesc>& out) {
  return infer_reduce_attr_axes(ReduceKind::kL2, node, in, out);
}

Status run_reduce_l2(const Node& node, const std::vector<const Tensor*>& in,
                     const std::vector<Tensor*>& out) {
  return run_reduce_attr_axes(ReduceKind::kL2, node, in, out);
}

}  // namespace

KILN_REGISTER_OP(ReduceL2, infer_reduce_l2, run_reduce_l2);

}  // namespace kiln
