// Reshape's shape rule, shared with the ops that contain a reshape (ChannelShuffle).
#pragma once

#include <vector>

#include "ir/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

// The shape `in` takes under Reshape's `spec`: 0 copies the input's dimension at that index
// (unless allowzero), a single -1 is inferred from the element count.
Result<Shape> reshape_target(const Shape& in, const std::vector<int64_t>& spec, bool allowzero);

// The node's `allowzero` attribute (opset 14; 0 when absent).
inline bool reshape_allowzero(const Node& n) { return n.attrs.get_int("allowzero", 0) != 0; }

}  // namespace kiln
