// arena_planner: greedy-by-size offset assignment for the activation arena.
#include "planner/arena_planner.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "core/check.h"

namespace kiln {

namespace {

int64_t align_up(int64_t v, int64_t alignment) {
  return (v + alignment - 1) / alignment * alignment;
}

bool live_together(const BufferUse& a, const BufferUse& b) {
  return a.first <= b.last && b.first <= a.last;
}

// Peak of the live bytes over all steps: a sweep over lifetime starts and ends. Steps need
// not be dense (a plan may number them sparsely), so only the events are visited.
int64_t peak_live_bytes(const std::vector<BufferUse>& buffers) {
  std::vector<std::pair<int64_t, int64_t>> events;  // (step, +bytes at start / -bytes after end)
  events.reserve(buffers.size() * 2);
  for (const BufferUse& b : buffers) {
    if (b.bytes == 0) continue;
    events.emplace_back(b.first, b.bytes);
    events.emplace_back(static_cast<int64_t>(b.last) + 1, -b.bytes);
  }
  // At equal steps, releases (negative) sort before acquisitions: a buffer whose last read
  // is step s does not coexist with one first written at s + 1.
  std::sort(events.begin(), events.end());
  int64_t live = 0, peak = 0;
  for (const auto& [step, delta] : events) {
    live += delta;
    peak = std::max(peak, live);
  }
  return peak;
}

struct Placed {
  int64_t offset;
  int64_t end;  // offset + bytes
  int first, last;
};

std::string describe(size_t i, const BufferUse& b, int64_t offset) {
  return "buffer " + std::to_string(i) + " (" + std::to_string(b.bytes) + " bytes at [" +
         std::to_string(offset) + ", " + std::to_string(offset + b.bytes) + "), steps " +
         std::to_string(b.first) + ".." + std::to_string(b.last) + ")";
}

}  // namespace

ArenaPlan plan_arena(const std::vector<BufferUse>& buffers, int64_t alignment) {
  KILN_CHECK(alignment > 0);
  for (const BufferUse& b : buffers) KILN_CHECK(b.bytes >= 0 && b.last >= b.first);

  ArenaPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  plan.lower_bound = peak_live_bytes(buffers);

  // Largest first; ties by earlier start, then longer life, then index, so the plan is
  // deterministic across standard libraries.
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const BufferUse& x = buffers[a];
    const BufferUse& y = buffers[b];
    if (x.bytes != y.bytes) return x.bytes > y.bytes;
    if (x.first != y.first) return x.first < y.first;
    if (x.last != y.last) return x.last > y.last;
    return a < b;
  });

  // Placed buffers kept sorted by offset: one forward scan finds the lowest free offset.
  // The candidate only moves up past buffers that are live at the same time; the first
  // such buffer starting at or beyond candidate + bytes leaves a gap that fits, and every
  // later one starts even higher.
  std::vector<Placed> placed;
  placed.reserve(buffers.size());
  int64_t arena_end = 0;
  for (size_t i : order) {
    const BufferUse& b = buffers[i];
    if (b.bytes == 0) continue;  // offset 0, occupies nothing
    int64_t candidate = 0;
    for (const Placed& p : placed) {
      if (p.first > b.last || b.first > p.last) continue;
      if (p.offset >= candidate + b.bytes) break;
      candidate = std::max(candidate, align_up(p.end, alignment));
    }
    plan.offsets[i] = candidate;
    Placed entry{candidate, candidate + b.bytes, b.first, b.last};
    auto at = std::upper_bound(placed.begin(), placed.end(), candidate,
                               [](int64_t off, const Placed& p) { return off < p.offset; });
    placed.insert(at, entry);
    arena_end = std::max(arena_end, entry.end);
  }
  plan.total_bytes = align_up(arena_end, alignment);
  return plan;
}

Status check_arena_plan(const std::vector<BufferUse>& buffers, const ArenaPlan& plan,
                        int64_t alignment) {
  if (alignment <= 0) return internal_error("arena plan: alignment must be > 0");
  if (plan.offsets.size() != buffers.size()) {
    return internal_error("arena plan: " + std::to_string(plan.offsets.size()) + " offsets for " +
                          std::to_string(buffers.size()) + " buffers");
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferUse& b = buffers[i];
    const int64_t off = plan.offsets[i];
    if (b.bytes < 0 || b.last < b.first) {
      return internal_error("arena plan: " + describe(i, b, off) + " is malformed");
    }
    if (off < 0 || off % alignment != 0) {
      return internal_error("arena plan: " + describe(i, b, off) + " is not aligned to " +
                            std::to_string(alignment));
    }
    if (b.bytes > 0 && off + b.bytes > plan.total_bytes) {
      return internal_error("arena plan: " + describe(i, b, off) + " ends past the arena (" +
                            std::to_string(plan.total_bytes) + " bytes)");
    }
  }
  // Pairs that share a step, found by a sweep in order of first step: only buffers still
  // live when a buffer starts are compared with it.
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].first < buffers[b].first; });
  std::vector<size_t> live;
  for (size_t i : order) {
    const BufferUse& b = buffers[i];
    if (b.bytes == 0) continue;
    std::erase_if(live, [&](size_t j) { return buffers[j].last < b.first; });
    const int64_t lo = plan.offsets[i], hi = lo + b.bytes;
    for (size_t j : live) {
      const int64_t jlo = plan.offsets[j], jhi = jlo + buffers[j].bytes;
      if (lo < jhi && jlo < hi && live_together(b, buffers[j])) {
        const size_t a = std::min(i, j), c = std::max(i, j);
        return internal_error("arena plan: " + describe(a, buffers[a], plan.offsets[a]) +
                              " overlaps " + describe(c, buffers[c], plan.offsets[c]));
      }
    }
    live.push_back(i);
  }
  return Status::ok();
}

}  // namespace kiln
