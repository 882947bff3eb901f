// keep_layers_within_error (kiln/precision_report.h): fallback to a higher precision by
// measured error, in rounds of build → compare → keep.
//
// Why rounds, and why only where the error comes in: a layer's error against fp32 includes
// everything upstream of it, so one layer that loses accuracy puts every layer after it over
// budget. Keeping all of those would undo the reduced precision; keeping the first of each path
// (over budget, its inputs within) removes the cause, and the next round shows what is left.
#include "runtime/precision_fallback.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

namespace kiln {

Precision higher_precision(const EngineOptions& o) {
  return precision_is_8bit(o.precision) && o.device == Device::kCuda ? Precision::kFp16
                                                                     : Precision::kFp32;
}

namespace {

// Whether a node's own arithmetic rounds in a reduced precision: not so for the ones that move,
// select or clamp the values they read, whose error is all their inputs', and which keeping
// in a higher precision would not change.
bool rounds_on_its_own(const std::string& op) {
  static const std::set<std::string> kExact = {
      "Pad",     "Reshape",   "Transpose", "Slice",    "Concat",       "Split",
      "Squeeze", "Unsqueeze", "Flatten",   "Identity", "MaxPool",      "GlobalMaxPool",
      "Relu",    "Clip",      "Gather",    "Expand",   "DepthToSpace", "SpaceToDepth"};
  return !kExact.count(op);
}

std::string kept_line(const PrecisionReport& r, const std::string& node, const std::string& origin,
                      int round) {
  auto worst = [&](const std::string& n, std::string* op) {
    double e = 0;
    for (const LayerError& l : r.layers)
      if (l.node == n && l.relative_l2 >= e) {
        e = l.relative_l2;
        if (op) *op = l.op;
      }
    return e;
  };
  std::string op;
  const double own = worst(node, &op);
  char text[256];
  if (origin == node)
    std::snprintf(text, sizeof text, " (%s): %.1e over %.1e, round %d", op.c_str(), own,
                  r.max_layer_error, round);
  else
    std::snprintf(text, sizeof text, " (%s): %.1e, feeding %s (%.1e over %.1e), round %d",
                  op.c_str(), own, origin.c_str(), worst(origin, nullptr), r.max_layer_error,
                  round);
  return node + text;
}

}  // namespace

// The nodes a round keeps: for each layer over budget whose inputs are within it, that node;
// for an int8 engine, where only the quantized layers move, that node if it is one, else the
// quantized layers that wrote its inputs. A layer already kept that is still such an origin
// has no error of its own: what its inputs carry, each within budget, adds up past it (many
// reduced layers each close to the budget). Then the nearest layers upstream not kept yet are
// kept, so that every round moves the cause, and the rounds end at the graph's inputs.
// Each node to keep, with the origin it was found from (itself where it is one).
std::vector<std::pair<std::string, std::string>> nodes_to_keep(
    const PrecisionReport& r, bool int8, const std::set<std::string>& quantized,
    const PrecisionMap& kept) {
  std::map<std::string, const LayerError*> by_value;
  for (const LayerError& l : r.layers) by_value[l.value] = &l;
  std::vector<std::pair<std::string, std::string>> nodes;
  auto movable = [&](const LayerError& l) {
    return int8 ? quantized.count(l.node) > 0 : rounds_on_its_own(l.op);
  };
  // Keeps `l`'s node where it moves and is not kept yet; else looks upstream through its inputs.
  std::set<std::string> seen;
  std::function<void(const LayerError&, const std::string&)> keep = [&](const LayerError& l,
                                                                        const std::string& origin) {
    if (!seen.insert(l.node).second) return;
    if (movable(l) && !kept.count(l.node)) {
      nodes.emplace_back(l.node, origin);
      return;
    }
    for (const std::string& in : l.inputs) {
      auto it = by_value.find(in);
      if (it != by_value.end()) keep(*it->second, origin);
    }
  };
  for (const LayerError& l : error_origins(r)) keep(l, l.node);
  return nodes;
}

// "conv7 (Conv): 3.2e-02 over 1.0e-02, round 1", or for a layer kept upstream of an origin
// "conv6 (Conv): 7.1e-03, feeding conv7 (1.2e-02 over 1.0e-02), round 2".
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
    for (const auto& [node, origin] : nodes_to_keep(f.report, int8, quantized, f.overrides)) {
      if (f.overrides.count(node)) continue;
      f.overrides[node] = up;
      f.kept.push_back(kept_line(f.report, node, origin, round));
      more = true;
    }
    if (!more) break;
  }
  return f;
}

}  // namespace kiln
