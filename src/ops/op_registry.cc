#include "ops/op_registry.h"

#include <array>

#include "core/check.h"
#include "core/half.h"

namespace kiln {

namespace {
std::array<OpDef, static_cast<size_t>(OpKind::kCount)>& table() {
  static std::array<OpDef, static_cast<size_t>(OpKind::kCount)> t{};
  return t;
}
}  // namespace

bool OpRegistry::add(OpKind op, OpDef def) {
  KILN_CHECK(op != OpKind::kCount && def.infer && def.run);
  KILN_CHECK(table()[static_cast<size_t>(op)].infer == nullptr);  // registered twice
  table()[static_cast<size_t>(op)] = def;
  return true;
}

const OpDef* OpRegistry::find(OpKind op) {
  if (op == OpKind::kCount) return nullptr;
  const OpDef& d = table()[static_cast<size_t>(op)];
  return d.infer ? &d : nullptr;
}

namespace {

template <class T>
std::vector<T> without_residual(const Node& node, const std::vector<T>& in) {
  std::vector<T> r = in;
  int k = node.epilogue.residual_input;
  if (k >= 0 && k < static_cast<int>(r.size())) r.erase(r.begin() + k);
  return r;
}

}  // namespace

Status infer_node(const OpDef& def, const Node& node, const std::vector<TensorDesc>& in,
                  std::vector<TensorDesc>& out) {
  if (node.epilogue.empty()) return def.infer(node, in, out);
  const int k = node.epilogue.residual_input;
  if (k >= static_cast<int>(in.size()) || (k >= 0 && !in[k].present()))
    return invalid_argument("epilogue residual input " + std::to_string(k) + " is missing");
  KILN_RETURN_IF_ERROR(def.infer(node, without_residual(node, in), out));
  if (out.empty() || !dtype_is_float(out[0].dtype))
    return unsupported("a fused epilogue needs a float output");
  if (k >= 0 && (in[k].shape != out[0].shape || in[k].dtype != out[0].dtype))
    return invalid_argument("epilogue residual " + std::string(dtype_name(in[k].dtype)) +
                            shape_str(in[k].shape) + " does not match the output " +
                            dtype_name(out[0].dtype) + shape_str(out[0].shape));
  return Status::ok();
}

Status run_node(const OpDef& def, const Node& node, const std::vector<const Tensor*>& in,
                const std::vector<Tensor*>& out) {
  if (node.epilogue.empty()) return def.run(node, in, out);
  KILN_RETURN_IF_ERROR(def.run(node, without_residual(node, in), out));
  const Epilogue& e = node.epilogue;
  Tensor& y = *out[0];
  const Tensor* r = e.residual_input >= 0 ? in[e.residual_input] : nullptr;
  for (int64_t i = 0; i < y.numel(); ++i) {
    // y = act(y + residual), computed in float (double for float64 would differ from every
    // backend's float epilogue only below float precision).
    float v = static_cast<float>(y.at_double(i));
    if (r) v += static_cast<float>(r->at_double(i));
    v = apply_activation(e.act, e.alpha, e.beta, v);
    switch (y.dtype()) {
      case DataType::kFloat32: y.data<float>()[i] = v; break;
      case DataType::kFloat64: y.data<double>()[i] = v; break;
      case DataType::kFloat16: y.data<uint16_t>()[i] = float_to_half_bits(v); break;
      case DataType::kBFloat16: y.data<uint16_t>()[i] = float_to_bf16_bits(v); break;
      default: return unsupported("a fused epilogue needs a float output");
    }
  }
  return Status::ok();
}

Status run_reference(const Node& node, const std::vector<const Tensor*>& in,
                     std::vector<Tensor>& out) {
  const OpDef* def = OpRegistry::find(node.op);
  if (!def) return unsupported(node.describe() + ": no reference kernel for " + op_name(node.op));
  std::vector<TensorDesc> descs(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i]) continue;
    descs[i] = {in[i]->dtype(), in[i]->shape(), in[i]};
  }
  std::vector<TensorDesc> out_descs(node.outputs.size());
  KILN_RETURN_IF_ERROR_CTX(infer_node(*def, node, descs, out_descs), node.describe());
  out.assign(node.outputs.size(), Tensor());
  std::vector<Tensor*> out_ptrs(node.outputs.size(), nullptr);
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (!node.outputs[i]) continue;
    if (!out_descs[i].present())
      return internal_error(node.describe() + ": shape rule gave no type for output " +
                            std::to_string(i));
    for (int64_t d : out_descs[i].shape)
      if (d < 0)
        return internal_error(node.describe() + ": shape rule gave a negative dimension " +
                              shape_str(out_descs[i].shape));
    out[i] = Tensor(out_descs[i].dtype, out_descs[i].shape);
    out_ptrs[i] = &out[i];
  }
  return run_node(*def, node, in, out_ptrs).with_context(node.describe());
}

}  // namespace kiln
