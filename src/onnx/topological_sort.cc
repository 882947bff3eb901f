#include "onnx/topological_sort.h"

#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {

namespace {

std::string describe(const onnx::NodeProto& n, int index) {
  return "node " + std::to_string(index) + " ('" + n.name() + "', " + n.op_type() + ")";
}

}  // namespace

Status sort_nodes_topologically(onnx::GraphProto& graph, bool* changed) {
  *changed = false;
  const int n = graph.node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const std::string& out : graph.node(i).output()) {
      if (out.empty()) continue;
      auto [it, fresh] = producer.emplace(out, i);
      if (!fresh)
        return invalid_argument("value '" + out + "' is produced by both " +
                                describe(graph.node(it->second), it->second) + " and " +
                                describe(graph.node(i), i));
    }
  // Kahn's algorithm, taking the lowest original index among the ready nodes.
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> consumers(n);
  for (int i = 0; i < n; ++i)
    for (const std::string& in : graph.node(i).input()) {
      auto it = in.empty() ? producer.end() : producer.find(in);
      if (it == producer.end()) continue;
      ++waiting[i];
      consumers[it->second].push_back(i);
    }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (waiting[i] == 0) ready.push(i);
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int c : consumers[i])
      if (--waiting[c] == 0) ready.push(c);
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (waiting[i] > 0)
        return invalid_argument("the graph has a cycle: " + describe(graph.node(i), i) +
                                " waits on its own output, directly or through others");
  }
  for (int k = 0; k < n; ++k) *changed |= order[k] != k;
  if (!*changed) return Status::ok();
  google::protobuf::RepeatedPtrField<onnx::NodeProto> sorted;
  for (int i : order) sorted.Add()->Swap(graph.mutable_node(i));
  graph.mutable_node()->Swap(&sorted);
  return Status::ok();
}

}  // namespace kiln
