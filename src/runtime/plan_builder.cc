// build_plan: lower the graph for one set of input shapes, on every device (see plan.h).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string_view>

#include "core/half.h"
#include "ops/op_registry.h"
#include "runtime/plan.h"
#include "runtime/plan_memory.h"
#include "runtime/tensor_limit.h"

namespace kiln {

std::vector<uint8_t> host_bytes_as(const Tensor& t, DataType dt) {
  std::vector<uint8_t> out;
  if (t.dtype() == dt || !is_device_float(dt) || !is_device_float(t.dtype())) {
    out.resize(t.nbytes());
    if (t.nbytes()) std::memcpy(out.data(), t.raw(), t.nbytes());
    return out;
  }
  const std::vector<float> f = t.to_floats();
  out.resize(f.size() * dtype_size(dt));
  store_floats(f.data(), f.size(), dt, out.data());
  return out;
}

Tensor tensor_from_bytes(const void* bytes, DataType dt, const Shape& shape, DataType want) {
  if (dt == want || !is_device_float(dt) || !is_device_float(want)) {
    Tensor t(dt, shape);
    if (t.nbytes()) std::memcpy(t.raw(), bytes, t.nbytes());
    return t;
  }
  std::vector<float> f(static_cast<size_t>(shape_numel(shape)));
  load_floats(bytes, f.size(), dt, f.data());
  Tensor t(want, shape);
  store_floats(f.data(), f.size(), want, t.raw());
  return t;
}

namespace {

class Builder {
 public:
  Builder(Plan& p, const Graph& g, const PlanOptions& o, const PlanDevices& d)
      : p_(p), g_(g), o_(o), dev_(d) {}

  Status build(const std::vector<const Node*>& order, const std::vector<TensorDesc>& inputs);
  // The rest after segment `before`, whose read-backs gave `read`.
  Status build_after(const std::vector<const Node*>& order, const Plan& before,
                     const std::vector<Tensor>& read);
  Status set_scales();

 private:
  int new_slot(const TensorDesc& d, DeviceKind device, int value_id, bool arena) {
    PlanSlot s;
    s.desc = d;
    s.desc.value = nullptr;
    s.device = device;
    s.value_id = value_id;
    if (arena) {
      s.buffer = static_cast<int>(p_.buffers.size());
      p_.buffers.push_back(PlanBuffer{device, static_cast<int64_t>(d.nbytes()), 0});
    }
    p_.slots.push_back(s);
    return static_cast<int>(p_.slots.size()) - 1;
  }
  // The first form of `v` on `device`, or -1.
  int first_on(const Value* v, DeviceKind device) const {
    for (int s : reps_[v->id()])
      if (p_.slots[s].device == device) return s;
    return -1;
  }
  // The slot holding value `v` on `device` in `layout` and `dtype`, adding the conversion
  // and copy steps that make it where it does not exist yet.
  Result<int> slot_for(const Value* v, DeviceKind device, Layout layout, DataType dtype);
  // A form of `v` on `device` copied from the other side (plain, in `dtype` where the device
  // can convert to it).
  Result<int> copy_to(const Value* v, DeviceKind device, DataType dtype);
  // A constant placed on `device` as `dt` (float constants in the asking node's dtype).
  Result<int> constant_slot(const Value* v, const Tensor& t, DeviceKind device, DataType dt);
  // The node's compute precision: its override, else the plan's.
  Precision precision_of(const Node& n) const {
    auto it = o_.precision_overrides.find(n.name);
    return it == o_.precision_overrides.end() ? o_.precision : it->second;
  }
  Status add_node(const Node& n, int order_index);
  // The first of `candidates` (the main device's) that takes `n`, else the reference kernel on
  // the host; the reasons of those that declined are kept with its step.
  Status add_first_taker(const Node& n, const Node& kn, int order_index,
                         const std::vector<const KernelCandidate*>& candidates,
                         std::vector<std::string>& declined, std::vector<std::string>& timed);
  // The nodes from `first` on, then the outputs (or the segment's end), the scales and memory.
  Status build_from(size_t first);
  // Where the order reads each value last, and which values are graph outputs.
  void find_last_uses();
  // want_ and bounded_ for `n` from its inputs' descs; where its shapes need values not known at
  // build and it has no bound, the segment's end before it (stop_, read_back).
  Status node_shapes(const Node& n, int order_index);
  // Reads `v` back at the segment's end (a plain form of it).
  Status read_back_value(const Value* v);
  // The segment's end: the slots later segments read, the state to resume from.
  void end_segment();
  // The segment's end after bounded node `n` (its step just added).
  void stop_after_bounded(const Node& n, int order_index);
  // How input i of a step of `kernel` on `device` reads its value: the description the
  // kernel is prepared with, and the slot holding it (-1: made by slot_for in `layout` and
  // `dtype`; unused for a constant the kernel reads on the host).
  struct InputForm {
    TensorDesc desc;
    int slot = -1;
    bool host_read = false;
    Layout layout = Layout::kPlain;
    DataType dtype = DataType::kFloat32;
  };
  std::vector<InputForm> input_forms(const Node& n, DeviceKind device, const Kernel& kernel);
  // A candidate prepared on the node's real shapes for timing: the step takes the chosen one
  // as it is (not prepared again, so its tactic says what was timed).
  struct Trial {
    std::unique_ptr<Kernel> kernel;
    std::vector<TensorDesc> in, out;
    std::vector<std::string> notes;
  };
  // Where the device times candidates and `kn` has several: each is made and prepared on the
  // node's real shapes; where one accepts it is the winner untimed, where several do each is
  // timed and the fastest wins. Returns the winner's index in `candidates`, prepared in
  // *winner (the others dropped), the times in *timed and the reasons of those that declined
  // before the first that accepts in *declined; or -1 when none accepts (the first-taker path
  // then says why, or falls back).
  Result<int> fastest_candidate(const Node& n, const Node& kn,
                                const std::vector<const KernelCandidate*>& candidates,
                                std::vector<std::string>* timed, std::vector<std::string>* declined,
                                Trial* winner);
  // Prepares t->kernel for `n` on the main device: false with *why where it declines.
  Result<bool> prepare_candidate(const Node& n, Trial* t, const char* backend, std::string* why);
  // The milliseconds of a prepared t->kernel.
  Result<float> time_candidate(const Node& n, Trial* t, const char* backend);
  // Adds `kernel` (of `device`) as the step running `n` (`kn` with its resolved inputs),
  // prepared here unless `prepared_out` gives the outputs of its prepare for these inputs.
  // *declined: the kernel found at prepare that it cannot run the node (nothing added).
  Status add_kernel_step(const Node& n, const Node& kn, int order_index, DeviceKind device,
                         std::unique_ptr<Kernel> kernel, const std::string& fallback_reason,
                         std::string* declined,
                         const std::vector<TensorDesc>* prepared_out = nullptr);
  const Node& resolved(const Node& n);
  Status eval_on_host(const Node& n, bool* done);

