// Normalization of layer ops whose older opsets carry attributes kiln drops or moves:
// BatchNormalization (< 9 spatial/is_test), Dropout (< 12 ratio attribute → input),
// Gemm (< 7 broadcast).

#include "onnx/import_context.h"

namespace kiln {

namespace {

Status normalize_batch_norm(ImportContext& ctx, NodeImport& node) {
  if (ctx.opset() >= 9) return Status::ok();
  // spatial=0 (per-activation statistics, shape C×H×W) has no opset-9+ equivalent.
  if (node.attrs.get_int("spatial", 1) == 0)
    return unsupported(node.describe() +
                       ": spatial=0 (per-activation statistics) is not supported");
  node.attrs.erase("spatial");
  node.attrs.erase("is_test");
  return Status::ok();
}

Status normalize_dropout(ImportContext& ctx, NodeImport& node) {
  if (ctx.opset() >= 12) return Status::ok();
  node.attrs.erase("is_test");
  // Before opset 10 the mask had the data's type, not bool; nothing real reads it.
  if (ctx.opset() < 10 && node.outputs.size() > 1 && node.outputs[1])
    return unsupported(node.describe() +
                       ": the mask output of Dropout before opset 10 "
                       "(typed like the data) is not supported");
  if (node.attrs.has("ratio")) {
    float ratio = node.attrs.get_float("ratio", 0.5f);
    node.attrs.erase("ratio");
    node.set_input(1, ctx.constant(node.name + "/ratio", Tensor::from_floats({}, {ratio})));
  }
  return Status::ok();
}

Status normalize_gemm(ImportContext& ctx, NodeImport& node) {
  // Gemm < 7 said whether C broadcasts; from 7 on it always broadcasts unidirectionally,
  // which covers both settings.
  if (ctx.opset() < 7) node.attrs.erase("broadcast");
  return Status::ok();
}

}  // namespace

KILN_REGISTER_IMPORT(BatchNormalization, normalize_batch_norm);
KILN_REGISTER_IMPORT(Dropout, normalize_dropout);
KILN_REGISTER_IMPORT(Gemm, normalize_gemm);

}  // namespace kiln
