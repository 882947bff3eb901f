// The optimizer's pass order, in one place. Identity removal first so the patterns below
// see through it, and again after constant folding (a Pad by zeros whose pads a Constant node
// gave); constant folding before BN folding (exporters sometimes compute BN params with
// Constant nodes); BN folding before epilogue fusion so Conv + BN + Relu fuses
// as one; channel shuffles as one node; dead nodes last, to sweep what folding orphaned.
#include <map>

#include "passes/pass.h"

namespace kiln {

namespace {

using Groups = std::vector<std::vector<std::string>>;

}  // namespace

Status optimize_graph(Graph& g, PassReport* report, bool verify_each_pass) {
  struct Pass {
    const char* name;
    Result<bool> (*run)(Graph&, Groups*);
  };
  static const Pass kPasses[] = {
      {"remove_identity", [](Graph& g, Groups*) { return remove_identity(g); }},
      {"fold_constants", [](Graph& g, Groups*) { return fold_constants(g); }},
      // Again: folding makes constants of inputs Constant nodes gave (a Pad's zero pads).
      {"remove_identity", [](Graph& g, Groups*) { return remove_identity(g); }},
      {"fold_batch_norm", [](Graph& g, Groups* gr) { return fold_batch_norm(g, gr); }},
      {"fuse_epilogue", [](Graph& g, Groups* gr) { return fuse_epilogue(g, gr); }},
      {"fuse_channel_shuffle", [](Graph& g, Groups* gr) { return fuse_channel_shuffle(g, gr); }},
      {"eliminate_dead_nodes", [](Graph& g, Groups*) { return eliminate_dead_nodes(g); }},
  };
  if (report) report->nodes_before = static_cast<int64_t>(g.nodes().size());
  Groups groups;
  for (const Pass& p : kPasses) {
    auto changed = p.run(g, &groups);
    if (!changed.is_ok()) return changed.status().with_context(std::string("pass ") + p.name);
    if (verify_each_pass)
      KILN_RETURN_IF_ERROR_CTX(verify_graph(g), std::string("after pass ") + p.name);
    if (report) report->steps.push_back({p.name, static_cast<int64_t>(g.nodes().size())});
  }
  if (!report) return Status::ok();
  // Merge groups by their surviving node: conv+bn then conv+relu is one group.
  std::map<std::string, std::vector<std::string>> merged;
  std::vector<std::string> order;
  for (const auto& grp : groups) {
    auto& m = merged[grp[0]];
    if (m.empty()) {
      order.push_back(grp[0]);
      m.push_back(grp[0]);
    }
    m.insert(m.end(), grp.begin() + 1, grp.end());
  }
  std::map<std::string, const Node*> by_name;
  for (const auto& n : g.nodes()) by_name[n->name] = n.get();
  for (const std::string& head : order) {
    auto it = by_name.find(head);
    if (it == by_name.end()) continue;  // folded away later
    const Node* n = it->second;
    std::string line;
    for (const std::string& s : merged[head]) {
      if (!line.empty()) line += " + ";
      line += s;
    }
    line += std::string(" → ") + op_name(n->op);
    if (!n->epilogue.empty()) line += "[" + n->epilogue.describe() + "]";
    for (size_t i = 1; i < merged[head].size(); ++i)
      report->fused_into[merged[head][i]] = {head, report->fused_groups.size()};
    report->fused_groups.push_back(line);
  }
  return Status::ok();
}

}  // namespace kiln