  Plan& p_;
  const Graph& g_;
  const PlanOptions& o_;
  const PlanDevices& dev_;
  std::vector<TensorDesc> host_;        // per value id: graph dtype, shape, known value
  std::vector<std::vector<int>> reps_;  // per value id: its slots (devices, layouts, dtypes)
  const std::vector<const Node*>* order_ = nullptr;
  std::vector<int> last_use_;    // per value id: the last order index reading it, -1
  std::vector<bool> is_output_;  // per value id
  int stop_ = -1;                // the segment ends before this order index
  // The node being added: its output descs from the shape rule (or its bound), and whether they
  // are its bound (BuildContext::bounded).
  std::vector<TensorDesc> want_;
  bool bounded_ = false;
};

}  // namespace

// The builder's state where a segment stops: resumed by build_plan_after.
struct PlanContinuation {
  std::vector<TensorDesc> host;
  std::vector<std::vector<int>> reps;
  size_t resume_at = 0;
};

namespace {

Result<int> Builder::constant_slot(const Value* v, const Tensor& t, DeviceKind device,
                                   DataType dt) {
  if (!is_device_float(t.dtype())) dt = t.dtype();
  int s = new_slot(TensorDesc{dt, t.shape()}, device, v->id(), false);
  reps_[v->id()].push_back(s);
  if (device == DeviceKind::kCpu) {
    // The host reads constants in place, or a converted copy the plan keeps.
    const Tensor* held = &t;
    if (dt != t.dtype()) {
      p_.host_values.push_back(tensor_from_bytes(t.raw(), t.dtype(), t.shape(), dt));
      held = &p_.host_values.back();
    }
    p_.slots[s].fixed = const_cast<void*>(held->raw());
    return s;
  }
  std::vector<uint8_t> bytes;
  if (dt == DataType::kFloat16 && t.dtype() == DataType::kFloat32) {
    // Saturated, as fp16 engines do: a value fp16 cannot hold is pulled into its range rather
    // than flushed to 0 or inf (F.normalize's eps of 1e-12 as 0 makes 0/0).
    std::vector<float> f = t.to_floats();
    bytes.resize(f.size() * 2);
    Fp16Saturation sat;
    for (size_t i = 0; i < f.size(); ++i) {
      const uint16_t h = sat.convert(f[i]);
      std::memcpy(&bytes[i * 2], &h, 2);
    }
    if (sat.changed) p_.notes.push_back(sat.note("constant '" + v->name + "'"));
  } else {
    bytes = host_bytes_as(t, dt);
  }
  std::string key = "const:" + v->name + ":" + dtype_name(dt);
  // A value computed at build time (ViT's class token expanded to the batch) differs between
  // the plans of one engine: its key names the shape and the bytes, so that the plan for
  // another batch uploads its own instead of colliding with the first one's.
  if (&t != &v->constant) {
    key += ':';
    key += shape_str(t.shape());
    key += ':';
    key += std::to_string(std::hash<std::string_view>{}(
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())));
  }
  KILN_ASSIGN_OR_RETURN(p_.slots[s].fixed,
                        dev_[device].place_constant(key, bytes.data(), bytes.size()));
  return s;
}

Result<int> Builder::copy_to(const Value* v, DeviceKind device, DataType dtype) {
  const DeviceKind other = device == DeviceKind::kCpu ? p_.main : DeviceKind::kCpu;
  if (other == device || first_on(v, other) < 0)
    return internal_error("value '" + v->name + "' has no producer in the plan");
  // The copy moves plain bytes. Dtypes are converted on the device, not the host: before a
  // copy to the host, after a copy from it.
  int src;
  if (device == DeviceKind::kCpu) {
    const DataType have = p_.slots[first_on(v, other)].desc.dtype;
    const DataType dt = is_device_float(have) && is_device_float(dtype) ? dtype : have;
    KILN_ASSIGN_OR_RETURN(src, slot_for(v, other, Layout::kPlain, dt));
  } else {
    KILN_ASSIGN_OR_RETURN(
        src, slot_for(v, other, Layout::kPlain, p_.slots[first_on(v, other)].desc.dtype));
  }
  TensorDesc d = p_.slots[src].desc;
  const int dst = new_slot(d, device, v->id(), true);
  PlanStep step;
  step.kind = PlanStepKind::kCopy;
  step.device = device == DeviceKind::kCpu ? other : device;
  step.in = {src};
  step.out = {dst};
  step.info = {"copy " + v->name, "Copy",
               std::string(device_kind_name(other)) + " -> " + device_kind_name(device) + " " +
                   dtype_name(d.dtype),
               false, 0.0};
  p_.steps.push_back(std::move(step));
  reps_[v->id()].push_back(dst);
  return dst;
}

Result<int> Builder::slot_for(const Value* v, DeviceKind device, Layout layout, DataType dtype) {
  std::vector<int>& reps = reps_[v->id()];
  const Tensor* known = host_[v->id()].value;
  if (first_on(v, device) < 0) {
    if (known) {
      // A constant (or a value computed at build) is placed where it is read.
      KILN_RETURN_IF_ERROR(constant_slot(v, *known, device, dtype).status());
    } else {
      KILN_RETURN_IF_ERROR(copy_to(v, device, dtype).status());
    }
  }
  for (int s : reps)
    if (p_.slots[s].device == device && p_.slots[s].desc.layout == layout &&
        p_.slots[s].desc.dtype == dtype)
      return s;
  const int src = first_on(v, device);
  TensorDesc d = p_.slots[src].desc;
  if (layout == Layout::kNHWC && d.shape.size() != 4)
    return internal_error("value '" + v->name + "': NHWC asked for rank " +
                          std::to_string(d.shape.size()));
  if (d.dtype != dtype && !(is_device_float(d.dtype) && is_device_float(dtype)))
    return internal_error("value '" + v->name + "': cannot convert " + dtype_name(d.dtype) +
                          " to " + dtype_name(dtype));
  // NHWC and plain order the same bytes alike when H·W or C is 1 (an SE block's pooled
  // [N, C, 1, 1]): a second view of the same buffer, no step.
  if (d.dtype == dtype && d.shape.size() == 4 &&
      (d.shape[1] == 1 || d.shape[2] * d.shape[3] == 1) &&
      (d.layout == Layout::kPlain || d.layout == Layout::kNHWC) &&
      (layout == Layout::kPlain || layout == Layout::kNHWC)) {
    PlanSlot alias = p_.slots[src];
    alias.desc.layout = layout;
    alias.alias_of = src;
    p_.slots.push_back(alias);
    reps.push_back(static_cast<int>(p_.slots.size()) - 1);
    return reps.back();
  }
  d.layout = layout;
  d.dtype = dtype;
  const int dst = new_slot(d, device, v->id(), true);
  PlanStep step;
  step.kind = PlanStepKind::kConvert;
  step.device = device;
  step.in = {src};
  step.out = {dst};
  step.info = {"convert " + v->name, "Convert",
               std::string(layout_name(p_.slots[src].desc.layout)) + " " +
                   dtype_name(p_.slots[src].desc.dtype) + " -> " + layout_name(layout) + " " +
                   dtype_name(dtype),
               device == DeviceKind::kCpu, 0.0};
  p_.steps.push_back(std::move(step));
  reps.push_back(dst);
  return dst;
}

// Shape arithmetic (Shape, and nodes whose inputs are all known on the host) is evaluated
// here once, for the plan's shapes, instead of at every run.
Status Builder::eval_on_host(const Node& n, bool* done) {
  *done = false;
  const OpDef* def = OpRegistry::find(n.op);
  if (!def) return Status::ok();
  std::vector<Tensor> out;
  if (n.op == OpKind::Shape) {
    // Only the input's shape matters; let the reference run on a shape-only stand-in.
    const TensorDesc& in = host_[n.inputs[0]->id()];
    Tensor stand_in(in.dtype, in.shape);
    std::vector<const Tensor*> ins = {&stand_in};
    if (stand_in.nbytes() > (size_t{64} << 20)) return Status::ok();
    KILN_RETURN_IF_ERROR(run_reference(n, ins, out));
  } else {
    std::vector<const Tensor*> ins;
    int64_t bytes = 0;
    for (const Value* v : n.inputs) {
      if (!v) {
        ins.push_back(nullptr);
        continue;
      }
      const Tensor* t = host_[v->id()].value;
      if (!t) return Status::ok();
      bytes += t->nbytes();
      ins.push_back(t);
    }
    // Weights reach kernels as constants; only small tensors are evaluated here.
    if (bytes > 4096 || n.op == OpKind::Conv || n.op == OpKind::Gemm) return Status::ok();
    KILN_RETURN_IF_ERROR(run_reference(n, ins, out));
  }
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    if (!n.outputs[i]) continue;
    p_.host_values.push_back(out[i]);
    const Tensor& t = p_.host_values.back();
    host_[n.outputs[i]->id()] = TensorDesc{t.dtype(), t.shape(), &t};
  }
  *done = true;
  return Status::ok();
}

