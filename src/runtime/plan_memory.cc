#include "runtime/plan_memory.h"

#include <algorithm>
#include <climits>

#include "planner/arena_planner.h"
#include "runtime/plan.h"

namespace kiln {

// Buffer lifetimes in step numbers: 0 is the input copy, step k is k + 1, the output copy
// (and the end of a segment) is steps.size() + 1. A later segment (Plan::inherited_buffers)
// places only its own buffers, after the earlier segments'.
Status plan_memory(Plan& p, int64_t alignment, bool reuse) {
  const int n_steps = static_cast<int>(p.steps.size());
  std::vector<int> last_read(p.buffers.size(), -1), first_write(p.buffers.size(), INT_MAX);
  auto touch = [&](int slot, int t, bool write) {
    const int b = p.slots[slot].buffer;
    if (b < 0) return;
    if (write) first_write[b] = std::min(first_write[b], t);
    last_read[b] = std::max(last_read[b], t);
  };
  for (int s : p.input_slots) touch(s, 0, true);
  for (int k = 0; k < n_steps; ++k) {
    for (int s : p.steps[k].in)
      if (s >= 0) touch(s, k + 1, false);
    for (int s : p.steps[k].out)
      if (s >= 0) touch(s, k + 1, true);
  }
  for (int s : p.output_slots) touch(s, n_steps + 1, false);
  for (int s : p.live_out) touch(s, n_steps + 1, false);  // read by later segments
  // Graph inputs and outputs, what later segments read, and an earlier segment's buffers
  // (placed already).
  std::vector<bool> pinned(p.buffers.size(), false);
  for (int s : p.input_slots)
    if (p.slots[s].buffer >= 0) pinned[p.slots[s].buffer] = true;
  for (int s : p.output_slots)
    if (p.slots[s].buffer >= 0) pinned[p.slots[s].buffer] = true;
  for (int s : p.live_out)
    if (p.slots[s].buffer >= 0) pinned[p.slots[s].buffer] = true;
  for (int b = 0; b < p.inherited_buffers && b < static_cast<int>(pinned.size()); ++b)
    pinned[b] = true;

  // In place: redirect the output buffer to the input's when legal.
  std::vector<int> redirect(p.buffers.size());
  for (size_t b = 0; b < redirect.size(); ++b) redirect[b] = static_cast<int>(b);
  for (int k = 0; reuse && k < n_steps; ++k) {
    PlanStep& st = p.steps[k];
    if (st.kind != PlanStepKind::kKernel) continue;
    const int ip = st.kernel->inplace_input();
    if (ip < 0 || ip >= static_cast<int>(st.in.size()) || st.in[ip] < 0 || st.out.empty() ||
        st.out[0] < 0)
      continue;
    int bi = p.slots[st.in[ip]].buffer;
    const int bo = p.slots[st.out[0]].buffer;
    if (bi < 0 || bo < 0 || pinned[bi] || pinned[bo]) continue;
    bi = redirect[bi];
    if (p.buffers[bi].device != p.buffers[bo].device) continue;
    // Not over a buffer the step also reads through another input: Conv(r) + r would write
    // its output over the r its other threads still read.
    bool shared = false;
    for (size_t j = 0; j < st.in.size(); ++j) {
      if (static_cast<int>(j) == ip || st.in[j] < 0) continue;
      const int bj = p.slots[st.in[j]].buffer;
      shared = shared || (bj >= 0 && redirect[bj] == bi);
    }
    if (shared) continue;
    if (last_read[bi] != k + 1 || p.buffers[bi].bytes != p.buffers[bo].bytes) continue;
    // bo's readers now read bi: extend bi's life and retire bo.
    last_read[bi] = std::max(last_read[bi], last_read[bo]);
    redirect[bo] = bi;
    last_read[bo] = -1;
    st.info.tactic += " (in place)";
  }
  for (PlanSlot& s : p.slots)
    if (s.buffer >= 0) s.buffer = redirect[s.buffer];

  for (size_t d = 0; d < kDeviceKinds; ++d) {
    std::vector<BufferUse> uses;
    std::vector<size_t> ids;
    for (size_t b = static_cast<size_t>(p.inherited_buffers); b < p.buffers.size(); ++b) {
      if (device_index(p.buffers[b].device) != d) continue;
      const bool used = last_read[b] >= 0 && redirect[b] == static_cast<int>(b);
      BufferUse u;
      u.bytes = used ? p.buffers[b].bytes : 0;
      u.first = !used ? 0 : reuse ? std::min(first_write[b], last_read[b]) : 0;
      u.last = !used ? 0 : reuse ? last_read[b] : n_steps + 1;
      uses.push_back(u);
      ids.push_back(b);
    }
    const ArenaPlan plan = plan_arena(uses, alignment);
    KILN_RETURN_IF_ERROR(check_arena_plan(uses, plan, alignment));
    // A later segment's buffers go after the earlier segments' (whose values it may read).
    const int64_t base = (p.arena_base[d] + alignment - 1) / alignment * alignment;
    for (size_t i = 0; i < ids.size(); ++i) p.buffers[ids[i]].offset = base + plan.offsets[i];
    p.arena_bytes[d] = base + plan.total_bytes;
    p.arena_lower_bound[d] = base + plan.lower_bound;
  }
  return Status::ok();
}

}  // namespace kiln
