// Reshape's shape rule, shared with the ops that contain a reshape (ChannelShuffle).
#pragma once

#include <vector>

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

// The shape `in` takes under Reshape's `spec`: 0 copies the input's dimension at that index
// (unless allowzero), a single -1 is inferred from the element count.
Result<Shape> reshape_target(const Shape& in, const std::vector<int64_t>& spec, bool allowzero);

}  // namespace kiln