// `n` itself, or a copy whose inputs computed at build time (host_ knows their value) read
// constants holding those values: a Reshape whose shape is Concat(Shape(x)...), a Pad whose
// pads were computed. The kernels then take them as they take the model's own constants.
const Node& Builder::resolved(const Node& n) {
  std::vector<size_t> known;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Value* v = n.inputs[i];
    if (v && !v->is_constant() && host_[v->id()].value) known.push_back(i);
  }
  if (known.empty()) return n;
  Node copy = n;
  for (size_t i : known) {
    const Tensor& t = *host_[n.inputs[i]->id()].value;
    Value c = *n.inputs[i];  // same name and id; no producer or consumers of its own
    c.producer = nullptr;
    c.consumers.clear();
    c.dtype = t.dtype();
    c.has_shape = true;
    c.dims.clear();
    for (int64_t d : t.shape()) c.dims.push_back(Dim{d, ""});
    c.constant = t;
    p_.resolved_values.push_back(std::move(c));
    copy.inputs[i] = &p_.resolved_values.back();
  }
  p_.resolved_nodes.push_back(std::move(copy));
  return p_.resolved_nodes.back();
}

Status Builder::add_node(const Node& n, int order_index) {
  bool evaluated = false;
  KILN_RETURN_IF_ERROR(eval_on_host(n, &evaluated));
  if (evaluated) return Status::ok();

  KILN_RETURN_IF_ERROR(node_shapes(n, order_index));
  if (stop_ >= 0) return Status::ok();  // its inputs are read back first
  const Node& kn = resolved(n);
  // The main device's candidates in order: the first that takes the node; the others' reasons
  // are recorded with its step.
  std::vector<std::string> declined, timed;
  std::vector<const KernelCandidate*> candidates = candidates_for(kn, p_.main, o_.reference_only);
  Trial winner;
  KILN_ASSIGN_OR_RETURN(const int fastest,
                        fastest_candidate(n, kn, candidates, &timed, &declined, &winner));
  if (fastest >= 0) {
    std::string why;
    KILN_RETURN_IF_ERROR(add_kernel_step(n, kn, order_index, p_.main, std::move(winner.kernel), "",
                                         &why, &winner.out));
    if (!why.empty()) return internal_error(n.describe() + ": prepared kernel declined: " + why);
    for (std::string& note : winner.notes) p_.notes.push_back(std::move(note));
    p_.steps.back().timed = std::move(timed);
    p_.steps.back().declined = std::move(declined);
    return Status::ok();
  }
  declined.clear();
  KILN_RETURN_IF_ERROR(add_first_taker(n, kn, order_index, candidates, declined, timed));
  if (stop_ >= 0) return Status::ok();  // inputs it reads on the host are read back first
  if (bounded_) stop_after_bounded(n, order_index);
  return Status::ok();
}

