// Memory planning of a built plan (runtime/plan.h): lifetimes, in-place reuse, one arena per
// device.
#pragma once

#include <cstdint>

#include "kiln/status.h"

namespace kiln {

struct Plan;

// Gives every arena slot of `plan` an offset in its device's arena (aligned to `alignment`)
// from the slots' lifetimes in step order: the graph inputs are written before the first
// step, the graph outputs read after the last. A kernel's output takes over its in-place
// input's buffer (Kernel::inplace_input) when no later step reads that input and neither is
// a graph input or output. Without `reuse`, no two buffers share bytes and nothing is written
// in place: each lives for the whole run (EngineOptions::reuse_memory off).
Status plan_memory(Plan& plan, int64_t alignment, bool reuse = true);

}  // namespace kiln
