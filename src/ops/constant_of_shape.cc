// ConstantOfShape: a tensor of the shape given by input 0 (1-D int64, known when the shape
// rule runs), every element the one value of the `value` attribute (default float32 0).

#include <cstring>

#include "ops/op_util.h"

namespace kiln {

namespace {

Result<Tensor> fill_value(const Node& node) {
  const Tensor* v = node.attrs.get_tensor("value");
  if (!v) return Tensor::from_floats({1}, {0.f});
  if (v->numel() != 1)
    return invalid_argument("attribute 'value' must hold one element, has " +
                            std::to_string(v->numel()));
  if (dtype_size(v->dtype()) == 0)
    return unsupported(std::string("ConstantOfShape of ") + dtype_name(v->dtype()));
  return *v;
}

Status infer_constant_of_shape(const Node& node, const std::vector<TensorDesc>& in,
                               std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  if (in[0].shape.size() != 1)
    return invalid_argument("input 0 (shape) must be 1-D, got " + shape_str(in[0].shape));
  KILN_ASSIGN_OR_RETURN(auto shape, known_int64s(in[0], "input 0 (shape)"));
  for (int64_t d : shape)
    if (d < 0) return invalid_argument("shape " + shape_str(shape) + " has a negative dimension");
  KILN_ASSIGN_OR_RETURN(Tensor v, fill_value(node));
  out[0] = {v.dtype(), Shape(shape.begin(), shape.end())};
  return Status::ok();
}

Status run_constant_of_shape(const Node& node, const std::vector<const Tensor*>& in,
                             const std::vector<Tensor*>& out) {
  KILN_ASSIGN_OR_RETURN(Tensor v, fill_value(node));
  const size_t es = dtype_size(v.dtype());
  auto* to = static_cast<std::byte*>(out[0]->raw());
  for (int64_t i = 0; i < out[0]->numel(); ++i) std::memcpy(to + i * es, v.raw(), es);
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(ConstantOfShape, infer_constant_of_shape, run_constant_of_shape);

}  // namespace kiln
