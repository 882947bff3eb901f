// kiln's IR: a Graph owns Values (tensors) and Nodes (ops). It knows no device.
//
// Values carry a dtype and a shape whose dimensions may be symbolic ("batch") or unknown;
// a Value with a defined `constant` is an initializer or a folded constant. Nodes refer to
// Values by pointer; a nullptr input or output is an omitted optional one (ONNX's "").
// The graph keeps producer/consumer links up to date through its mutators, so passes
// must edit edges through Graph, not by writing Node::inputs directly.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/attributes.h"
#include "ir/epilogue.h"
#include "ir/op_kind.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

class Node;

struct Dim {
  int64_t value = -1;  // ≥ 0 when known
  std::string param;   // symbolic name when value < 0 ("batch", "N"); may be empty
  bool known() const { return value >= 0; }
};

class Value {
 public:
  std::string name;
  DataType dtype = DataType::kUndefined;
  bool has_shape = false;  // rank known
  std::vector<Dim> dims;
  Tensor constant;  // defined for initializers and constants
  // Marked by build_engine after the passes (passes do not maintain it): backends that
  // store values in a layout of their own keep graph outputs in the logical one.
  bool is_graph_output = false;

  Node* producer = nullptr;
  std::vector<Node*> consumers;  // one entry per use (a node using it twice appears twice)

  int id() const { return id_; }
  bool is_constant() const { return constant.defined(); }
  // The shape when every dimension is known.
  bool static_shape(Shape* out) const;
  std::string shape_string() const;  // "[batch,3,224,224]", "[?]" for unknown rank

 private:
  friend class Graph;
  int id_ = -1;
};

class Node {
 public:
  std::string name;
  OpKind op = OpKind::kCount;
  std::vector<Value*> inputs;
  std::vector<Value*> outputs;
  Attributes attrs;
  // Fused work on the output (set by the epilogue-fusion pass on Conv/Gemm/MatMul...);
  // a residual input, if any, is one of `inputs` (see epilogue.h).
  Epilogue epilogue;

  int id() const { return id_; }
  // Input i, or nullptr when absent/omitted.
  Value* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  Value* output(size_t i) const { return i < outputs.size() ? outputs[i] : nullptr; }
  // "node 'conv_12' (Conv)": the prefix errors about this node carry.
  std::string describe() const;

 private:
  friend class Graph;
  int id_ = -1;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  std::string name;
  int64_t opset = 0;  // the model's default-domain opset
  // The model's metadata_props (key → value), e.g. "kiln.mean" / "kiln.std" for the
  // input normalization a model was trained with.
  std::map<std::string, std::string> metadata;

  // Creates a Value with a unique name (a suffix is added if `name` is taken).
  Value* add_value(const std::string& name);
  Value* add_constant(const std::string& name, Tensor t);
  Value* find_value(const std::string& name) const;
  // Appends a node and links producers/consumers. Outputs must not have a producer yet.
  Node* add_node(OpKind op, const std::string& name, std::vector<Value*> inputs,
                 std::vector<Value*> outputs, Attributes attrs = {});
  // Unlinks and deletes a node; its outputs stay as values without producer.
  void remove_node(Node* node);
  void set_input(Node* node, size_t i, Value* v);
  // Every use of `from` (node inputs and graph outputs) now reads `to`.
  void replace_all_uses(Value* from, Value* to);
  // Deletes values nothing produces, consumes or exposes (and that are not graph inputs).
  void remove_unused_values();

  // Reorders nodes so producers come before consumers; fails on a cycle.
  Status topo_sort();

  std::vector<Value*>& inputs() { return inputs_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  std::vector<Value*>& outputs() { return outputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  // One more than the largest value id, for tables indexed by Value::id().
  int value_id_limit() const { return next_value_id_; }

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  int next_value_id_ = 0;
  int next_node_id_ = 0;
};

// Structural checks: every edge is linked both ways, every node input is a graph input, a
// constant or produced by an earlier node, every value has at most one producer, graph
// outputs are produced. Runs after every pass in tests and debug builds.
Status verify_graph(const Graph& g);

// A node's op, attributes, epilogue and which inputs are constants, without names or shapes:
// part of the keys under which kernel timings are cached.
std::string node_signature(const Node& n);
// Human-readable dump, one node per line.
std::string print_graph(const Graph& g);

}  // namespace kiln
