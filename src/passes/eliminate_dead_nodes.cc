// eliminate_dead_nodes: a node none of whose outputs reaches a graph output does work
// nobody sees. Walks back from the graph outputs, keeps what it reaches.
#include <unordered_set>

#include "passes/pass.h"

namespace kiln {

Result<bool> eliminate_dead_nodes(Graph& g) {
  std::unordered_set<const Node*> live;
  std::vector<const Node*> stack;
  for (const Value* o : g.outputs())
    if (o->producer && live.insert(o->producer).second) stack.push_back(o->producer);
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Value* in : n->inputs)
      if (in && in->producer && live.insert(in->producer).second) stack.push_back(in->producer);
  }
  std::vector<Node*> dead;
  for (const auto& n : g.nodes())
    if (!live.count(n.get())) dead.push_back(n.get());
  for (Node* n : dead) g.remove_node(n);
  const size_t values_before = g.values().size();
  g.remove_unused_values();
  return !dead.empty() || g.values().size() != values_before;
}

}  // namespace kiln
