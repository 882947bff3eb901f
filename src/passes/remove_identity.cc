// remove_identity: Identity, Dropout in inference mode whose mask output is unused, and Pad by
// constant zeros (exporters write one before DenseNet's transition pools) pass their input
// through unchanged, so their uses can read the input directly.
#include <algorithm>

#include "passes/pass.h"

namespace kiln {

namespace {

// Dropout is the identity when not training: training_mode (input 2) absent or a constant
// false, and nobody reads the mask.
bool is_inference_dropout(const Node& n) {
  const Value* mode = n.input(2);
  if (mode) {
    if (!mode->is_constant() || mode->constant.numel() != 1) return false;
    if (mode->constant.at_double(0) != 0) return false;
  }
  const Value* mask = n.output(1);
  return !mask || mask->consumers.empty();
}

// Pad whose pads (input 1) are a constant of zeros, in any mode, copies its input.
bool is_zero_pad(const Node& n) {
  const Value* pads = n.input(1);
  if (!pads || !pads->is_constant() || pads->constant.numel() == 0) return false;
  for (int64_t i = 0; i < pads->constant.numel(); ++i)
    if (pads->constant.at_double(i) != 0) return false;
  return true;
}

}  // namespace

bool bypass_node(Graph& g, Node* n) {
  Value* x = n->input(0);
  Value* y = n->output(0);
  if (is_graph_output(g, y)) {
    // The graph output keeps its name: x takes it over, which needs x to be a plain
    // intermediate (not a graph input, constant or another graph output) whose name may
    // change. Otherwise the node stays.
    if (!x->producer || is_graph_input(g, x) || x->is_constant() || is_graph_output(g, x))
      return false;
    std::string name = y->name;
    g.replace_all_uses(y, x);
    g.remove_node(n);
    y->name = name + "__removed";
    x->name = name;
  } else {
    g.replace_all_uses(y, x);
    g.remove_node(n);
  }
  return true;
}

Result<bool> remove_identity(Graph& g) {
  bool changed = false;
  std::vector<Node*> candidates;
  for (const auto& n : g.nodes())
    if ((n->op == OpKind::Identity || (n->op == OpKind::Dropout && is_inference_dropout(*n)) ||
         (n->op == OpKind::Pad && is_zero_pad(*n))) &&
        n->input(0) && n->output(0))
      candidates.push_back(n.get());
  for (Node* n : candidates) {
    if (n->op == OpKind::Dropout && n->output(1) && is_graph_output(g, n->output(1))) continue;
    changed = bypass_node(g, n) || changed;
  }
  if (changed) g.remove_unused_values();
  return changed;
}

}  // namespace kiln
