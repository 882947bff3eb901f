// Reduction normalization: ReduceSum < 13 took `axes` as an attribute; from 13 on it is
// input 1 (ReduceMean/ReduceMax keep the attribute through opset 17).

#include "onnx/import_context.h"

namespace kiln {

namespace {

Status normalize_reduce_sum(ImportContext& ctx, NodeImport& node) {
  if (ctx.opset() < 13) ints_attr_to_input(ctx, node, "axes", 1);
  return Status::ok();
}

}  // namespace

KILN_REGISTER_IMPORT(ReduceSum, normalize_reduce_sum);

}  // namespace kiln
