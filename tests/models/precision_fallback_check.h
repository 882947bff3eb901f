// A reduced precision's error on a whole model, named and kept: the check shared by the CPU
// (bf16) and GPU (fp16) tests of models whose reduced engine loses accuracy.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "kiln/engine.h"
#include "kiln/precision_report.h"

namespace kiln::test {

// Compares the `reduced` engine of `path` with `fp32` on `samples` (images like the real ones):
// prints the outputs' error, the largest layer errors and where the error comes in, which
// must be named when an output is over `budget`; then the fallback by measured error must
// bring every layer and output within it in `max_rounds`. Returns the overrides it kept (empty on
// failure).
inline PrecisionMap expect_named_and_kept(const std::string& path, const EngineOptions& reduced,
                                          const Engine& fp32,
                                          const std::vector<std::map<std::string, Tensor>>& samples,
                                          double budget, int max_rounds = 8) {
  const char* p = precision_name(reduced.precision);
  auto engine = Engine::load(path, reduced);
  EXPECT_TRUE(engine.is_ok()) << engine.status().to_string();
  if (!engine.is_ok()) return {};
  auto report = compare_precision(**engine, fp32, samples, budget);
  EXPECT_TRUE(report.is_ok()) << report.status().to_string();
  if (!report.is_ok()) return {};
  double worst_output = 0;
  for (const LayerError& o : report->outputs) {
    std::printf("[ precision] %s output %s: %.3e (cosine %.6f)\n", p, o.value.c_str(),
                o.relative_l2, o.cosine);
    worst_output = std::max(worst_output, o.relative_l2);
  }
  std::vector<LayerError> layers = report->layers;
  std::stable_sort(layers.begin(), layers.end(), [](const LayerError& a, const LayerError& b) {
    return a.relative_l2 > b.relative_l2;
  });
  for (size_t i = 0; i < std::min<size_t>(6, layers.size()); ++i)
    std::printf("[ precision]   %s %s (%s): %.3e\n", p, layers[i].node.c_str(),
                layers[i].op.c_str(), layers[i].relative_l2);
  const std::vector<LayerError> origins = error_origins(*report);
  for (const LayerError& l : origins)
    std::printf("[ precision]   %s error comes in at %s (%s): %.3e\n", p, l.node.c_str(),
                l.op.c_str(), l.relative_l2);
  if (worst_output > budget) {
    EXPECT_FALSE(origins.empty()) << "an output over budget, unnamed";
  }
  EXPECT_TRUE(report->lost.empty());

  auto kept = keep_layers_within_error(path, reduced, fp32, samples, budget, max_rounds);
  EXPECT_TRUE(kept.is_ok()) << kept.status().to_string();
  if (!kept.is_ok()) return {};
  for (const std::string& k : kept->kept) std::printf("[ precision]   kept %s\n", k.c_str());
  int over = 0;
  for (const LayerError& l : kept->report.layers) over += l.over_budget;
  EXPECT_EQ(over, 0) << "layers still over " << budget << " after " << kept->rounds << " rounds";
  for (const LayerError& o : kept->report.outputs) {
    std::printf("[ precision] %s output %s after the fallback: %.3e\n", p, o.value.c_str(),
                o.relative_l2);
    EXPECT_LE(o.relative_l2, budget) << o.value;
  }
  EXPECT_TRUE(kept->report.lost.empty());
  return kept->overrides;
}

}  // namespace kiln::test
