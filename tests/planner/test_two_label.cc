// The two-label minimum-cut solver (planner/two_label.h) against exhaustive search on random
// problems, and its rule for ties.
#include <gtest/gtest.h>

#include <random>

#include "planner/two_label.h"

namespace kiln {
namespace {

double brute_force_best(const TwoLabelProblem& p) {
  const size_t n = p.items.size();
  double best = 1e300;
  std::vector<int> labels(n);
  for (uint32_t m = 0; m < (1u << n); ++m) {
    for (size_t i = 0; i < n; ++i) labels[i] = (m >> i) & 1;
    best = std::min(best, two_label_cost(p, labels));
  }
  return best;
}

TEST(TwoLabel, MatchesExhaustiveSearchOnRandomProblems) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cost(0.0, 1.0);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 1 + rng() % 11;
    TwoLabelProblem p;
    for (size_t i = 0; i < n; ++i) {
      // Some items indifferent (as the layout planner's activation sets are), some not.
      if (rng() % 3 == 0)
        p.items.push_back({0, 0});
      else
        p.items.push_back({cost(rng), cost(rng)});
    }
    const size_t pairs = rng() % (2 * n + 1);
    for (size_t k = 0; k < pairs; ++k)
      p.pairs.push_back({rng() % n, rng() % n, cost(rng) * (rng() % 2 ? 1.0 : 0.1)});
    const TwoLabelSolution s = solve_two_label(p);
    ASSERT_EQ(s.labels.size(), n);
    EXPECT_NEAR(s.cost, brute_force_best(p), 1e-12) << "trial " << trial;
    EXPECT_DOUBLE_EQ(s.cost, two_label_cost(p, s.labels));
  }
}

// A chain whose ends prefer different labels splits at its cheapest link; items with nothing
// to decide take label 0; an exact tie between the two uniform answers takes 0 everywhere.
TEST(TwoLabel, CutsAtTheCheapestLinkAndBreaksTiesToZero) {
  TwoLabelProblem p;
  p.items = {{5, 0}, {0, 0}, {0, 0}, {0, 5}};  // item 0 wants 1, item 3 wants 0
  p.pairs = {{0, 1, 3}, {1, 2, 1}, {2, 3, 3}};
  TwoLabelSolution s = solve_two_label(p);
  EXPECT_EQ(s.labels, (std::vector<int>{1, 1, 0, 0}));
  EXPECT_DOUBLE_EQ(s.cost, 1);

  TwoLabelProblem idle;
  idle.items = {{0, 0}, {0, 0}};
  idle.pairs = {{0, 1, 2}};
  EXPECT_EQ(solve_two_label(idle).labels, (std::vector<int>{0, 0}));

  TwoLabelProblem tie;
  tie.items = {{1, 0}, {0, 1}};  // all-0 and all-1 both cost 1 (with the link: 1 as well)
  tie.pairs = {{0, 1, 1}};
  s = solve_two_label(tie);
  EXPECT_DOUBLE_EQ(s.cost, 1);
  EXPECT_EQ(s.labels, (std::vector<int>{0, 0}));
}

// Negative inputs count as 0 and cannot make the flow loop forever.
TEST(TwoLabel, NegativeCostsCountAsZero) {
  TwoLabelProblem p;
  p.items = {{-1, 2}, {3, -4}};
  p.pairs = {{0, 1, -5}};
  const TwoLabelSolution s = solve_two_label(p);
  EXPECT_EQ(s.labels, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(s.cost, 0);
}

}  // namespace
}  // namespace kiln
