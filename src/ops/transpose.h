// Transpose's permutation rule, shared by the reference kernel and the CUDA one.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "kiln/status.h"

namespace kiln {

// The node's `perm` for an input of `rank` (reversed axes when absent), checked to be a
// permutation of 0..rank-1.
Result<std::vector<int64_t>> transpose_perm(const Node& node, int64_t rank);

}  // namespace kiln
