// Elementwise normalization: binary ops before opset 7 (broadcast/axis attributes → numpy
// broadcasting) and Cast before opset 6 (`to` was a type name string).

#include <onnx/onnx_pb.h>

#include "onnx/import_context.h"

namespace kiln {

namespace {

// Before opset 7, broadcast=1 aligned B with A starting at dimension `axis` (default: the
// trailing dimensions, which is numpy's rule). Other alignments become an Unsqueeze of B
// that appends the trailing 1s numpy broadcasting needs.
Status normalize_legacy_broadcast(ImportContext& ctx, NodeImport& node) {
  if (ctx.opset() >= 7) return Status::ok();
  bool broadcast = node.attrs.get_int("broadcast", 0) != 0;
  bool has_axis = node.attrs.has("axis");
  int64_t axis = node.attrs.get_int("axis", 0);
  node.attrs.erase("broadcast");
  node.attrs.erase("axis");
  if (!broadcast || !has_axis) return Status::ok();
  Value* a = node.input(0);
  Value* b = node.input(1);
  if (!a || !b) return invalid_argument(node.describe() + ": needs two inputs");
  if (!a->has_shape || !b->has_shape)
    return unsupported(node.describe() + ": broadcast with axis needs known input ranks");
  int64_t rank_a = static_cast<int64_t>(a->dims.size());
  int64_t rank_b = static_cast<int64_t>(b->dims.size());
  if (axis < 0) axis += rank_a;
  if (axis < 0 || axis + rank_b > rank_a)
    return invalid_argument(node.describe() + ": broadcast axis " + std::to_string(axis) +
                            " does not fit B of rank " + std::to_string(rank_b) +
                            " into A of rank " + std::to_string(rank_a));
  int64_t trailing = rank_a - axis - rank_b;
  if (trailing == 0) return Status::ok();
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < trailing; ++i) axes.push_back(rank_b + i);
  Value* axes_value = ctx.constant(node.name + "/axes", Tensor::from_int64s({trailing}, axes));
  Value* b2 = ctx.temp(b->name + "/aligned");
  b2->dtype = b->dtype;
  b2->has_shape = true;
  b2->dims = b->dims;
  for (int64_t i = 0; i < trailing; ++i) b2->dims.push_back({1, ""});
  ctx.add_node(OpKind::Unsqueeze, node.name + "/align_b", {b, axes_value}, {b2});
  node.inputs[1] = b2;
  return Status::ok();
}

Status normalize_cast(ImportContext& ctx, NodeImport& node) {
  if (ctx.opset() >= 6) return Status::ok();
  std::string to = node.attrs.get_string("to");
  if (to.empty()) return Status::ok();  // already an int (or absent: the checker catches it)
  onnx::TensorProto_DataType dt;
  if (!onnx::TensorProto_DataType_Parse(to, &dt))
    return invalid_argument(node.describe() + ": unknown type name '" + to + "' in 'to'");
  node.attrs.set("to", static_cast<int64_t>(dt));
  return Status::ok();
}

// CastLike(input, target_type) is Cast(input, to = dtype of target_type); only the
// second input's type matters, so it is dropped.
Status normalize_cast_like(ImportContext& ctx, NodeImport& node) {
  const Value* like = node.input(1);
  DataType to = dtype_or(like, DataType::kUndefined);
  if (to == DataType::kUndefined)
    return unsupported(node.describe() + ": the type of input 1 (target_type) is unknown");
  node.op_type = "Cast";
  node.inputs.resize(1);
  node.attrs.erase("saturate");
  node.attrs.set("to", static_cast<int64_t>(to));
  return Status::ok();
}

}  // namespace

KILN_REGISTER_IMPORT(CastLike, normalize_cast_like);
KILN_REGISTER_IMPORT(Add, normalize_legacy_broadcast);
KILN_REGISTER_IMPORT(Sub, normalize_legacy_broadcast);
KILN_REGISTER_IMPORT(Mul, normalize_legacy_broadcast);
KILN_REGISTER_IMPORT(Div, normalize_legacy_broadcast);
KILN_REGISTER_IMPORT(Pow, normalize_legacy_broadcast);
KILN_REGISTER_IMPORT(Equal, normalize_legacy_broadcast);
KILN_REGISTER_IMPORT(Cast, normalize_cast);

}  // namespace kiln
