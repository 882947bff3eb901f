#include "ir/graph.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/check.h"

namespace kiln {

bool Value::static_shape(Shape* out) const {
  if (!has_shape) return false;
  Shape s;
  for (const Dim& d : dims) {
    if (!d.known()) return false;
    s.push_back(d.value);
  }
  if (out) *out = std::move(s);
  return true;
}

std::string Value::shape_string() const {
  if (!has_shape) return "[?]";
  std::string r = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) r += ",";
    r += dims[i].known() ? std::to_string(dims[i].value)
                         : (dims[i].param.empty() ? "?" : dims[i].param);
  }
  return r + "]";
}

std::string Node::describe() const {
  return "node '" + name + "' (" + op_name(op) + ")";
}

Value* Graph::add_value(const std::string& name) {
  auto v = std::make_unique<Value>();
  v->name = name;
  if (find_value(name) != nullptr) {
    for (int i = 1;; ++i) {
      std::string candidate = name + "__" + std::to_string(i);
      if (!find_value(candidate)) {
        v->name = candidate;
        break;
      }
    }
  }
  v->id_ = next_value_id_++;
  values_.push_back(std::move(v));
  return values_.back().get();
}

Value* Graph::add_constant(const std::string& name, Tensor t) {
  Value* v = add_value(name);
  v->dtype = t.dtype();
  v->has_shape = true;
  for (int64_t d : t.shape()) v->dims.push_back({d, ""});
  v->constant = std::move(t);
  return v;
}

Value* Graph::find_value(const std::string& name) const {
  for (const auto& v : values_)
    if (v->name == name) return v.get();
  return nullptr;
}

Node* Graph::add_node(OpKind op, const std::string& name, std::vector<Value*> inputs,
                      std::vector<Value*> outputs, Attributes attrs) {
  auto n = std::make_unique<Node>();
  n->op = op;
  n->name = name;
  n->inputs = std::move(inputs);
  n->outputs = std::move(outputs);
  n->attrs = std::move(attrs);
  n->id_ = next_node_id_++;
  for (Value* in : n->inputs)
    if (in) in->consumers.push_back(n.get());
  for (Value* out : n->outputs) {
    if (!out) continue;
    KILN_CHECK(out->producer == nullptr);
    out->producer = n.get();
  }
  nodes_.push_back(std::move(n));
  return nodes_.back().get();
}

void Graph::remove_node(Node* node) {
  for (Value* in : node->inputs) {
    if (!in) continue;
    auto it = std::find(in->consumers.begin(), in->consumers.end(), node);
    if (it != in->consumers.end()) in->consumers.erase(it);
  }
  for (Value* out : node->outputs)
    if (out && out->producer == node) out->producer = nullptr;
  auto it = std::find_if(nodes_.begin(), nodes_.end(),
                         [&](const std::unique_ptr<Node>& p) { return p.get() == node; });
  KILN_CHECK(it != nodes_.end());
  nodes_.erase(it);
}

void Graph::set_input(Node* node, size_t i, Value* v) {
  if (i >= node->inputs.size()) node->inputs.resize(i + 1, nullptr);
  Value* old = node->inputs[i];
  if (old) {
    auto it = std::find(old->consumers.begin(), old->consumers.end(), node);
    if (it != old->consumers.end()) old->consumers.erase(it);
  }
  node->inputs[i] = v;
  if (v) v->consumers.push_back(node);
}

void Graph::replace_all_uses(Value* from, Value* to) {
  if (from == to) return;
  std::vector<Node*> users = from->consumers;
  for (Node* n : users)
    for (size_t i = 0; i < n->inputs.size(); ++i)
      if (n->inputs[i] == from) set_input(n, i, to);
  for (Value*& o : outputs_)
    if (o == from) o = to;
}

void Graph::remove_unused_values() {
  std::unordered_set<const Value*> keep(inputs_.begin(), inputs_.end());
  keep.insert(outputs_.begin(), outputs_.end());
  values_.erase(std::remove_if(values_.begin(), values_.end(),
                               [&](const std::unique_ptr<Value>& v) {
                                 return !v->producer && v->consumers.empty() &&
                                        !keep.count(v.get());
                               }),
                values_.end());
}

Status Graph::topo_sort() {
  std::unordered_map<const Node*, int> pending;  // inputs not yet available
  std::vector<Node*> ready;
  for (const auto& n : nodes_) {
    int count = 0;
    for (Value* in : n->inputs)
      if (in && in->producer) ++count;
    pending[n.get()] = count;
    if (count == 0) ready.push_back(n.get());
  }
  // Keep the original relative order among ready nodes: stable, predictable output.
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < nodes_.size(); ++i) position[nodes_[i].get()] = i;
  auto by_position = [&](Node* a, Node* b) { return position[a] > position[b]; };
  std::sort(ready.begin(), ready.end(), by_position);

  std::vector<Node*> order;
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    order.push_back(n);
    bool added = false;
    for (Value* out : n->outputs) {
      if (!out) continue;
      for (Node* c : out->consumers) {
        // A consumer reading this value k times counts k inputs.
        if (--pending[c] == 0) {
          ready.push_back(c);
          added = true;
        }
      }
    }
    if (added) std::sort(ready.begin(), ready.end(), by_position);
  }
  if (order.size() != nodes_.size())
    return invalid_argument("graph has a cycle (" + std::to_string(nodes_.size() - order.size()) +
                            " nodes unreachable in topological order)");
  std::unordered_map<const Node*, size_t> rank;
  for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
  std::sort(nodes_.begin(), nodes_.end(),
            [&](const std::unique_ptr<Node>& a, const std::unique_ptr<Node>& b) {
              return rank[a.get()] < rank[b.get()];
            });
  return Status::ok();
}

}  // namespace kiln
