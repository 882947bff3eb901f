// The per-tensor size limit (EngineOptions::max_tensor_bytes), checked before any kernel or
// library sees a shape: at build for every value whose shape is fully known, and on each run
// for every node's inferred outputs before its kernel prepares (oneDNN would otherwise ask
// the allocator for the absurd size itself).
#pragma once

#include <cstdint>

#include "ir/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

// ok, or kResourceExhausted naming the shape, when its bytes overflow or exceed `max_bytes`.
Status check_tensor_size(DataType dtype, const Shape& shape, int64_t max_bytes);

// Every value of `g` with a fully known shape (graph inputs, constants, node outputs), the
// error naming its producer.
Status check_declared_sizes(const Graph& g, int64_t max_bytes);

}  // namespace kiln
