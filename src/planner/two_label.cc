// Minimum cut by augmenting paths (Edmonds–Karp on an adjacency-list residual graph). The
// problems are small (a model's convs and activation groups: hundreds of nodes), so the
// simple algorithm is plenty.

#include "planner/two_label.h"

#include <algorithm>
#include <deque>
#include <limits>

namespace kiln {

namespace {

struct Edge {
  size_t to;
  double cap;
};

class FlowGraph {
 public:
  explicit FlowGraph(size_t n) : adj_(n) {}

  void add(size_t a, size_t b, double cap_ab, double cap_ba) {
    if (cap_ab <= 0 && cap_ba <= 0) return;
    adj_[a].push_back(edges_.size());
    edges_.push_back({b, std::max(cap_ab, 0.0)});
    adj_[b].push_back(edges_.size());
    edges_.push_back({a, std::max(cap_ba, 0.0)});
  }

  void max_flow(size_t s, size_t t) {
    // Residual capacities below this are treated as saturated, so rounding in the subtractions
    // cannot leave paths of 1e-18 seconds that would keep the loop alive.
    const double eps = 1e-15;
    while (true) {
      std::vector<size_t> via(adj_.size(), kNone);
      std::deque<size_t> todo{s};
      via[s] = kNone - 1;
      while (!todo.empty() && via[t] == kNone) {
        const size_t u = todo.front();
        todo.pop_front();
        for (size_t e : adj_[u])
          if (edges_[e].cap > eps && via[edges_[e].to] == kNone) {
            via[edges_[e].to] = e;
            todo.push_back(edges_[e].to);
          }
      }
      if (via[t] == kNone) return;
      double push = std::numeric_limits<double>::infinity();
      for (size_t v = t; v != s; v = edges_[via[v] ^ 1].to)
        push = std::min(push, edges_[via[v]].cap);
      for (size_t v = t; v != s; v = edges_[via[v] ^ 1].to) {
        edges_[via[v]].cap -= push;
        edges_[via[v] ^ 1].cap += push;
      }
    }
  }

  // Nodes that still reach `t` through residual edges (the sink side of the smallest sink set).
  std::vector<bool> reaching(size_t t) const {
    std::vector<bool> seen(adj_.size(), false);
    std::deque<size_t> todo{t};
    seen[t] = true;
    while (!todo.empty()) {
      const size_t u = todo.front();
      todo.pop_front();
      // An edge v→u with residual capacity lets v reach u; it is the reverse of u's edge e^1.
      for (size_t e : adj_[u]) {
        const size_t v = edges_[e].to;
        if (!seen[v] && edges_[e ^ 1].cap > 1e-15) {
          seen[v] = true;
          todo.push_back(v);
        }
      }
    }
    return seen;
  }

 private:
  static constexpr size_t kNone = std::numeric_limits<size_t>::max();
  std::vector<std::vector<size_t>> adj_;
  std::vector<Edge> edges_;
};

}  // namespace

double two_label_cost(const TwoLabelProblem& p, const std::vector<int>& labels) {
  double c = 0;
  for (size_t i = 0; i < p.items.size(); ++i)
    c += std::max(labels[i] ? p.items[i].cost1 : p.items[i].cost0, 0.0);
  for (const auto& e : p.pairs)
    if (labels[e.a] != labels[e.b]) c += std::max(e.weight, 0.0);
  return c;
}

TwoLabelSolution solve_two_label(const TwoLabelProblem& p) {
  const size_t n = p.items.size();
  const size_t s = n, t = n + 1;
  FlowGraph g(n + 2);
  for (size_t i = 0; i < n; ++i) {
    // Source side is label 0: cutting s→i (i on the sink side) pays cost1, i→t pays cost0.
    g.add(s, i, p.items[i].cost1, 0);
    g.add(i, t, p.items[i].cost0, 0);
  }
  for (const auto& e : p.pairs)
    if (e.a != e.b) g.add(e.a, e.b, e.weight, e.weight);
  g.max_flow(s, t);
  // Label 1 only for what must be on the sink side: the nodes that still reach t.
  const std::vector<bool> sink = g.reaching(t);
  TwoLabelSolution r;
  r.labels.resize(n);
  for (size_t i = 0; i < n; ++i) r.labels[i] = sink[i] ? 1 : 0;
  r.cost = two_label_cost(p, r.labels);
  return r;
}

}  // namespace kiln
