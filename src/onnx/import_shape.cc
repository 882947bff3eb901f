// Shape-family normalization: attributes that later opsets turned into inputs become
// constant inputs (Split split < 13, Squeeze/Unsqueeze axes < 13, Slice starts/ends/axes
// < 10, Pad pads/value < 11, Reshape shape < 5), and Concat < 4's default axis is made
// explicit.

#include "onnx/import_context.h"

namespace kiln {

namespace {

Status normalize_split(ImportContext& ctx, NodeImport& node) {
  if (ctx.opset() < 13) ints_attr_to_input(ctx, node, "split", 1);
  return Status::ok();
}

Status normalize_squeeze(ImportContext& ctx, NodeImport& node) {
  if (ctx.opset() < 13) ints_attr_to_input(ctx, node, "axes", 1);
  return Status::ok();
}

Status normalize_slice(ImportContext& ctx, NodeImport& node) {
  if (ctx.opset() >= 10) return Status::ok();
  if (!node.attrs.has("starts") || !node.attrs.has("ends"))
    return invalid_argument(node.describe() + ": needs 'starts' and 'ends' attributes");
  ints_attr_to_input(ctx, node, "starts", 1);
  ints_attr_to_input(ctx, node, "ends", 2);
  ints_attr_to_input(ctx, node, "axes", 3);
  return Status::ok();
}

// Pad-1 named the attribute `paddings`, Pad-2 `pads`; both hold [begin..., end...] like the
// opset-11 input. The fill `value` becomes the constant_value input in the data's type.
Status normalize_pad(ImportContext& ctx, NodeImport& node) {
  if (ctx.opset() >= 11) return Status::ok();
  const char* pads_name = node.attrs.has("pads") ? "pads" : "paddings";
  if (!node.attrs.has(pads_name))
    return invalid_argument(node.describe() + ": needs a 'pads' attribute");
  std::vector<int64_t> pads = node.attrs.get_ints(pads_name);
  node.attrs.erase(pads_name);
  node.set_input(1, ctx.constant(node.name + "/pads",
                                 Tensor::from_int64s({static_cast<int64_t>(pads.size())}, pads)));
  if (node.attrs.has("value")) {
    double value = node.attrs.get_float("value", 0);
    node.attrs.erase("value");
    DataType dt = dtype_or(node.input(0), DataType::kFloat32);
    node.set_input(2, ctx.constant(node.name + "/value", make_tensor_of(dt, {}, {value})));
  }
  return Status::ok();
}

Status normalize_reshape(ImportContext& ctx, NodeImport& node) {
  if (ctx.opset() < 5) ints_attr_to_input(ctx, node, "shape", 1);
  return Status::ok();
}

Status normalize_concat(ImportContext& ctx, NodeImport& node) {
  if (ctx.opset() < 4 && !node.attrs.has("axis")) node.attrs.set("axis", int64_t{1});
  return Status::ok();
}

}  // namespace

KILN_REGISTER_IMPORT(Split, normalize_split);
KILN_REGISTER_IMPORT(Squeeze, normalize_squeeze);
KILN_REGISTER_IMPORT(Unsqueeze, normalize_squeeze);
KILN_REGISTER_IMPORT(Slice, normalize_slice);
KILN_REGISTER_IMPORT(Pad, normalize_pad);
KILN_REGISTER_IMPORT(Reshape, normalize_reshape);
KILN_REGISTER_IMPORT(Concat, normalize_concat);

}  // namespace kiln
