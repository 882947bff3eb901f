// keep_layers_within_error (kiln/precision_report.h): fallback to a higher precision by
// measured error, in rounds of build → compare → keep.
//
// Why rounds, and why only where the error comes in: a layer's error against fp32 includes
// everything upstream of it, so one layer that loses accuracy puts every layer after it over
// budget. Keeping all of those would undo the reduced precision; keeping the first of each path
// (over budget, its inputs within) removes the cause, and the next round shows what is left.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "kiln/precision_report.h"

namespace kiln {

Precision higher_precision(const EngineOptions& o) {
  return precision_is_8bit(o.precision) && o.device == Device::kCuda ? Precision::kFp16
                                                                     : Precision::kFp32;
}

namespace {

// The nodes a round keeps: for each layer over budget whose inputs are within it, that node;
// for an int8 engine, where only the quantized layers move, that node if it is one, else the
// quantized layers that wrote its inputs.
std::vector<std::string> nodes_to_keep(const PrecisionReport& r, bool int8,
                                       const std::set<std::string>& quantized) {
  std::map<std::string, const LayerError*> by_value;
  for (const LayerError& l : r.layers) by_value[l.value] = &l;
  std::vector<std::string> nodes;
  auto add = [&](const std::string& n) {
    if (std::find(nodes.begin(), nodes.end(), n) == nodes.end()) nodes.push_back(n);
  };
  for (const LayerError& l : error_origins(r)) {
    if (!int8 || quantized.count(l.node)) {
      add(l.node);
      continue;
    }
    for (const std::string& in : l.inputs) {
      auto it = by_value.find(in);
      if (it != by_value.end() && quantized.count(it->second->node)) add(it->second->node);
    }
  }
  return nodes;
}

std::string kept_line(const PrecisionReport& r, const std::string& node, int round) {
  double worst = 0;
  std::string op;
  for (const LayerError& l : r.layers)
    if (l.node == node && l.relative_l2 >= worst) {
      worst = l.relative_l2;
      op = l.op;
    }
  char text[160];
  std::snprintf(text, sizeof text, " (%s): %.1e over %.1e, round %d", op.c_str(), worst,
                r.max_layer_error, round);
  return node + text;
}

}  // namespace

Result<ErrorFallback> keep_layers_within_error(
    const std::string& model_path, const EngineOptions& reduced, const Engine& fp32,
    const std::vector<std::map<std::string, Tensor>>& samples, double max_layer_error,
    int max_rounds) {
  if (reduced.precision == Precision::kFp32 || reduced.precision == Precision::kTf32)
    return invalid_argument(std::string("keep_layers_within_error: precision ") +
                            precision_name(reduced.precision) +
                            " is not reduced (fp16, bf16, int8 or fp8)");
  if (!(max_layer_error > 0)) return invalid_argument("keep_layers_within_error: budget ≤ 0");
  const bool int8 = precision_is_8bit(reduced.precision);
  const Precision up = higher_precision(reduced);
  ErrorFallback f;
  f.overrides = reduced.precision_overrides;
  // Each round measures the overrides so far; the last one measures what the caller gets.
  for (int round = 1;; ++round) {
    EngineOptions o = reduced;
    o.precision_overrides = f.overrides;
    KILN_ASSIGN_OR_RETURN(auto engine, Engine::load(model_path, o));
    KILN_ASSIGN_OR_RETURN(f.report, compare_precision(*engine, fp32, samples, max_layer_error));
    f.rounds = round;
    if (round > max_rounds) break;
    std::set<std::string> quantized;
    for (const auto& l : engine->report().quantization.layers) quantized.insert(l.node);
    bool more = false;
    for (const std::string& node : nodes_to_keep(f.report, int8, quantized)) {
      if (f.overrides.count(node)) continue;
      f.overrides[node] = up;
      f.kept.push_back(kept_line(f.report, node, round));
      more = true;
    }
    if (!more) break;
  }
  return f;
}

}  // namespace kiln
