// Activation-arena planning: every intermediate tensor of a plan gets an offset inside one
// arena, so that tensors live at the same time never overlap and tensors whose lifetimes
// are disjoint share memory. Device-neutral: it sees sizes and step intervals only.
//
// The planner is greedy by size: buffers are placed largest first, each at the lowest
// aligned offset that is free among the already placed buffers whose lifetimes overlap its
// own. Large buffers fix the shape of the arena early and small ones fill the gaps; on CNN
// graphs this lands at or near the lower bound (the peak of live bytes over all steps).
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/status.h"

namespace kiln {

// One buffer of the plan: its size and the steps (inclusive) during which it is live.
struct BufferUse {
  int64_t bytes = 0;
  int first = 0;  // step that writes it first
  int last = 0;   // last step that reads it (>= first)
};

struct ArenaPlan {
  std::vector<int64_t> offsets;  // per buffer, aligned to `alignment`
  int64_t total_bytes = 0;       // arena size
  int64_t lower_bound = 0;       // max over steps of the live bytes (no plan can be smaller)
};

// Places every buffer at an offset so that buffers live at the same time never overlap.
// Zero-byte buffers get offset 0 and take no space. total_bytes is rounded up to
// `alignment` (so arenas can be laid end to end). Preconditions (a caller bug otherwise,
// KILN_CHECK): bytes >= 0, last >= first, alignment > 0. Deterministic: the same input
// gives the same plan. O(n²) in the worst case with a small constant (thousands of
// buffers take milliseconds).
ArenaPlan plan_arena(const std::vector<BufferUse>& buffers, int64_t alignment = 256);

// Checks a plan: every pair of buffers that overlap in time is disjoint in memory, every
// offset aligned and inside total_bytes. Returns an internal error naming the first clash.
Status check_arena_plan(const std::vector<BufferUse>& buffers, const ArenaPlan& plan,
                        int64_t alignment = 256);

}  // namespace kiln
