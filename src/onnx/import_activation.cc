// Activation-family normalization: Clip (< 11 min/max attributes → inputs), PRelu (< 7
// per-channel slope → broadcastable shape) and Softmax (< 13 "coerce to 2-D" semantics →
// the opset-13 single-axis form).

#include <cfloat>

#include "onnx/import_context.h"

namespace kiln {

namespace {

Status normalize_clip(ImportContext& ctx, NodeImport& node) {
  if (ctx.opset() >= 11) return Status::ok();
  // Clip-6 bounds are attributes of the input's float type, defaulting to ±FLT_MAX:
  // only the given ones become inputs, an omitted bound stays unbounded.
  DataType dt = dtype_or(node.input(0), DataType::kFloat32);
  const char* names[] = {"min", "max"};
  for (int i = 0; i < 2; ++i) {
    if (!node.attrs.has(names[i])) continue;
    double v = node.attrs.get_float(names[i], 0);
    node.attrs.erase(names[i]);
    node.set_input(1 + i, ctx.constant(node.name + "/" + names[i], make_tensor_of(dt, {}, {v})));
  }
  return Status::ok();
}

// PRelu < 7 had no broadcasting rule; exporters (PyTorch) wrote a per-channel slope of
// shape [C] for data [N,C,...], Caffe2's meaning. Opset 7 broadcasts numpy-style from the
// right, so that slope becomes [C,1,...,1].
Status normalize_prelu(ImportContext& ctx, NodeImport& node) {
  if (ctx.opset() >= 7) return Status::ok();
  Value* x = node.input(0);
  Value* slope = node.input(1);
  if (!x || !slope || !x->has_shape || !slope->has_shape) return Status::ok();
  int64_t rank = static_cast<int64_t>(x->dims.size());
  if (slope->dims.size() != 1 || rank < 3) return Status::ok();
  const Dim& c = slope->dims[0];
  if (!c.known() || c.value == 1) return Status::ok();
  std::vector<int64_t> axes;
  for (int64_t i = 1; i <= rank - 2; ++i) axes.push_back(i);
  Value* axes_value = ctx.constant(node.name + "/axes",
                                   Tensor::from_int64s({static_cast<int64_t>(axes.size())}, axes));
  Value* per_channel = ctx.temp(slope->name + "/per_channel");
  per_channel->dtype = slope->dtype;
  per_channel->has_shape = true;
  per_channel->dims = {c};
  for (int64_t i = 1; i <= rank - 2; ++i) per_channel->dims.push_back({1, ""});
  ctx.add_node(OpKind::Unsqueeze, node.name + "/per_channel", {slope, axes_value}, {per_channel});
  node.inputs[1] = per_channel;
  return Status::ok();
}

// Softmax < 13 flattens the input to 2-D at `axis` (default 1) and normalizes each row.
// When axis is the last dimension that is the opset-13 softmax over that axis; otherwise
// it becomes Flatten(axis) → Softmax(axis=-1) → Reshape(to the input's shape).
Status normalize_softmax(ImportContext& ctx, NodeImport& node) {
  if (ctx.opset() >= 13) return Status::ok();
  Value* x = node.input(0);
  Value* y = node.outputs.empty() ? nullptr : node.outputs[0];
  if (!x || !y) return invalid_argument(node.describe() + ": needs one input and one output");
  int64_t axis = node.attrs.get_int("axis", 1);
  if (x->has_shape) {
    int64_t rank = static_cast<int64_t>(x->dims.size());
    if (axis < -rank || axis >= rank)
      return invalid_argument(node.describe() + ": axis " + std::to_string(axis) +
                              " out of range for rank " + std::to_string(rank));
    if (axis < 0) axis += rank;
    if (axis == rank - 1) {
      node.attrs.set("axis", int64_t{-1});
      return Status::ok();
    }
  }
  auto op = op_from_name(node.op_type);
  if (!op) return unsupported(node.describe() + ": op is not supported by kiln");

  Attributes flatten_attrs;
  flatten_attrs.set("axis", axis);
  Value* flat = ctx.temp(y->name + "/flat");
  flat->dtype = x->dtype;
  ctx.add_node(OpKind::Flatten, node.name + "/flatten", {x}, {flat}, flatten_attrs);

  Attributes softmax_attrs = node.attrs;
  softmax_attrs.set("axis", int64_t{-1});
  Value* soft = ctx.temp(y->name + "/2d");
  soft->dtype = x->dtype;
  ctx.add_node(*op, node.name, {flat}, {soft}, softmax_attrs);

  Value* shape = ctx.temp(y->name + "/shape");
  shape->dtype = DataType::kInt64;
  ctx.add_node(OpKind::Shape, node.name + "/shape", {x}, {shape});
  ctx.add_node(OpKind::Reshape, node.name + "/reshape", {soft, shape}, {y});
  node.emitted = true;
  return Status::ok();
}

}  // namespace

KILN_REGISTER_IMPORT(Clip, normalize_clip);
KILN_REGISTER_IMPORT(Softmax, normalize_softmax);
KILN_REGISTER_IMPORT(PRelu, normalize_prelu);

}  // namespace kiln
