// Values kept in float32 inside a lower-precision engine (EngineOptions::fp32_values): the
// nodes that write or read each value compute in fp32, so the value itself is stored and
// passed as float32. The fp16 range guard (kiln/fp16_range.h) names such values from a
// float32 CPU run; this maps its names onto the engine's own optimized graph.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/options.h"
#include "passes/pass.h"

namespace kiln {

// For each value name of the imported graph, the names of the nodes that write or read it.
using ValueUses = std::map<std::string, std::vector<std::string>>;
ValueUses value_uses(const Graph& imported);

// The node of `g` a node of the imported graph became: itself, or the group it was fused into
// (PassReport::fused_into, followed through chains of fusions); empty when it was folded away.
std::string surviving_node(const Graph& g, const PassReport& passes, const std::string& node);

// Adds a kFp32 override for every node of `g` (the optimized graph) that writes or reads one
// of `values`, except nodes `overrides` names already (a user's choice wins), and describes
// each in `kept` ("node 'conv7' (Conv) in fp32: writes 'x'"). A value of `g` is taken from
// `g`; one the passes fused away is found through the imported graph's nodes (`uses`) and
// the groups they went into. A value found nowhere adds a line to `notes` and nothing else.
void keep_values_in_fp32(const Graph& g, const ValueUses& uses, const PassReport& passes,
                         const std::vector<std::string>& values,
                         std::map<std::string, Precision>& overrides,
                         std::vector<std::string>& kept, std::vector<std::string>& notes);

}  // namespace kiln
