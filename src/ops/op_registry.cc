#include "ops/op_registry.h"

#include <array>

#include "core/check.h"

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
  KILN_RETURN_IF_ERROR_CTX(def->infer(node, descs, out_descs), node.describe());
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
  return def->run(node, in, out_ptrs).with_context(node.describe());
}

}  // namespace kiln
