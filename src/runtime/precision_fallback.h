// keep_layers_within_error's choice of the nodes to keep in a round (kiln/precision_report.h),
// apart from the engines it builds, so that tests can give it reports of their own.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kiln/precision_report.h"

namespace kiln {

// Each node to keep after `report`, with the origin it was found from (itself where it is
// one): for each layer over budget whose inputs are within it, that node; for an 8-bit engine
// (`int8`), where only the `quantized` layers move, that node if it is one, else the quantized
// layers upstream of it. Where the node found is kept already (`kept`), or does no rounding of
// its own (Pad, Reshape, Relu...), the nearest layers upstream of it that are not are kept.
std::vector<std::pair<std::string, std::string>> nodes_to_keep(
    const PrecisionReport& report, bool int8, const std::set<std::string>& quantized,
    const PrecisionMap& kept);

}  // namespace kiln