Status Builder::add_first_taker(const Node& n, const Node& kn, int order_index,
                                const std::vector<const KernelCandidate*>& candidates,
                                std::vector<std::string>& declined,
                                std::vector<std::string>& timed) {
  const Precision prec = precision_of(n);
  // Small inputs a declining kernel reads on the host that are not known at build (a graph
  // input's threshold): read back first, so that the rest is planned with them known.
  std::vector<const Value*> host_reads;
  for (const KernelCandidate* c : candidates) {
    const BackendState* state = o_.states ? o_.states->find(c->backend) : nullptr;
    auto made = c->make(kn, KernelParams{prec, state});
    if (!made.is_ok()) {
      if (made.status().code() != StatusCode::kUnsupported)
        return made.status().with_context(n.describe());
      declined.push_back(std::string(c->backend) + ": " + made.status().message());
      continue;
    }
    for (size_t i = 0; i < kn.inputs.size(); ++i) {
      const Value* v = kn.inputs[i];
      if (v && !host_[v->id()].value && host_[v->id()].numel() <= kKeyedInputElements &&
          (*made)->reads_on_host(static_cast<int>(i)) &&
          std::find(host_reads.begin(), host_reads.end(), v) == host_reads.end())
        host_reads.push_back(v);
    }
    std::string why;
    KILN_RETURN_IF_ERROR(
        add_kernel_step(n, kn, order_index, p_.main, std::move(made).value(), "", &why));
    if (why.empty()) {
      p_.steps.back().declined = std::move(declined);
      p_.steps.back().timed = std::move(timed);
      return Status::ok();
    }
    // A kernel may find out only from the shapes that it cannot run the node (conversions
    // already added for it are harmless).
    declined.push_back(std::string(c->backend) + ": " + why);
  }
  if (p_.main == DeviceKind::kCpu) {
    std::string why = declined.empty() ? "no kernel" : declined.back();
    return unsupported(n.describe() + ": op " + op_name(n.op) + " has no kernel that takes it (" +
                       why + ")");
  }
  if (!host_reads.empty()) {
    for (const Value* v : host_reads) KILN_RETURN_IF_ERROR(read_back_value(v));
    stop_ = order_index;
    return Status::ok();
  }
  // Another main device: the reference kernel on the host, as a fallback step.
  if (!OpRegistry::find(n.op))
    return unsupported(n.describe() + ": op " + op_name(n.op) + " has no kernel");
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel, make_reference_kernel(kn));
  const std::string why =
      declined.empty() ? std::string("no CUDA kernel for ") + op_name(n.op) : declined.back();
  std::string refused;
  KILN_RETURN_IF_ERROR(
      add_kernel_step(n, kn, order_index, DeviceKind::kCpu, std::move(kernel), why, &refused));
  if (!refused.empty()) return unsupported(n.describe() + ": " + refused);
  p_.steps.back().declined = std::move(declined);
  return Status::ok();
}

