#include <algorithm>
#include <unordered_set>

#include "ir/graph.h"

namespace kiln {

Status verify_graph(const Graph& g) {
  std::unordered_set<const Value*> owned;
  for (const auto& v : g.values()) owned.insert(v.get());
  std::unordered_set<const Node*> nodes;
  for (const auto& n : g.nodes()) nodes.insert(n.get());

  std::unordered_set<const Value*> available;
  for (const Value* v : g.inputs()) {
    if (!owned.count(v)) return internal_error("graph input not owned by the graph");
    if (v->producer) return internal_error("graph input '" + v->name + "' has a producer");
    available.insert(v);
  }
  for (const auto& v : g.values())
    if (v->is_constant()) available.insert(v.get());

  for (const auto& n : g.nodes()) {
    if (n->op == OpKind::kCount) return internal_error(n->describe() + ": no op kind");
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const Value* in = n->inputs[i];
      if (!in) continue;
      std::string where = n->describe() + ": input " + std::to_string(i) + " '" + in->name + "'";
      if (!owned.count(in)) return internal_error(where + " is not owned by the graph");
      if (!available.count(in))
        return internal_error(where + " is used before it is produced (or never is)");
      if (std::count(in->consumers.begin(), in->consumers.end(), n.get()) !=
          std::count(n->inputs.begin(), n->inputs.end(), in))
        return internal_error(where + " does not list the node among its consumers");
    }
    for (const Value* out : n->outputs) {
      if (!out) continue;
      if (!owned.count(out)) return internal_error(n->describe() + ": output not owned");
      if (out->producer != n.get())
        return internal_error(n->describe() + ": output '" + out->name +
                              "' names another producer");
      if (out->is_constant())
        return internal_error(n->describe() + ": output '" + out->name + "' is a constant");
      available.insert(out);
    }
  }
  for (const auto& v : g.values()) {
    if (v->producer && !nodes.count(v->producer))
      return internal_error("value '" + v->name + "' has a producer outside the graph");
    for (const Node* c : v->consumers)
      if (!nodes.count(c))
        return internal_error("value '" + v->name + "' has a consumer outside the graph");
  }
  for (const Value* o : g.outputs()) {
    if (!owned.count(o)) return internal_error("graph output not owned by the graph");
    if (!available.count(o))
      return internal_error("graph output '" + o->name + "' is never produced");
  }
  return Status::ok();
}

}  // namespace kiln
