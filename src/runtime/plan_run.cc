// Running a built plan (runtime/plan.h): binding it to memory, the step executor, its text.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "runtime/plan.h"

namespace kiln {

void bind_plan(Plan& p, void* const arena[kDeviceKinds], void* const workspace[kDeviceKinds]) {
  for (size_t d = 0; d < kDeviceKinds; ++d) {
    p.arena[d] = arena[d];
    p.workspace[d] = p.workspace_bytes[d] ? workspace[d] : nullptr;
  }
  // The external slot a slot is or views, or -1.
  auto external_root = [&](int s) {
    while (p.slots[s].alias_of >= 0) s = p.slots[s].alias_of;
    return p.slots[s].external ? s : -1;
  };
  p.external.clear();
  for (size_t k = 0; k < p.steps.size(); ++k) {
    PlanStep& st = p.steps[k];
    st.operands.reset(st.in.size(), st.out.size());
    for (size_t i = 0; i < st.in.size(); ++i) {
      if (st.in[i] < 0) continue;
      st.operands.set_in(i, p.slots[st.in[i]].desc, p.data(st.in[i]));
      if (external_root(st.in[i]) >= 0)
        p.external.push_back({static_cast<int>(k), false, static_cast<int>(i), st.in[i]});
    }
    for (size_t i = 0; i < st.out.size(); ++i) {
      if (st.out[i] < 0) continue;
      st.operands.set_out(i, p.slots[st.out[i]].desc, p.data(st.out[i]));
      if (external_root(st.out[i]) >= 0)
        p.external.push_back({static_cast<int>(k), true, static_cast<int>(i), st.out[i]});
    }
  }
}

bool plan_output_in_place(const Plan& p, size_t i) {
  const int s = p.output_slots[i];
  if (!p.slots[s].external) return false;
  for (size_t j = 0; j < i; ++j)
    if (p.output_slots[j] == s) return false;  // the earlier output holds it
  return std::find(p.input_slots.begin(), p.input_slots.end(), s) == p.input_slots.end();
}

void set_plan_io(Plan& p, const std::vector<const void*>& inputs,
                 const std::vector<void*>& outputs) {
  for (size_t i = 0; i < p.input_slots.size() && i < inputs.size(); ++i) {
    PlanSlot& s = p.slots[p.input_slots[i]];
    if (s.external) s.fixed = const_cast<void*>(inputs[i]);
  }
  for (size_t i = 0; i < p.output_slots.size() && i < outputs.size(); ++i)
    if (plan_output_in_place(p, i)) p.slots[p.output_slots[i]].fixed = outputs[i];
  for (const Plan::ExternalOperand& e : p.external) {
    KernelOperands& ops = p.steps[e.step].operands;
    (e.out ? ops.out[e.index] : ops.in[e.index]).data = p.data(e.slot);
  }
}

Result<std::vector<Tensor>> read_plan_values(const Plan& p, const PlanDevices& devices) {
  std::vector<Tensor> read;
  for (const ReadBack& r : p.read_back) {
    const PlanSlot& slot = p.slots[r.slot];
    const TensorDesc& d = slot.desc;
    std::vector<uint8_t> bytes(d.nbytes());
    if (slot.device == DeviceKind::kCpu) {
      if (!bytes.empty()) std::memcpy(bytes.data(), p.data(r.slot), bytes.size());
    } else {
      KILN_RETURN_IF_ERROR_CTX(
          devices[slot.device].copy_to_host(bytes.data(), p.data(r.slot), bytes.size()),
          "reading back " + r.what);
    }
    read.push_back(tensor_from_bytes(bytes.data(), d.dtype, d.shape, r.dtype));
  }
  return read;
}

std::string read_back_key(const Plan& p, const std::vector<Tensor>& read) {
  std::string key;
  for (size_t i = 0; i < read.size() && i < p.read_back.size(); ++i) {
    if (!p.read_back[i].keys_plan) continue;
    key += std::to_string(i) + shape_str(read[i].shape()) + "=";
    key.append(static_cast<const char*>(read[i].raw()), read[i].nbytes());
    key += ';';
  }
  return key;
}

Status run_plan_steps(Plan& p, const PlanDevices& devices, size_t first, size_t last) {
  for (size_t k = first; k < last; ++k) {
    PlanStep& st = p.steps[k];
    PlanDevice& dev = devices[st.device];
    switch (st.kind) {
      case PlanStepKind::kKernel: {
        if (st.kernel->is_alias()) break;
        const size_t d = device_index(st.device);
        KILN_RETURN_IF_ERROR_CTX(
            dev.execute(*st.kernel, st.operands, p.workspace[d], p.workspace_bytes[d]),
            st.node->describe());
        break;
      }
      case PlanStepKind::kConvert:
        KILN_RETURN_IF_ERROR_CTX(dev.convert(st.operands.in[0], st.operands.out[0]), st.info.name);
        break;
      case PlanStepKind::kCopy: {
        const TensorRef& src = st.operands.in[0];
        const TensorRef& dst = st.operands.out[0];
        const size_t n = src.desc.nbytes();
        const bool to_host = p.slots[st.out[0]].device == DeviceKind::kCpu;
        KILN_RETURN_IF_ERROR_CTX(to_host ? dev.copy_to_host(dst.data, src.data, n)
                                         : dev.copy_from_host(dst.data, src.data, n),
                                 st.info.name);
        break;
      }
    }
  }
  return Status::ok();
}

}  // namespace kiln