std::vector<Builder::InputForm> Builder::input_forms(const Node& n, DeviceKind device,
                                                     const Kernel& kernel) {
  PlanDevice& dev = dev_[device];
  const Precision prec = precision_of(n);
  // The layouts the inputs are offered in (their first form on this device), asked all at
  // once.
  std::vector<TensorDesc> offered(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.inputs[i]) {
      offered[i] = host_[n.inputs[i]->id()];
      offered[i].layout = Layout::kPlain;
      const int s = first_on(n.inputs[i], device);
      if (s >= 0) offered[i].layout = p_.slots[s].desc.layout;
    }
  const std::vector<Layout> wanted = kernel.input_layouts_for(offered);
  std::vector<InputForm> forms(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Value* v = n.inputs[i];
    if (!v) continue;
    InputForm& f = forms[i];
    const TensorDesc& h = host_[v->id()];
    f.dtype = dev.dtype_for(h.dtype, prec);
    if (h.value && kernel.reads_on_host(static_cast<int>(i))) {
      f.desc = TensorDesc{f.dtype, h.shape, h.value};
      f.host_read = true;
      continue;
    }
    f.layout = h.shape.size() == 4 ? wanted[i] : Layout::kPlain;
    bool converted = false;  // the wanted form exists already
    for (int r : reps_[v->id()])
      converted |= p_.slots[r].device == device && p_.slots[r].desc.layout == f.layout &&
                   p_.slots[r].desc.dtype == f.dtype;
    const int first = first_on(v, device);
    if (!converted && first >= 0 && kernel.takes_offered(static_cast<int>(i), p_.slots[first].desc))
      f.slot = first;
    f.desc = f.slot >= 0 ? p_.slots[f.slot].desc : TensorDesc{f.dtype, h.shape, nullptr, f.layout};
    f.desc.value = h.value;
  }
  return forms;
}

Result<bool> Builder::prepare_candidate(const Node& n, Trial* t, const char* backend,
                                        std::string* why) {
  PlanDevice& dev = dev_[p_.main];
  Kernel& kernel = *t->kernel;
  t->in.assign(n.inputs.size(), TensorDesc{});
  const std::vector<InputForm> forms = input_forms(n, p_.main, kernel);
  for (size_t i = 0; i < n.inputs.size(); ++i) t->in[i] = forms[i].desc;
  t->out.assign(n.outputs.size(), TensorDesc{});
  BuildContext& bctx = dev.build_context();
  bctx.precision = precision_of(n);
  bctx.notes = &t->notes;  // the plan's once this one is chosen
  const Status prepared = kernel.prepare(t->in, t->out, bctx);
  bctx.precision = o_.precision;
  if (prepared.code() == StatusCode::kUnsupported) {
    *why = prepared.message();
    return false;
  }
  KILN_RETURN_IF_ERROR_CTX(prepared, n.describe() + " (" + backend + ")");
  return true;
}

Result<float> Builder::time_candidate(const Node& n, Trial* t, const char* backend) {
  PlanDevice& dev = dev_[p_.main];
  Kernel& kernel = *t->kernel;
  if (kernel.timed_ms() >= 0) return kernel.timed_ms();
  std::string key = std::string("kernel|") + backend + "|" + precision_name(precision_of(n)) + "|" +
                    node_signature(n);
  for (const TensorDesc& d : t->in)
    if (d.present())
      key += std::string("|") + dtype_name(d.dtype) + shape_str(d.shape) + layout_name(d.layout);
  return dev.time_kernel(kernel, t->in, t->out, key)
      .with_context(n.describe() + " (" + backend + ")");
}

Result<int> Builder::fastest_candidate(const Node& n, const Node& kn,
                                       const std::vector<const KernelCandidate*>& candidates,
                                       std::vector<std::string>* timed,
                                       std::vector<std::string>* declined, Trial* winner) {
  PlanDevice& dev = dev_[p_.main];
  if (candidates.size() < 2 || !dev.times_candidates() || bounded_) return -1;
  // Candidates within this fraction of the fastest count as equally fast: the one asked
  // first of them wins (a timing's noise does not flip the choice between builds).
  constexpr float kTolerance = 0.03f;
  std::vector<Trial> trials(candidates.size());
  std::vector<std::string> before;  // declines before the first that accepts
  std::vector<size_t> accepted;
  for (size_t k = 0; k < candidates.size(); ++k) {
    const KernelCandidate* c = candidates[k];
    auto made = c->make(
        kn, KernelParams{precision_of(n), o_.states ? o_.states->find(c->backend) : nullptr});
    std::string why;
    if (made.is_ok()) {
      trials[k].kernel = std::move(made).value();
      KILN_ASSIGN_OR_RETURN(const bool took, prepare_candidate(kn, &trials[k], c->backend, &why));
      if (took) {
        accepted.push_back(k);
        continue;
      }
    } else if (made.status().code() != StatusCode::kUnsupported) {
      return -1;  // the first-taker path reports it
    } else {
      why = made.status().message();
    }
    if (accepted.empty()) before.push_back(std::string(c->backend) + ": " + why);
  }
  if (accepted.empty()) return -1;
  *declined = std::move(before);
  int chosen = static_cast<int>(accepted.front());
  if (accepted.size() > 1) {
    std::vector<float> ms(candidates.size(), -1.f);
    float fastest = -1.f;
    for (size_t k : accepted) {
      KILN_ASSIGN_OR_RETURN(ms[k], time_candidate(kn, &trials[k], candidates[k]->backend));
      if (fastest < 0 || ms[k] < fastest) fastest = ms[k];
    }
    chosen = -1;
    for (size_t k : accepted)
      if (chosen < 0 && ms[k] <= fastest * (1.f + kTolerance)) chosen = static_cast<int>(k);
    for (size_t k : accepted) {
      char t[64];
      std::snprintf(t, sizeof t, "%.4f ms", ms[k]);
      timed->push_back(std::string(candidates[k]->backend) + ": " + t +
                       (static_cast<int>(k) == chosen ? " (chosen)" : ""));
    }
  }
  *winner = std::move(trials[chosen]);
  return chosen;
}

