// Reduction normalization: ReduceSum < 13 took `axes` as an attribute; from 13 on it is
// input 1 (ReduceMean/ReduceMax keep the attribute through opset 17). TopK-1 took `k` as an
// attribute; from 10 on it is input 1, a one-element int64 tensor.

#include "onnx/import_context.h"

namespace kiln {

namespace {

Status normalize_reduce_sum(ImportContext& ctx, NodeImport& node) {
  if (ctx.opset() < 13) ints_attr_to_input(ctx, node, "axes", 1);
  return Status::ok();
}

Status normalize_top_k(ImportContext& ctx, NodeImport& node) {
  if (ctx.opset() >= 10) return Status::ok();
  if (!node.attrs.has("k")) return invalid_argument(node.describe() + ": needs a 'k' attribute");
  const int64_t k = node.attrs.get_int("k", 0);
  node.attrs.erase("k");
  node.set_input(1, ctx.constant(node.name + "/k", Tensor::from_int64s({1}, {k})));
  return Status::ok();
}

}  // namespace

KILN_REGISTER_IMPORT(ReduceSum, normalize_reduce_sum);
KILN_REGISTER_IMPORT(TopK, normalize_top_k);

}  // namespace kiln
