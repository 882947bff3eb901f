// A plan as data (PlanInfo, kiln/report.h) and its text.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "runtime/plan.h"

namespace kiln {

std::string QuantScale::text() const {
  if (scale.empty()) return "";
  auto num = [](float f) {
    char b[32];
    std::snprintf(b, sizeof b, "%.9g", f);
    return std::string(b);
  };
  if (axis < 0) {
    std::string t = " q(scale " + num(scale[0]);
    if (!zero_point.empty() && zero_point[0] != 0) t += " zero " + std::to_string(zero_point[0]);
    return t + ")";
  }
  const auto [lo, hi] = std::minmax_element(scale.begin(), scale.end());
  std::string t = " q(axis " + std::to_string(axis) + ": " + std::to_string(scale.size()) +
                  " scales " + num(*lo) + ".." + num(*hi);
  if (std::any_of(zero_point.begin(), zero_point.end(), [](int32_t z) { return z != 0; }))
    t += " zero points";
  // Every scale's bits in a digest, so that saved plans differ when any one does.
  uint32_t h = 2166136261u;
  auto mix = [&h](uint32_t word) {
    for (int b = 0; b < 4; ++b) h = (h ^ ((word >> (8 * b)) & 0xFF)) * 16777619u;
  };
  for (float f : scale) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    mix(bits);
  }
  for (int32_t z : zero_point) mix(static_cast<uint32_t>(z));
  char digest[16];
  std::snprintf(digest, sizeof digest, " #%08x", h);
  return t + digest + ")";
}

namespace {

const char* kind_name(PlanStepKind k) {
  switch (k) {
    case PlanStepKind::kKernel: return "kernel";
    case PlanStepKind::kConvert: return "convert";
    case PlanStepKind::kCopy: return "copy";
  }
  return "?";
}

std::string slot_text(const Plan& p, int s) {
  if (s < 0) return "-";
  const PlanSlot& slot = p.slots[s];
  std::string t = "%" + std::to_string(s) + ":" + device_kind_name(slot.device) + " " +
                  dtype_name(slot.desc.dtype) + shape_str(slot.desc.shape);
  if (slot.desc.layout != Layout::kPlain) t += std::string(" ") + layout_name(slot.desc.layout);
  if (slot.alias_of >= 0) {
    t += " view of %" + std::to_string(slot.alias_of);
  } else if (slot.external) {
    t += " external";
  } else if (slot.buffer >= 0) {
    t += " @" + std::to_string(p.buffers[slot.buffer].offset);
  } else if (slot.fixed) {
    t += " const";
  }
  return t + slot.quant.text();
}

// One step's line, with or without its tactic.
std::string step_line(size_t k, const PlanStepInfo& s, bool tactic) {
  std::string r = std::to_string(k) + " " + s.device + " " + s.kind + " " + s.op + " " + s.name;
  if (tactic && !s.tactic.empty()) r += " [" + s.tactic + "]";
  r += ":";
  for (const std::string& in : s.inputs) r += " " + in;
  r += " ->";
  for (const std::string& out : s.outputs) r += " " + out;
  r += "\n";
  if (tactic)
    for (const std::string& d : s.declined) r += "    declined by " + d + "\n";
  if (tactic)
    for (const std::string& t : s.timed) r += "    timed " + t + "\n";
  return r;
}

std::string plan_text(const PlanInfo& p, bool tactics) {
  std::string r;
  for (const auto& [name, shape] : p.input_shapes)
    r += "input " + name + " " + shape_str(shape) + "\n";
  auto read_backs = [&](size_t k) {
    for (const PlanInfo::ReadBack& b : p.read_backs)
      if (b.after_steps == k) r += "read back " + b.what + "\n";
  };
  for (size_t k = 0; k < p.steps.size(); ++k) {
    read_backs(k);
    r += step_line(k, p.steps[k], tactics);
  }
  read_backs(p.steps.size());
  if (!p.unfinished.empty()) r += "the rest is planned once it is read: " + p.unfinished + "\n";
  for (const auto& [device, bytes] : p.arena_bytes) {
    auto ws = p.workspace_bytes.find(device);
    r += "arena " + device + ": " + std::to_string(bytes) + " bytes, workspace " +
         std::to_string(ws == p.workspace_bytes.end() ? 0 : ws->second) + "\n";
  }
  return r;
}

}  // namespace

std::string PlanInfo::text() const { return plan_text(*this, true); }
std::string PlanInfo::structure() const { return plan_text(*this, false); }

PlanInfo plan_info(const Plan& p, const Graph& g) {
  PlanInfo r;
  for (size_t i = 0; i < p.input_shapes.size() && i < g.inputs().size(); ++i)
    r.input_shapes[g.inputs()[i]->name] = p.input_shapes[i];
  for (const PlanStep& st : p.steps) {
    PlanStepInfo s;
    s.kind = kind_name(st.kind);
    s.device = device_kind_name(st.device);
    s.name = st.info.name;
    s.op = st.info.op;
    s.tactic = st.info.tactic;
    s.declined = st.declined;
    s.timed = st.timed;
    for (int in : st.in) s.inputs.push_back(slot_text(p, in));
    for (int out : st.out) s.outputs.push_back(slot_text(p, out));
    r.steps.push_back(std::move(s));
  }
  for (const ReadBack& b : p.read_back) r.read_backs.push_back({r.steps.size(), b.what});
  for (size_t d = 0; d < kDeviceKinds; ++d) {
    const std::string device = device_kind_name(static_cast<DeviceKind>(d));
    if (p.arena_bytes[d] || p.workspace_bytes[d] ||
        std::any_of(p.steps.begin(), p.steps.end(),
                    [&](const PlanStep& st) { return device_index(st.device) == d; })) {
      r.arena_bytes[device] = p.arena_bytes[d];
      r.workspace_bytes[device] = static_cast<int64_t>(p.workspace_bytes[d]);
    }
  }
  return r;
}

}  // namespace kiln
