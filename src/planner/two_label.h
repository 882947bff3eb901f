// Two-label assignment by minimum cut: each item takes label 0 or 1; an item costs `cost0` or
// `cost1` by its label, and each pair (i, j, w) costs w when i and j take different labels.
// With non-negative costs this is exactly solvable as a minimum s-t cut (label 0 on the source
// side): the layout planner of the CPU backend uses it to choose, per activation, between two
// memory layouts whose conversion costs sit on the edges.
#pragma once

#include <cstddef>
#include <vector>

namespace kiln {

struct TwoLabelProblem {
  struct Item {
    double cost0 = 0, cost1 = 0;
  };
  struct Pair {
    size_t a = 0, b = 0;
    double weight = 0;  // paid when a and b differ
  };
  std::vector<Item> items;
  std::vector<Pair> pairs;
};

struct TwoLabelSolution {
  std::vector<int> labels;  // 0 or 1 per item
  double cost = 0;          // the total cost of `labels`
};

// An assignment of least total cost. Among optimal ones, an item takes label 1 only where every
// optimum needs it (items with nothing to decide stay 0), so equal inputs give equal answers.
// Negative costs or weights are taken as 0.
TwoLabelSolution solve_two_label(const TwoLabelProblem& p);

// The total cost of `labels` under `p` (for checks and reports).
double two_label_cost(const TwoLabelProblem& p, const std::vector<int>& labels);

}  // namespace kiln
