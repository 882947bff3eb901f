// Constant: every opset's value_* attribute becomes the one `value` Tensor attribute.

#include "onnx/import_context.h"

namespace kiln {

namespace {

Status normalize_constant(ImportContext& ctx, NodeImport& node) {
  for (const char* bad : {"sparse_value", "value_string", "value_strings"})
    if (node.attrs.has(bad))
      return unsupported(node.describe() + ": attribute '" + bad +
                         "' (sparse or string constants) is not supported");
  Tensor value;
  int count = 0;
  const Attributes& a = node.attrs;
  if (const Tensor* t = a.get_tensor("value")) value = *t, ++count;
  if (a.has("value_float")) {
    value = Tensor::from_floats({}, {a.get_float("value_float", 0)});
    ++count;
  }
  if (a.has("value_floats")) {
    std::vector<float> v = a.get_floats("value_floats");
    value = Tensor::from_floats({static_cast<int64_t>(v.size())}, v);
    ++count;
  }
  if (a.has("value_int")) {
    value = Tensor::from_int64s({}, {a.get_int("value_int", 0)});
    ++count;
  }
  if (a.has("value_ints")) {
    std::vector<int64_t> v = a.get_ints("value_ints");
    value = Tensor::from_int64s({static_cast<int64_t>(v.size())}, v);
    ++count;
  }
  if (count != 1)
    return invalid_argument(node.describe() + ": needs exactly one value attribute, has " +
                            std::to_string(count));
  node.attrs = Attributes();
  node.attrs.set("value", value);
  if (Value* out = node.outputs.empty() ? nullptr : node.outputs[0]) {
    out->dtype = value.dtype();
    out->has_shape = true;
    out->dims.clear();
    for (int64_t d : value.shape()) out->dims.push_back({d, ""});
  }
  return Status::ok();
}

}  // namespace

KILN_REGISTER_IMPORT(Constant, normalize_constant);

}  // namespace kiln