Status Builder::add_kernel_step(const Node& n, const Node& kn, int order_index, DeviceKind device,
                                std::unique_ptr<Kernel> kernel, const std::string& fallback_reason,
                                std::string* declined,
                                const std::vector<TensorDesc>* prepared_out) {
  PlanDevice& dev = dev_[device];
  const Precision prec = precision_of(n);
  const bool fallback = device != p_.main;
  PlanStep step;
  step.kind = PlanStepKind::kKernel;
  step.device = device;
  step.node = &kn;
  step.fallback = fallback;
  step.order_index = order_index;
  std::vector<TensorDesc> in(n.inputs.size());
  step.in.assign(n.inputs.size(), -1);
  const std::vector<InputForm> forms = input_forms(n, device, *kernel);
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Value* v = n.inputs[i];
    const InputForm& f = forms[i];
    if (!v || f.host_read) {
      in[i] = f.desc;
      continue;
    }
    int s = f.slot;
    if (s < 0) {
      KILN_ASSIGN_OR_RETURN(s, slot_for(v, device, f.layout, f.dtype));
    }
    step.in[i] = s;
    in[i] = p_.slots[s].desc;
    in[i].value = host_[v->id()].value;
  }
  // The reference shape rule is the contract (want_, from node_shapes): the output shapes are
  // known before the kernel prepares (a library kernel may allocate for them first), and a
  // kernel disagreeing with it is a bug.
  const std::vector<TensorDesc>& want = want_;
  std::vector<TensorDesc> out(n.outputs.size() + (bounded_ ? 1 : 0));
  BuildContext& bctx = dev.build_context();
  bctx.precision = prec;  // what the kernel sees as the plan's precision
  bctx.notes = &p_.notes;
  bctx.bounded = bounded_;
  Status prepared = prepared_out ? Status::ok() : kernel->prepare(in, out, bctx);
  if (prepared_out) out = *prepared_out;
  bctx.precision = o_.precision;
  bctx.bounded = false;
  if (prepared.is_ok() && bounded_ &&
      (out.size() != n.outputs.size() + 1 || out.back().dtype != DataType::kInt64 ||
       out.back().numel() != 1))
    return internal_error(n.describe() + ": a bounded kernel gives no int64 extent");
  if (prepared.code() == StatusCode::kUnsupported && !fallback) {
    *declined = prepared.message();
    return Status::ok();
  }
  KILN_RETURN_IF_ERROR_CTX(prepared, n.describe());

  step.out.assign(n.outputs.size(), -1);
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const Value* v = n.outputs[i];
    if (!v || !out[i].present()) continue;
    if (want[i].present() && want[i].shape != out[i].shape)
      return internal_error(n.describe() + ": " + device_kind_name(device) +
                            " kernel gives output shape " + shape_str(out[i].shape) +
                            ", the reference " + shape_str(want[i].shape));
    if (out[i].nbytes() > static_cast<size_t>(o_.max_tensor_bytes))
      return Status(
          StatusCode::kResourceExhausted,
          n.describe() + ": output " + shape_str(out[i].shape) + " exceeds the per-tensor limit");
    int s;
    if (kernel->is_alias() && i == 0) {
      s = new_slot(out[i], device, v->id(), false);
      p_.slots[s].buffer = p_.slots[step.in[0]].buffer;  // for its lifetime
      p_.slots[s].alias_of = step.in[0];
    } else {
      s = new_slot(out[i], device, v->id(), true);
    }
    step.out[i] = s;
    reps_[v->id()].push_back(s);
    host_[v->id()] =
        TensorDesc{want[i].present() ? want[i].dtype : out[i].dtype, out[i].shape, nullptr};
  }
  if (bounded_) {  // where the kernel writes the outputs' real extent
    const int s = new_slot(out.back(), device, -1, true);
    step.out.push_back(s);
  }
  if (fallback) {
    step.info = {n.name, std::string("CPU:") + op_name(n.op), fallback_reason, true, 0.0};
    p_.has_fallback = true;
  } else {
    std::string tactic = kernel->tactic();
    if (tactic.empty() && kernel->is_alias()) tactic = "view";
    step.info = {n.name, op_name(n.op), tactic, device == DeviceKind::kCpu, 0.0};
    if (prec != o_.precision)
      step.info.tactic += std::string(" [") + precision_name(prec) + ", overridden]";
  }
  size_t& ws = p_.workspace_bytes[device_index(device)];
  ws = std::max(ws, kernel->workspace_bytes());
  step.kernel = std::move(kernel);
  p_.steps.push_back(std::move(step));
  return Status::ok();
}

