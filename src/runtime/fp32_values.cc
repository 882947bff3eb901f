#include "runtime/fp32_values.h"

namespace kiln {

ValueUses value_uses(const Graph& imported) {
  ValueUses uses;
  for (const auto& n : imported.nodes()) {
    for (const Value* v : n->outputs)
      if (v) uses[v->name].push_back(n->name);
    for (const Value* v : n->inputs)
      if (v && !v->is_constant()) uses[v->name].push_back(n->name);
  }
  return uses;
}

std::string surviving_node(const Graph& g, const PassReport& passes, const std::string& node) {
  std::set<std::string> names;
  for (const auto& n : g.nodes()) names.insert(n->name);
  std::string name = node;
  // A chain of fusions is short (conv ← bn, mul ← affine ← concat); the bound stops a cycle.
  for (int hop = 0; hop < 16 && !names.count(name); ++hop) {
    auto it = passes.fused_into.find(name);
    if (it == passes.fused_into.end()) return "";
    name = it->second.node;
  }
  return names.count(name) ? name : "";
}

void keep_values_in_fp32(const Graph& g, const ValueUses& uses, const PassReport& passes,
                         const std::vector<std::string>& values,
                         std::map<std::string, Precision>& overrides,
                         std::vector<std::string>& kept, std::vector<std::string>& notes) {
  std::map<std::string, const Node*> by_name;
  for (const auto& n : g.nodes()) by_name[n->name] = n.get();
  const std::map<std::string, Precision> given = overrides;
  for (const std::string& value : values) {
    // node name → what it does with the value
    std::map<std::string, std::string> nodes;
    const Value* v = g.find_value(value);
    if (v && (v->producer || !v->consumers.empty())) {
      if (v->producer) nodes[v->producer->name] = "writes";
      for (const Node* c : v->consumers) nodes.emplace(c->name, "reads");
    } else if (auto it = uses.find(value); it != uses.end()) {
      for (const std::string& n : it->second) {
        const std::string s = surviving_node(g, passes, n);
        if (!s.empty()) nodes.emplace(s, "computes");
      }
    }
    if (nodes.empty()) {
      notes.push_back("fp32 value '" + value +
                      "': no node of the optimized graph writes or reads it; nothing kept in "
                      "fp32 for it");
      continue;
    }
    for (const auto& [name, what] : nodes) {
      if (given.count(name) || overrides.count(name)) continue;
      overrides[name] = Precision::kFp32;
      const Node* n = by_name.at(name);
      kept.push_back("node '" + name + "' (" + op_name(n->op) + ") in fp32: " + what + " '" +
                     value + "'");
    }
  }
}

}  // namespace kiln
