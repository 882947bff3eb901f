// fold_constants: a node whose inputs are all constants computes the same thing on every
// run, so it is run once here on the reference kernels and its outputs become constants.
// Shape of a value whose shape is fully static is folded too, which collapses the
// Shape → Gather → Concat → Reshape chains exporters write for flatten/reshape, and so is a
// Gather of the known dimensions of a shape that has unknown ones. Constant nodes become
// constant values.
#include <algorithm>

#include "ops/gather.h"
#include "ops/op_registry.h"
#include "ops/shape.h"
#include "passes/pass.h"

namespace kiln {

namespace {

// Folding trades run time for model size; a huge folded tensor (an Expand to a big
// shape, say) is better computed at run time.
constexpr int64_t kMaxFoldedBytes = int64_t{64} << 20;

// Shape(x) with x's shape static, honouring opset-15 start/end (clamped to [0, rank]).
bool fold_shape(const Node& n, Tensor* out) {
  Shape s;
  if (!n.input(0) || !n.input(0)->static_shape(&s)) return false;
  const auto [start, end] = shape_range(n, static_cast<int64_t>(s.size()));
  *out =
      Tensor::from_int64s({end - start}, std::vector<int64_t>(s.begin() + start, s.begin() + end));
  return true;
}

// Gather(Shape(x), constant indices) on axis 0 where every dimension it picks is known, though
// others (the batch) are not: ShuffleNet's exports compute channel counts and spatial sizes
// this way from tensors with a dynamic batch.
bool fold_shape_gather(const Node& n, Tensor* out) {
  const Value* data = n.input(0);
  const Value* idx = n.input(1);
  if (!data || !idx || !idx->is_constant() || gather_attrs(n).axis != 0) return false;
  if (idx->constant.dtype() != DataType::kInt64 && idx->constant.dtype() != DataType::kInt32)
    return false;
  const Node* shape = data->producer;
  if (!shape || shape->op != OpKind::Shape || !shape->input(0) || !shape->input(0)->has_shape)
    return false;
  const std::vector<Dim>& dims = shape->input(0)->dims;
  const auto [start, end] = shape_range(*shape, static_cast<int64_t>(dims.size()));
  const int64_t len = end - start;
  std::vector<int64_t> picked;
  for (int64_t i : idx->constant.to_int64s()) {
    if (i < -len || i >= len) return false;  // out of range: the kernel reports it at run time
    const Dim& d = dims[static_cast<size_t>(start + (i < 0 ? i + len : i))];
    if (!d.known()) return false;
    picked.push_back(d.value);
  }
  *out = Tensor::from_int64s(idx->constant.shape(), picked);
  return true;
}

bool foldable(const Graph& g, const Node& n) {
  // Dropout in training mode is random: never fold it.
  if (n.op == OpKind::Dropout) return false;
  bool any_output = false;
  for (const Value* o : n.outputs) {
    if (!o) continue;
    if (is_graph_output(g, o)) return false;  // graph outputs stay produced by a node
    any_output = true;
    Shape s;
    if (o->static_shape(&s) && o->dtype != DataType::kUndefined &&
        shape_numel(s) * static_cast<int64_t>(dtype_size(o->dtype)) > kMaxFoldedBytes)
      return false;
  }
  return any_output;
}

void make_constant(Value* v, Tensor t) {
  v->dtype = t.dtype();
  v->has_shape = true;
  v->dims.clear();
  for (int64_t d : t.shape()) v->dims.push_back({d, ""});
  v->constant = std::move(t);
}

}  // namespace

Result<bool> fold_constants(Graph& g) {
  KILN_RETURN_IF_ERROR(g.topo_sort());
  bool changed = false;
  std::vector<Node*> order;
  for (const auto& n : g.nodes()) order.push_back(n.get());
  // In topological order, so a chain folds in one sweep.
  for (Node* n : order) {
    if (!foldable(g, *n)) continue;
    std::vector<Tensor> out;
    if (n->op == OpKind::Shape) {
      out.resize(1);
      if (!fold_shape(*n, &out[0])) continue;
    } else if (n->op == OpKind::Gather && n->input(0) && !n->input(0)->is_constant()) {
      out.resize(1);
      if (!fold_shape_gather(*n, &out[0])) continue;
    } else {
      bool all_constant = true;
      std::vector<const Tensor*> in;
      for (const Value* v : n->inputs) {
        if (v && !v->is_constant()) all_constant = false;
        in.push_back(v ? &v->constant : nullptr);
      }
      if (!all_constant) continue;
      KILN_RETURN_IF_ERROR(run_reference(*n, in, out));
    }
    bool too_big = false;
    for (const Tensor& t : out)
      if (t.defined() && static_cast<int64_t>(t.nbytes()) > kMaxFoldedBytes) too_big = true;
    if (too_big) continue;
    std::vector<Value*> outputs = n->outputs;
    g.remove_node(n);
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i]) make_constant(outputs[i], std::move(out[i]));
    changed = true;
  }
  if (changed) g.remove_unused_values();
  return changed;
}

}  // namespace kiln
