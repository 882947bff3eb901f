// widen_float16: a model stored in float16 computes in float32 inside kiln, so that every
// kernel of every precision runs it and the engine's precision decides the arithmetic.
//
// The common float16 converters keep float32 inputs and outputs behind Casts and store every
// weight and value in between as float16 (half the file). Left as it is, such a graph reaches
// only the reference kernels on the CPU (oneDNN's float kernels and kiln's optimizer expect
// float32 weights), about ten times slower, and CUDA engines would compute it in whatever the
// values happen to be. Widened, an fp32 engine computes it in float32 (the stored weights
// exactly, float16 → float32 is exact) and an fp16 engine natively in float16 again, with the
// stored weights bit for bit (float32 → float16 of a widened value is exact).
//
//   - float16 constants (initializers, Constant and ConstantOfShape tensors) become float32;
//   - every float16 value inside the graph becomes float32;
//   - a Cast between float32 and float16 inside the graph becomes a no-op and is removed;
//   - a float16 graph input is read through Cast(to float32), a float16 graph output written
//     through Cast(to float16): the engine's inputs and outputs keep their declared dtypes.
//
// Graphs with a node whose attributes name float16 as the type to produce (RandomNormal's
// dtype, EyeLike...), other than Cast, are left as they are.
#include <algorithm>
#include <string>
#include <vector>

#include "core/half.h"
#include "passes/pass.h"

namespace kiln {

namespace {

constexpr int64_t kOnnxFloat = 1, kOnnxFloat16 = 10;

Tensor widened(const Tensor& t) {
  Tensor r(DataType::kFloat32, t.shape());
  load_floats(t.raw(), static_cast<size_t>(t.numel()), DataType::kFloat16, r.data<float>());
  return r;
}

// Whether a node other than Cast asks for float16 outputs by attribute: then the graph's
// types are not all the values', and widening would disagree with the node.
bool asks_for_float16(const Node& n) {
  if (n.op == OpKind::Cast) return false;
  for (const char* a : {"to", "dtype"})
    if (n.attrs.has(a) && n.attrs.get_int(a, 0) == kOnnxFloat16) return true;
  return false;
}

bool has_float16(const Graph& g) {
  for (const auto& v : g.values())
    if (v->dtype == DataType::kFloat16) return true;
  return false;
}

}  // namespace

Result<bool> widen_float16(Graph& g) {
  if (!has_float16(g)) return false;
  for (const auto& n : g.nodes())
    if (asks_for_float16(*n)) return false;
  // Constants, in values and in the tensors of Constant / ConstantOfShape nodes.
  for (const auto& n : g.nodes())
    for (const char* a : {"value"})
      if (const Tensor* t = n->attrs.get_tensor(a); t && t->dtype() == DataType::kFloat16)
        n->attrs.set(a, widened(*t));
  std::vector<Value*> inputs16, outputs16;
  for (const auto& v : g.values()) {
    if (v->dtype != DataType::kFloat16) continue;
    if (is_graph_input(g, v.get())) {
      inputs16.push_back(v.get());
      continue;
    }
    if (is_graph_output(g, v.get())) {
      outputs16.push_back(v.get());
      continue;
    }
    if (v->is_constant()) v->constant = widened(v->constant);
    v->dtype = DataType::kFloat32;
  }
  // Casts to float16 inside the graph now produce float32.
  for (const auto& n : g.nodes())
    if (n->op == OpKind::Cast && n->attrs.get_int("to", 0) == kOnnxFloat16 && n->output(0) &&
        n->output(0)->dtype == DataType::kFloat32)
      n->attrs.set("to", kOnnxFloat);
  // A float16 graph input feeds the graph through one Cast to float32.
  for (Value* in : inputs16) {
    std::vector<Node*> readers;
    for (Node* c : in->consumers)
      if (std::find(readers.begin(), readers.end(), c) == readers.end()) readers.push_back(c);
    if (readers.empty()) continue;
    Value* wide = g.add_value(in->name + "/float32");
    wide->dtype = DataType::kFloat32;
    wide->has_shape = in->has_shape;
    wide->dims = in->dims;
    Attributes to;
    to.set("to", kOnnxFloat);
    for (Node* r : readers)
      for (size_t i = 0; i < r->inputs.size(); ++i)
        if (r->inputs[i] == in) g.set_input(r, i, wide);
    g.add_node(OpKind::Cast, in->name + "/widen", {in}, {wide}, to);
  }
  // A float16 graph output is written through a Cast from the float32 its producer now makes.
  for (Value* out : outputs16) {
    Node* p = out->producer;
    if (!p || (p->op == OpKind::Cast && p->input(0) && p->input(0)->dtype == DataType::kFloat32))
      continue;  // a graph input passed through, or already a Cast from float32
    Value* wide = g.add_value(out->name + "/float32");
    wide->dtype = DataType::kFloat32;
    wide->has_shape = out->has_shape;
    wide->dims = out->dims;
    for (size_t i = 0; i < p->outputs.size(); ++i)
      if (p->outputs[i] == out) {
        p->outputs[i] = wide;
        wide->producer = p;
      }
    out->producer = nullptr;
    std::vector<Node*> readers = out->consumers;
    for (Node* r : readers)
      for (size_t i = 0; i < r->inputs.size(); ++i)
        if (r->inputs[i] == out) g.set_input(r, i, wide);
    Attributes to;
    to.set("to", kOnnxFloat16);
    g.add_node(OpKind::Cast, out->name + "/narrow", {wide}, {out}, to);
  }
  // Casts from float32 to float32 are no-ops: their readers read the input.
  std::vector<Node*> noops;
  for (const auto& n : g.nodes())
    if (n->op == OpKind::Cast && n->input(0) && n->output(0) &&
        n->input(0)->dtype == DataType::kFloat32 && n->output(0)->dtype == DataType::kFloat32)
      noops.push_back(n.get());
  for (Node* n : noops) bypass_node(g, n);
  KILN_RETURN_IF_ERROR(g.topo_sort());
  g.remove_unused_values();
  return true;
}

}  // namespace kiln