Status Builder::set_scales() {
  if (!o_.value_scales) return Status::ok();
  for (const auto& [name, q] : *o_.value_scales) {
    const Value* v = g_.find_value(name);
    if (!v) return invalid_argument("quantization scale for '" + name + "': no such value");
    if (q.empty() || (!q.zero_point.empty() && q.zero_point.size() != q.scale.size()))
      return invalid_argument("quantization scale for '" + name +
                              "': " + std::to_string(q.scale.size()) + " scales, " +
                              std::to_string(q.zero_point.size()) + " zero points");
    const TensorDesc& d = host_[v->id()];
    const bool per_tensor = q.axis < 0 && q.scale.size() == 1;
    const bool per_axis = q.axis >= 0 && q.axis < static_cast<int>(d.shape.size()) &&
                          d.shape[q.axis] == static_cast<int64_t>(q.scale.size());
    if (!per_tensor && !per_axis)
      return invalid_argument("quantization scale for '" + name + "' " + shape_str(d.shape) + ": " +
                              std::to_string(q.scale.size()) + " scales on axis " +
                              std::to_string(q.axis));
    for (PlanSlot& s : p_.slots)
      if (s.value_id == v->id()) s.quant = q;
  }
  return Status::ok();
}

Status Builder::build(const std::vector<const Node*>& order,
                      const std::vector<TensorDesc>& inputs) {
  p_.main = o_.main;
  host_.assign(g_.value_id_limit(), TensorDesc{});
  reps_.assign(g_.value_id_limit(), {});
  for (const auto& v : g_.values())
    if (v->is_constant())
      host_[v->id()] = TensorDesc{v->constant.dtype(), v->constant.shape(), &v->constant};
  for (size_t i = 0; i < g_.inputs().size(); ++i) {
    const Value* v = g_.inputs()[i];
    const TensorDesc& t = inputs[i];
    const Tensor* known = nullptr;
    if (t.value) {  // the plan keeps its own copy
      p_.host_values.push_back(
          tensor_from_bytes(t.value->raw(), t.value->dtype(), t.value->shape(), t.dtype));
      known = &p_.host_values.back();
    }
    host_[v->id()] = TensorDesc{t.dtype, t.shape, known};
    const int s = new_slot(TensorDesc{t.dtype, t.shape}, p_.main, v->id(), !o_.external_io);
    p_.slots[s].external = o_.external_io;
    reps_[v->id()].push_back(s);
    p_.input_slots.push_back(s);
    p_.input_shapes.push_back(t.shape);
  }
  order_ = &order;
  return build_from(0);
}

void Builder::find_last_uses() {
  last_use_.assign(g_.value_id_limit(), -1);
  is_output_.assign(g_.value_id_limit(), false);
  for (size_t k = 0; k < order_->size(); ++k)
    for (const Value* v : (*order_)[k]->inputs)
      if (v) last_use_[v->id()] = static_cast<int>(k);
  for (const Value* o : g_.outputs()) is_output_[o->id()] = true;
}

Status Builder::build_after(const std::vector<const Node*>& order, const Plan& before,
                            const std::vector<Tensor>& read) {
  if (!before.resume || read.size() != before.read_back.size())
    return internal_error("a plan resumed without its segment's state or read-backs");
  const PlanContinuation& c = *before.resume;
  order_ = &order;
  p_.main = before.main;
  p_.slots = before.slots;
  p_.buffers = before.buffers;
  p_.input_slots = before.input_slots;
  p_.input_shapes = before.input_shapes;
  p_.segment = before.segment + 1;
  p_.inherited_buffers = static_cast<int>(before.buffers.size());
  for (size_t d = 0; d < kDeviceKinds; ++d) p_.arena_base[d] = before.arena_bytes[d];
  host_ = c.host;
  reps_ = c.reps;
  for (size_t i = 0; i < read.size(); ++i) {
    const ReadBack& r = before.read_back[i];
    const Tensor& t = read[i];
    if (!r.extent) {  // a value the rest is planned with
      p_.host_values.push_back(t);
      host_[r.value_id].value = &p_.host_values.back();
      continue;
    }
    if (!r.keys_plan) continue;  // the rest is planned for the bound
    const int64_t extent = t.data<int64_t>()[0];
    for (int v : r.bounded_values) {
      Shape& shape = host_[v].shape;
      if (r.axis >= static_cast<int>(shape.size()) || extent < 0 || extent > shape[r.axis])
        return internal_error(r.what + ": extent " + std::to_string(extent) +
                              " outside the bound " + shape_str(shape));
      shape[r.axis] = extent;
      for (int s : reps_[v]) p_.slots[s].desc.shape[r.axis] = extent;
    }
  }
  return build_from(c.resume_at);
}

Status Builder::build_from(size_t first) {
  find_last_uses();
  for (size_t k = first; k < order_->size(); ++k) {
    KILN_RETURN_IF_ERROR(add_node(*(*order_)[k], static_cast<int>(k)));
    if (stop_ >= 0) {
      end_segment();
      KILN_RETURN_IF_ERROR(set_scales());
      return plan_memory(p_, o_.arena_alignment, o_.reuse_memory);
    }
  }
  for (const Value* o : g_.outputs()) {
    const TensorDesc& h = host_[o->id()];
    KILN_ASSIGN_OR_RETURN(int s, slot_for(o, p_.main, Layout::kPlain, h.dtype));
    p_.output_slots.push_back(s);
    p_.output_dtypes.push_back(h.dtype);
  }
  // External outputs: a slot in the arena that views no other (a step's own output) leaves
  // the arena, with the views of it. Not after a segment: the caller's outputs are made once
  // their shapes are known, after the run.
  if (o_.external_io && p_.segment == 0)
    for (int s : p_.output_slots) {
      PlanSlot& slot = p_.slots[s];
      if (slot.buffer < 0 || slot.alias_of >= 0) continue;
      const int b = slot.buffer;
      for (PlanSlot& other : p_.slots)
        if (other.buffer == b) other.buffer = -1;
      slot.external = true;
    }
  KILN_RETURN_IF_ERROR(set_scales());
  return plan_memory(p_, o_.arena_alignment, o_.reuse_memory);
}

