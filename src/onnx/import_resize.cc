// Resize-family normalization to the opset-13 Resize(X, roi, scales, sizes).
//
// Upsample (every version) and Resize-10 compute output = floor(input · scale) and sample
// with x_in = x_out / scale: that is coordinate_transformation_mode "asymmetric", and their
// nearest mode takes the floor (ONNX's Resize 10→11 converter sets the same two
// attributes). Upsample-1's "bilinear" is Resize's "linear".
// Resize ≥ 11 keeps its form; empty roi/scales constants (how "omitted" was written before
// optional inputs could be left out) become omitted inputs, and roi is dropped unless the
// coordinate mode, tf_crop_and_resize, reads it.

#include "onnx/import_context.h"

namespace kiln {

namespace {

void set_legacy_modes(NodeImport& node) {
  std::string mode = node.attrs.get_string("mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  node.attrs.set("mode", mode);
  node.attrs.set("coordinate_transformation_mode", std::string("asymmetric"));
  if (mode == "nearest") node.attrs.set("nearest_mode", std::string("floor"));
}

Status normalize_upsample(ImportContext& ctx, NodeImport& node) {
  Value* scales = node.input(1);
  if (node.attrs.has("scales")) {  // Upsample-7
    std::vector<float> s = node.attrs.get_floats("scales");
    node.attrs.erase("scales");
    scales = ctx.constant(node.name + "/scales",
                          Tensor::from_floats({static_cast<int64_t>(s.size())}, s));
  } else if (node.attrs.has("height_scale") || node.attrs.has("width_scale")) {  // Upsample-1
    Value* x = node.input(0);
    if (!x || !x->has_shape || x->dims.size() != 4)
      return unsupported(node.describe() + ": Upsample-1 needs a 4-D input of known rank");
    float h = node.attrs.get_float("height_scale", 1), w = node.attrs.get_float("width_scale", 1);
    node.attrs.erase("height_scale");
    node.attrs.erase("width_scale");
    scales = ctx.constant(node.name + "/scales", Tensor::from_floats({4}, {1, 1, h, w}));
  }
  if (!scales) return invalid_argument(node.describe() + ": no scales");
  set_legacy_modes(node);
  node.op_type = "Resize";
  node.inputs = {node.input(0), nullptr, scales};
  return Status::ok();
}

Status normalize_resize(ImportContext& ctx, NodeImport& node) {
  if (ctx.opset() < 11) {  // Resize-10: (X, scales)
    set_legacy_modes(node);
    node.inputs = {node.input(0), nullptr, node.input(1)};
    return Status::ok();
  }
  auto empty = [&](size_t i) {
    const Tensor* t = ctx.known_value(node.input(i));
    return t && t->numel() == 0;
  };
  if (node.input(1) && (empty(1) || node.attrs.get_string("coordinate_transformation_mode",
                                                          "half_pixel") != "tf_crop_and_resize"))
    node.inputs[1] = nullptr;
  if (node.input(2) && empty(2)) node.inputs[2] = nullptr;
  if (node.input(3) && empty(3)) node.inputs[3] = nullptr;
  return Status::ok();
}

}  // namespace

KILN_REGISTER_IMPORT(Upsample, normalize_upsample);
KILN_REGISTER_IMPORT(Resize, normalize_resize);

}  // namespace kiln
