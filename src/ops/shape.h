// Shape's attribute rule, for the reference kernel and constant folding.
#pragma once

#include <cstdint>
#include <utility>

#include "ir/graph.h"

namespace kiln {

// [start, end) of the dimensions a Shape node reports for an input of `rank` (opset 15:
// negative values count from the end, both clamped to [0, rank], end at least start).
std::pair<int64_t, int64_t> shape_range(const Node& node, int64_t rank);

}  // namespace kiln