Status Builder::node_shapes(const Node& n, int order_index) {
  bounded_ = false;
  want_.assign(n.outputs.size(), TensorDesc{});
  const OpDef* def = OpRegistry::find(n.op);
  if (!def) return Status::ok();
  std::vector<TensorDesc> hin(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.inputs[i]) hin[i] = host_[n.inputs[i]->id()];
  const Status inferred = infer_node(*def, n, hin, want_);
  if (!inferred.is_ok()) {
    // A shape that follows a value computed from the inputs' data (small or integer, not known
    // at build; any input of an op whose shapes follow its data) is known only once that
    // value is.
    std::vector<const Value*> small;
    bool follows_data = false;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Value* v = n.inputs[i];
      if (!v || hin[i].value) continue;
      const bool is_small = hin[i].numel() <= kKeyedInputElements;
      if (is_small) small.push_back(v);
      follows_data |= def->shape_follows_data || is_small || !dtype_is_float(hin[i].dtype);
    }
    if (!follows_data) return inferred.with_context(n.describe());
    // The node runs on its bound, and its real extent is read back after it.
    std::vector<TensorDesc> bound(n.outputs.size());
    if (def->bound && def->bound(n, hin, bound).is_ok()) {
      want_ = std::move(bound);
      bounded_ = true;
    } else if (small.empty()) {
      return unsupported(n.describe() + ": its output shapes follow its inputs' data, and op " +
                         op_name(n.op) + " gives no bound for them");
    } else {  // its small inputs read back first, and the node planned with them known
      // Integers first (a count, k, a shape): small float data is read only where no
      // integer is left to read (a Resize's computed scales); the node stops again if it
      // still needs it.
      std::vector<const Value*> ints;
      for (const Value* v : small)
        if (!dtype_is_float(host_[v->id()].dtype)) ints.push_back(v);
      for (const Value* v : ints.empty() ? small : ints) KILN_RETURN_IF_ERROR(read_back_value(v));
      stop_ = order_index;
      return Status::ok();
    }
  }
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (n.outputs[i] && want_[i].present())
      KILN_RETURN_IF_ERROR_CTX(
          check_tensor_size(want_[i].dtype, want_[i].shape, o_.max_tensor_bytes),
          n.describe() + ": output '" + n.outputs[i]->name + "'");
  return Status::ok();
}

Status Builder::read_back_value(const Value* v) {
  int slot = -1;
  for (int s : reps_[v->id()])
    if (p_.slots[s].desc.layout == Layout::kPlain) {
      slot = s;
      break;
    }
  if (slot < 0) {
    if (reps_[v->id()].empty())
      return internal_error("value '" + v->name + "' to read back has no producer in the plan");
    const PlanSlot& any = p_.slots[reps_[v->id()].front()];
    KILN_ASSIGN_OR_RETURN(slot, slot_for(v, any.device, Layout::kPlain, any.desc.dtype));
  }
  ReadBack r;
  r.slot = slot;
  r.value_id = v->id();
  r.dtype = host_[v->id()].dtype;
  r.what = "value '" + v->name + "'";
  p_.read_back.push_back(std::move(r));
  return Status::ok();
}

void Builder::stop_after_bounded(const Node& n, int order_index) {
  ReadBack r;
  r.extent = true;
  r.slot = p_.steps.back().out.back();
  r.dtype = DataType::kInt64;
  r.axis = OpRegistry::find(n.op)->bound_axis;
  r.keys_plan = false;
  for (const Value* v : n.outputs) {
    if (!v) continue;
    r.bounded_values.push_back(v->id());
    // A later node reads it: the rest is planned for its real extent.
    r.keys_plan |= !v->consumers.empty();
  }
  if (!r.bounded_values.empty()) r.value_id = r.bounded_values.front();
  r.what = std::string(op_name(n.op)) + " '" + n.name + "' extent";
  p_.read_back.push_back(std::move(r));
  stop_ = order_index + 1;
}

void Builder::end_segment() {
  // Every form of a value that a later node or the graph's outputs read stays.
  for (size_t id = 0; id < reps_.size(); ++id)
    if (last_use_[id] >= stop_ || is_output_[id])
      for (int s : reps_[id]) p_.live_out.push_back(s);
  for (const ReadBack& r : p_.read_back) p_.live_out.push_back(r.slot);
  auto c = std::make_shared<PlanContinuation>();
  c->host = host_;
  c->reps = reps_;
  c->resume_at = static_cast<size_t>(stop_);
  p_.resume = std::move(c);
}

}  // namespace

Status build_plan(const Graph& graph, const std::vector<const Node*>& order,
                  const std::vector<TensorDesc>& input_descs, const PlanOptions& options,
                  const PlanDevices& devices, Plan& plan) {
  Builder b(plan, graph, options, devices);
  return b.build(order, input_descs);
}

Status build_plan_after(const Graph& graph, const std::vector<const Node*>& order,
                        const Plan& before, const std::vector<Tensor>& read,
                        const PlanOptions& options, const PlanDevices& devices, Plan& plan) {
  Builder b(plan, graph, options, devices);
  return b.build_after(order, before, read);
}

}  // namespace kiln
