// What the importer's per-family normalizers (src/onnx/import_<family>.cc) work with.
//
// The importer turns each ONNX node into a NodeImport (inputs/outputs already resolved
// to Values, omitted ones nullptr, attributes converted) and, when a normalizer is
// registered for the node's op type, calls it before adding the node to the graph. A
// normalizer rewrites an older-opset form into the canonical one (attributes that became
// inputs turn into constant inputs, Upsample becomes Resize...). It either edits the
// NodeImport in place and lets the importer add it, or adds the nodes itself through the
// context and sets `emitted`.
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "kiln/status.h"

namespace kiln {

struct NodeImport {
  std::string name;     // unique among the graph's nodes
  std::string op_type;  // a normalizer may rename it (Upsample → Resize)
  std::vector<Value*> inputs;
  std::vector<Value*> outputs;
  Attributes attrs;
  bool emitted = false;  // the normalizer already added the node(s)

  Value* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  void set_input(size_t i, Value* v) {
    if (i >= inputs.size()) inputs.resize(i + 1, nullptr);
    inputs[i] = v;
  }
  // "node 'conv_3' (Conv)": the prefix of this node's errors.
  std::string describe() const { return "node '" + name + "' (" + op_type + ")"; }
};

class ImportContext {
 public:
  ImportContext(Graph& graph, int64_t opset) : graph_(graph), opset_(opset) {}

  Graph& graph() { return graph_; }
  // The model's default-domain opset version.
  int64_t opset() const { return opset_; }

  // A new constant Value whose name starts with `hint` (made unique).
  Value* constant(const std::string& hint, Tensor t) {
    return graph_.add_constant(hint, std::move(t));
  }
  // A new untyped intermediate Value whose name starts with `hint`.
  Value* temp(const std::string& hint) { return graph_.add_value(hint); }
  // A node name not used yet, starting with `hint`.
  std::string unique_node_name(const std::string& hint);
  // Adds a node under a unique name derived from `name`.
  Node* add_node(OpKind op, const std::string& name, std::vector<Value*> inputs,
                 std::vector<Value*> outputs, Attributes attrs = {});
  // The contents of `v` when known at import time: an initializer or the output of a
  // Constant node; nullptr otherwise.
  const Tensor* known_value(const Value* v) const;

 private:
  Graph& graph_;
  int64_t opset_;
  std::unordered_set<std::string> node_names_;
};

// A scalar or 1-D tensor of `dtype` (a float or integer type) holding `values`;
// `shape` empty for a scalar. Unsupported dtypes fall back to float32.
Tensor make_tensor_of(DataType dtype, const Shape& shape, const std::vector<double>& values);

// Turns the INTS attribute `attr` (when present) into an int64 1-D constant at input
// `index` and erases the attribute: the opset-13 form of Squeeze axes, Split split...
void ints_attr_to_input(ImportContext& ctx, NodeImport& node, const std::string& attr,
                        size_t index);

// The dtype of `v` when known (inferred, declared or constant), else `fallback`.
inline DataType dtype_or(const Value* v, DataType fallback) {
  return v && v->dtype != DataType::kUndefined ? v->dtype : fallback;
}

using NormalizeFn = Status (*)(ImportContext& ctx, NodeImport& node);

// Registers the normalizer of an ONNX op type; each op type has at most one.
bool register_normalizer(const char* op_type, NormalizeFn fn);
// nullptr when the op type needs no normalization.
NormalizeFn find_normalizer(std::string_view op_type);

}  // namespace kiln

// In src/onnx/import_<family>.cc:  KILN_REGISTER_IMPORT(Clip, normalize_clip);
#define KILN_REGISTER_IMPORT(op_type, fn)                               \
  [[maybe_unused]] static const bool kiln_import_registered_##op_type = \
      ::kiln::register_normalizer(#op_type, fn)
