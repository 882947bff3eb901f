// Slice's window, shared by the reference kernel (ops/slice.cc) and the backends' kernels.
#pragma once

#include <vector>

#include "ops/op_registry.h"

namespace kiln {

// Per axis of the input: the first index, the step and the count taken. Per axis of size d
// (numpy semantics): negative starts/ends count from the end (+d), then are clamped to [0, d]
// for positive steps and to [0, d-1] / [-1, d-1] for negative ones; with at most one element
// taken the step is 1.
struct SliceWindow {
  std::vector<int64_t> start, step;
  Shape shape;
};

// The window of Slice's inputs (data, starts, ends, axes?, steps?): the four index inputs must
// be known (constants, or values computed at build); an error names what is wrong.
Result<SliceWindow> slice_window(const std::vector<TensorDesc>& in);

}  // namespace kiln
