// Constant: no inputs; the output is the node's `value` tensor attribute. The scalar and
// list forms (value_float, value_floats, value_int, value_ints) are accepted too;
// sparse_value and the string forms are unsupported.

#include <cstring>

#include "ops/elementwise.h"

namespace kiln {

namespace {

// The constant's tensor, built from whichever value attribute the node has.
Result<Tensor> constant_value(const Node& node) {
  const Attributes& a = node.attrs;
  if (const Tensor* t = a.get_tensor("value")) {
    if (t->dtype() == DataType::kString) return unsupported("string Constant");
    return *t;
  }
  if (a.has("value_float")) return Tensor::from_floats({}, {a.get_float("value_float", 0.f)});
  if (a.has("value_floats")) {
    std::vector<float> v = a.get_floats("value_floats");
    return Tensor::from_floats({static_cast<int64_t>(v.size())}, v);
  }
  if (a.has("value_int")) return Tensor::from_int64s({}, {a.get_int("value_int", 0)});
  if (a.has("value_ints")) {
    std::vector<int64_t> v = a.get_ints("value_ints");
    return Tensor::from_int64s({static_cast<int64_t>(v.size())}, v);
  }
  for (const char* name : {"sparse_value", "value_string", "value_strings"})
    if (a.has(name)) return unsupported(std::string("Constant with attribute '") + name + "'");
  return invalid_argument("missing attribute 'value'");
}

Status infer_constant(const Node& node, const std::vector<TensorDesc>& in,
                      std::vector<TensorDesc>& out) {
  if (!in.empty()) return invalid_argument("expected 0 inputs, got " + std::to_string(in.size()));
  KILN_ASSIGN_OR_RETURN(Tensor t, constant_value(node));
  // Only the `value` attribute outlives this call, so only it can be the known value.
  out[0] = {t.dtype(), t.shape(), node.attrs.get_tensor("value")};
  return Status::ok();
}

Status run_constant(const Node& node, const std::vector<const Tensor*>& in,
                    const std::vector<Tensor*>& out) {
  KILN_ASSIGN_OR_RETURN(Tensor t, constant_value(node));
  std::memcpy(out[0]->raw(), t.raw(), t.nbytes());
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Constant, infer_constant, run_constant);

}  // namespace kiln
