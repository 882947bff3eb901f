// ContextPlans: the plan cache and run sequence of runtime/context_plans.h.
#include "runtime/context_plans.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <new>

#include "core/layout_index.h"
#include "runtime/engine_impl.h"

namespace kiln {

namespace {

// A run's timing points: start, inputs copied, compute started (after any wait for the compute
// order), compute done, outputs copied.
constexpr size_t kEvents = 5;

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// The inputs as the builder takes them: a keyed input's value is known at build.
std::vector<TensorDesc> descs_of(const std::vector<const Tensor*>& inputs) {
  std::vector<TensorDesc> descs;
  for (const Tensor* t : inputs)
    descs.push_back(TensorDesc{t->dtype(), t->shape(), is_keyed_input(*t) ? t : nullptr});
  return descs;
}

// A plan's key: the inputs' dtypes and shapes, and the bytes of those known at build.
std::string key_of(const std::vector<TensorDesc>& inputs) {
  std::string k;
  for (const TensorDesc& t : inputs) {
    k += std::to_string(static_cast<int>(t.dtype));
    for (int64_t d : t.shape) k += "," + std::to_string(d);
    if (t.value) {
      k += "=";
      k.append(static_cast<const char*>(t.value->raw()), t.value->nbytes());
    }
    k += ";";
  }
  return k;
}

// A fresh host tensor of `d`, or kResourceExhausted naming `what`.
Result<Tensor> allocate(DataType dtype, const Shape& shape, const std::string& what) {
  try {
    return Tensor(dtype, shape);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kResourceExhausted,
                  what + ": out of memory allocating " + shape_str(shape));
  }
}

PlanOptions plan_options(const Engine::Impl& e, const ContextDevice& d) {
  PlanOptions o;
  o.main = d.kind();
  o.precision = e.options.precision;
  o.precision_overrides = e.options.precision_overrides;
  o.max_tensor_bytes = e.options.max_tensor_bytes;
  o.arena_alignment = d.arena_alignment();
  o.external_io = d.computes_in_host_memory();
  o.reuse_memory = e.options.reuse_memory;
  o.states = &e.states;
  o.reference_only = e.options.backend == KernelChoice::kReference;
  if (!e.value_scales.empty()) o.value_scales = &e.value_scales;
  return o;
}

// Where output `i` goes: checked against the plan's output (dtype, shape, device).
Status check_target(const Tensor& t, DataType dtype, const Shape& shape, const std::string& name,
                    bool device_memory, int gpu) {
  const std::string what = "output buffer '" + name + "'";
  if (t.dtype() != dtype)
    return invalid_argument(what + ": dtype " + dtype_name(t.dtype()) + ", the output is " +
                            dtype_name(dtype));
  if (t.shape() != shape)
    return invalid_argument(what + ": shape " + shape_str(t.shape()) + ", the output is " +
                            shape_str(shape));
  if (t.gpu() >= 0 && (!device_memory || t.gpu() != gpu))
    return invalid_argument(what + ": in the memory of GPU " + std::to_string(t.gpu()) +
                            ", which this engine does not run on");
  return Status::ok();
}

}  // namespace

struct ContextPlans::Entry {
  std::string key;
  std::unique_ptr<Plan> plan;             // runtime/plan.h; maybe a segment
  std::unique_ptr<DeviceIo> io;           // staging, where the device does not compute in host
  std::unique_ptr<DeviceEvents> events;   // kEvents
  std::unique_ptr<CapturedWork> whole;    // the whole run, captured (copies and compute)
  std::unique_ptr<CapturedWork> compute;  // the compute alone, captured
  uint64_t generation = 0;                // of the Context's memory the plan is bound to
  bool profile = false;                   // a shape profile's plan (plan()): never dropped
  bool bound = false;
  bool ran_once = false;
  bool replayed = false;  // the last run replayed captured work
  bool waited = false;    // the last run's compute waited for the compute order
  int64_t staging_bytes = 0;
  // The last run's host times (DeviceTiming's stage_ms, finish_ms, run_ms), and its start.
  std::chrono::steady_clock::time_point started;
  double stage_ms = 0, finish_ms = 0, run_ms = 0, stage_wait_ms = 0;
  // Host-memory devices and plans in segments: the last run's inputs (shared buffers, not
  // copies) and outputs to write when its compute is repeated.
  std::vector<Tensor> last_inputs;
  std::vector<Tensor> scratch_outputs;
  // A segment's continuations, by read_back_key, most recently used first; and on a chain's
  // first segment, the last run's chain (this one first).
  std::vector<std::pair<std::string, std::unique_ptr<Entry>>> next;
  std::vector<Entry*> chain;
};

ContextPlans::ContextPlans(const Engine::Impl& engine) : e_(engine) {}
ContextPlans::~ContextPlans() {
  if (device_) (void)device_->synchronize();  // work in flight reads the plans' memory
  plans_.clear();                             // before the device they hold memory of
}

Result<ContextDevice*> ContextPlans::device() {
  if (!device_) {
    KILN_ASSIGN_OR_RETURN(device_, e_.device->make_context());
    devices_.by_kind[device_index(device_->kind())] = &device_->plan_device();
    devices_.by_kind[device_index(DeviceKind::kCpu)] = &device_->host_plan_device();
    if (order_) KILN_RETURN_IF_ERROR(device_->join(order_));
  }
  KILN_RETURN_IF_ERROR(device_->make_current());  // the calling thread's may be another
  return device_.get();
}

Status ContextPlans::join(std::shared_ptr<ComputeOrder> order) {
  order_ = std::move(order);
  KILN_ASSIGN_OR_RETURN(ContextDevice * d, device());
  return d->join(order_);
}

Status ContextPlans::bind(Entry& e) {
  Plan& p = *e.plan;
  int64_t arena[kDeviceKinds], workspace[kDeviceKinds];
  for (size_t d = 0; d < kDeviceKinds; ++d) {
    arena[d] = p.arena_bytes[d];
    workspace[d] = static_cast<int64_t>(p.workspace_bytes[d]);
  }
  KILN_RETURN_IF_ERROR(device_->reserve(arena, workspace));
  const ContextMemory& m = device_->memory();
  if (e.bound && e.generation == m.generation) return Status::ok();
  e.whole.reset();  // captured over the old addresses
  e.compute.reset();
  bind_plan(p, m.arena, m.workspace);
  e.generation = m.generation;
  e.bound = true;
  return Status::ok();
}

Result<ContextPlans::Entry*> ContextPlans::find_or_build(const std::vector<TensorDesc>& descs,
                                                         bool* cached, bool profile) {
  *cached = true;
  const std::string key = key_of(descs);
  auto it = std::find_if(plans_.begin(), plans_.end(),
                         [&](const std::unique_ptr<Entry>& p) { return p->key == key; });
  if (it != plans_.end()) {
    std::rotate(plans_.begin(), it, it + 1);  // most recently used first
    return plans_.front().get();
  }
  *cached = false;
  // Make room first, so the dropped plans' memory is free for the new one (once the device is
  // done with it). The profiles' plans stay; at most max_cached_plans others are kept.
  if (!profile) {
    const size_t limit = static_cast<size_t>(std::max(1, e_.options.max_cached_plans));
    auto others = [&] {
      return static_cast<size_t>(
          std::count_if(plans_.begin(), plans_.end(), [](const auto& p) { return !p->profile; }));
    };
    if (others() >= limit) KILN_RETURN_IF_ERROR(device_->synchronize());
    while (others() >= limit) {
      auto oldest =
          std::find_if(plans_.rbegin(), plans_.rend(), [](const auto& p) { return !p->profile; });
      plans_.erase(std::next(oldest).base());
    }
    stats_.plans_cached = static_cast<int64_t>(plans_.size());
  }

  auto entry = std::make_unique<Entry>();
  entry->key = key;
  entry->profile = profile;
  entry->plan = std::make_unique<Plan>();
  KILN_RETURN_IF_ERROR(
      build_plan(*e_.graph, e_.order, descs, plan_options(e_, *device_), devices_, *entry->plan));
  KILN_RETURN_IF_ERROR(built(*entry));
  plans_.insert(plans_.begin(), std::move(entry));
  stats_.plans_cached = static_cast<int64_t>(plans_.size());
  return plans_.front().get();
}

Status ContextPlans::built(Entry& e) {
  // Staging for a plan in one piece; a chain copies directly.
  if (!device_->computes_in_host_memory() && e.plan->read_back.empty() && e.plan->segment == 0) {
    std::vector<size_t> in_bytes, out_bytes;
    for (int s : e.plan->input_slots) in_bytes.push_back(e.plan->slots[s].desc.nbytes());
    for (int s : e.plan->output_slots) out_bytes.push_back(e.plan->slots[s].desc.nbytes());
    KILN_ASSIGN_OR_RETURN(e.io, device_->make_io(in_bytes, out_bytes));
    for (size_t n : in_bytes) e.staging_bytes += static_cast<int64_t>(n);
    for (size_t n : out_bytes) e.staging_bytes += static_cast<int64_t>(n);
  }
  KILN_ASSIGN_OR_RETURN(e.events, device_->make_events(kEvents));
  // The memory now, so the build's cost is all paid here.
  KILN_RETURN_IF_ERROR(bind(e));
  ++stats_.plan_builds;
  return e_.device->plan_built();
}

Result<ContextPlans::Entry*> ContextPlans::find_or_build_next(Entry& e,
                                                              const std::vector<Tensor>& read) {
  const std::string key = read_back_key(*e.plan, read);
  auto it =
      std::find_if(e.next.begin(), e.next.end(), [&](const auto& n) { return n.first == key; });
  if (it != e.next.end()) {
    std::rotate(e.next.begin(), it, it + 1);
    return e.next.front().second.get();
  }
  const size_t limit = static_cast<size_t>(std::max(1, e_.options.max_cached_plans));
  while (e.next.size() >= limit)
    e.next.pop_back();  // the device is idle: runs here are synchronous
  auto entry = std::make_unique<Entry>();
  entry->key = key;
  entry->plan = std::make_unique<Plan>();
  KILN_RETURN_IF_ERROR(build_plan_after(*e_.graph, e_.order, *e.plan, read,
                                        plan_options(e_, *device_), devices_, *entry->plan));
  KILN_RETURN_IF_ERROR(built(*entry));
  e.next.insert(e.next.begin(), {key, std::move(entry)});
  return e.next.front().second.get();
}

Status ContextPlans::run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs,
                         RunObserver* observer) {
  const auto called = std::chrono::steady_clock::now();
  KILN_RETURN_IF_ERROR(device().status());
  bool cached = false;
  KILN_ASSIGN_OR_RETURN(Entry * e, find_or_build(descs_of(inputs), &cached));
  e->last_inputs.clear();
  for (const Tensor* t : inputs) e->last_inputs.push_back(*t);
  e->started = called;
  e->stage_ms = e->finish_ms = e->run_ms = e->stage_wait_ms = 0;
  if (!e->plan->read_back.empty()) {
    const int64_t builds = stats_.plan_builds;
    KILN_RETURN_IF_ERROR(run_segments(*e, inputs, outputs, observer));
    cached &= stats_.plan_builds == builds;  // every segment of the run was cached
  } else {
    std::vector<Tensor> device_out;
    KILN_RETURN_IF_ERROR(start(*e, inputs, outputs, {}, false, observer, device_out));
    KILN_RETURN_IF_ERROR(device_->synchronize());
    const auto finishing = std::chrono::steady_clock::now();
    KILN_RETURN_IF_ERROR(finish(*e, outputs, {}, device_out));
    e->finish_ms = ms_since(finishing);
  }
  e->run_ms = ms_since(called);
  stats_.plan_runs += cached;
  const ContextMemory& m = device_->memory();
  stats_.arena_allocations = m.allocations;
  stats_.arena_bytes = m.arena_bytes[device_index(device_->kind())];
  return Status::ok();
}

Status ContextPlans::run_segment_steps(Plan& p, RunObserver* observer, std::vector<double>* step_ms,
                                       size_t first_step) {
  if (!observer && !step_ms) return run_plan_steps(p, devices_, 0, p.steps.size());
  std::unique_ptr<DeviceEvents> ev;
  if (step_ms) {
    KILN_ASSIGN_OR_RETURN(ev, device_->make_events(2));
    if (step_ms->size() < first_step + p.steps.size()) step_ms->resize(first_step + p.steps.size());
  }
  for (size_t k = 0; k < p.steps.size(); ++k) {
    if (ev) KILN_RETURN_IF_ERROR(ev->record(0));
    KILN_RETURN_IF_ERROR(run_plan_steps(p, devices_, k, k + 1));
    if (ev) {
      KILN_RETURN_IF_ERROR(ev->record(1));
      KILN_RETURN_IF_ERROR(device_->synchronize());
      (*step_ms)[first_step + k] += ev->elapsed_ms(0, 1);
    }
    if (observer) KILN_RETURN_IF_ERROR(observe_step(p.steps[k], *observer));
  }
  return Status::ok();
}

Status ContextPlans::poison(Plan& p) {
  const size_t main = device_index(device_->kind());
  if (!e_.options.poison_memory || p.arena_bytes[main] <= p.arena_base[main]) return Status::ok();
  return device_->fill(static_cast<char*>(p.arena[main]) + p.arena_base[main],
                       static_cast<size_t>(p.arena_bytes[main] - p.arena_base[main]), 0xFF);
}

Status ContextPlans::run_segments(Entry& top, const std::vector<const Tensor*>& inputs,
                                  std::vector<Tensor>& outputs, RunObserver* observer,
                                  std::vector<double>* step_ms) {
  const Graph& g = *e_.graph;
  const bool host = device_->computes_in_host_memory();
  // A continuation planned on the first run may need more memory than the chain had: the
  // memory moves, and the run starts again on it (the same data reads back the same values).
  for (int attempt = 0;; ++attempt) {
    KILN_RETURN_IF_ERROR(bind(top));
    const uint64_t generation = device_->memory().generation;
    DeviceEvents& ev = *top.events;
    KILN_RETURN_IF_ERROR(ev.record(0));
    Plan& first = *top.plan;
    // Poisoned before the inputs are copied in: the first segment's arena holds them.
    KILN_RETURN_IF_ERROR(poison(first));
    in_data_.clear();
    for (size_t i = 0; i < inputs.size() && i < first.input_slots.size(); ++i) {
      in_data_.push_back(inputs[i]->raw());
      if (!host)
        KILN_RETURN_IF_ERROR(device_->plan_device().copy_from_host(
            first.data(first.input_slots[i]), inputs[i]->raw(), inputs[i]->nbytes()));
    }
    if (host) set_plan_io(first, in_data_, {});
    KILN_RETURN_IF_ERROR(ev.record(1));
    KILN_RETURN_IF_ERROR(ev.record(2));
    top.chain.assign(1, &top);
    std::map<int, std::pair<int, int64_t>> extents;  // value id -> (axis, extent)
    Entry* cur = &top;
    size_t steps_before = 0;
    bool moved = false;
    while (true) {
      Plan& p = *cur->plan;
      if (cur != &top) KILN_RETURN_IF_ERROR(poison(p));  // its part of the arena only
      KILN_RETURN_IF_ERROR(run_segment_steps(p, observer, step_ms, steps_before));
      steps_before += p.steps.size();
      if (p.read_back.empty()) break;
      KILN_ASSIGN_OR_RETURN(std::vector<Tensor> read, read_plan_values(p, devices_));
      for (size_t i = 0; i < read.size(); ++i)
        if (p.read_back[i].extent)
          for (int v : p.read_back[i].bounded_values)
            extents[v] = {p.read_back[i].axis, read[i].data<int64_t>()[0]};
      KILN_ASSIGN_OR_RETURN(Entry * next, find_or_build_next(*cur, read));
      KILN_RETURN_IF_ERROR(bind(*next));
      if (device_->memory().generation != generation) {
        moved = true;
        break;
      }
      if (host) set_plan_io(*next->plan, in_data_, {});
      top.chain.push_back(next);
      cur = next;
    }
    if (moved) {
      if (attempt < 2) continue;
      return internal_error("a plan in segments found its memory moved on every run");
    }
    KILN_RETURN_IF_ERROR(ev.record(3));
    // The outputs, in their real shapes (a bounded node's real extent where the plan is for
    // its bound), copied out and converted to the graph's dtypes.
    const Plan& last = *cur->plan;
    outputs.clear();
    for (size_t i = 0; i < last.output_slots.size(); ++i) {
      const int s = last.output_slots[i];
      const PlanSlot& slot = last.slots[s];
      Shape shape = slot.desc.shape;
      auto x = extents.find(g.outputs()[i]->id());
      if (x != extents.end() && x->second.first < static_cast<int>(shape.size()))
        shape[x->second.first] = x->second.second;
      std::vector<uint8_t> bytes(static_cast<size_t>(shape_numel(shape)) *
                                 dtype_size(slot.desc.dtype));
      if (slot.device == DeviceKind::kCpu) {
        if (!bytes.empty()) std::memcpy(bytes.data(), last.data(s), bytes.size());
      } else {
        KILN_RETURN_IF_ERROR(
            devices_[slot.device].copy_to_host(bytes.data(), last.data(s), bytes.size()));
      }
      outputs.push_back(
          tensor_from_bytes(bytes.data(), slot.desc.dtype, shape, last.output_dtypes[i]));
    }
    KILN_RETURN_IF_ERROR(ev.record(4));
    top.ran_once = true;
    return Status::ok();
  }
}

std::vector<void*> ContextPlans::input_slots(const Entry& e) const {
  std::vector<void*> r;
  for (int s : e.plan->input_slots) r.push_back(e.plan->data(s));
  return r;
}

Result<Tensor> observed_float32(const TensorRef& ref, ContextDevice& device,
                                std::vector<uint8_t>& scratch) {
  const size_t n = ref.desc.nbytes();
  const void* bytes = ref.data;
  if (!device.computes_in_host_memory()) {
    scratch.resize(n);
    KILN_RETURN_IF_ERROR(device.read(scratch.data(), ref.data, n));
    bytes = scratch.data();
  }
  Tensor t = tensor_from_bytes(bytes, ref.desc.dtype, ref.desc.shape, DataType::kFloat32);
  const Layout layout = ref.desc.layout;
  const Shape& s = ref.desc.shape;
  if (layout == Layout::kPlain || s.size() != 4) return t;
  // Stored NHWC or blocked: the elements in their logical order.
  Tensor plain(DataType::kFloat32, s);
  const float* from = t.data<float>();
  float* to = plain.data<float>();
  int64_t k = 0;
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < s[1]; ++c)
      for (int64_t h = 0; h < s[2]; ++h)
        for (int64_t w = 0; w < s[3]; ++w) to[k++] = from[layout_index(layout, s, n, c, h, w)];
  return plain;
}

Status ContextPlans::observe_step(const PlanStep& st, RunObserver& observer) {
  if (st.kind != PlanStepKind::kKernel || st.kernel->is_alias()) return Status::ok();
  // A bounded node's outputs (one more operand: the extent) hold their real shapes in a buffer
  // of their bound, known only once read back: not observed.
  if (st.out.size() > st.node->outputs.size()) return Status::ok();
  for (size_t i = 0; i < st.out.size(); ++i)
    if (st.out[i] >= 0)
      KILN_RETURN_IF_ERROR(observer.observe(*st.node, i, st.operands.out[i], *device_));
  return Status::ok();
}

Status ContextPlans::enqueue_compute(Entry& e, RunObserver* observer) {
  Plan& p = *e.plan;
  if (observer) {  // step by step, each value seen before a later step reuses its memory
    for (size_t k = 0; k < p.steps.size(); ++k) {
      KILN_RETURN_IF_ERROR(run_plan_steps(p, devices_, k, k + 1));
      KILN_RETURN_IF_ERROR(observe_step(p.steps[k], *observer));
    }
    return Status::ok();
  }
  auto steps = [&] { return run_plan_steps(p, devices_, 0, p.steps.size()); };
  // The compute alone is captured once the plan has run eagerly (libraries load their modules
  // on first use, which must not happen inside a capture). Host steps wait for the device: a
  // plan with any is never captured.
  if (!e_.device->capture_runs() || !e.ran_once || p.has_fallback) return steps();
  if (!e.compute) {
    KILN_RETURN_IF_ERROR(device_->begin_capture());
    KILN_ASSIGN_OR_RETURN(e.compute, device_->end_capture(steps()));
  }
  return device_->launch(*e.compute);
}

Status ContextPlans::enqueue_run(Entry& e, RunObserver* observer, bool capturing, bool* waited,
                                 const std::vector<const void*>& copied_out) {
  Plan& p = *e.plan;
  DeviceEvents& ev = *e.events;
  KILN_RETURN_IF_ERROR(ev.record(0, capturing));
  if (e.io) KILN_RETURN_IF_ERROR(e.io->copy_in(input_slots(e)));
  KILN_RETURN_IF_ERROR(ev.record(1, capturing));
  *waited = false;
  if (!capturing) {
    KILN_ASSIGN_OR_RETURN(*waited, device_->enter_compute());
  }
  Status computed = ev.record(2, capturing);
  if (computed.is_ok())
    computed =
        capturing ? run_plan_steps(p, devices_, 0, p.steps.size()) : enqueue_compute(e, observer);
  if (computed.is_ok()) computed = ev.record(3, capturing);
  // Left on every path: other Contexts wait on the order's lock.
  const Status left = capturing ? Status::ok() : device_->leave_compute();
  KILN_RETURN_IF_ERROR(computed);
  KILN_RETURN_IF_ERROR(left);
  if (e.io) KILN_RETURN_IF_ERROR(e.io->copy_out(copied_out));
  return ev.record(4, capturing);
}

Status ContextPlans::start(Entry& e, const std::vector<const Tensor*>& inputs,
                           std::vector<Tensor>& outputs, const std::vector<Tensor>& targets,
                           bool on_device, RunObserver* observer, std::vector<Tensor>& device_out) {
  KILN_RETURN_IF_ERROR(bind(e));  // another plan may have grown the shared memory
  Plan& p = *e.plan;
  const Graph& g = *e_.graph;
  if (inputs.size() != p.input_slots.size())
    return internal_error("plan run with " + std::to_string(inputs.size()) + " inputs");
  const size_t n_out = p.output_slots.size();
  for (size_t i = 0; i < targets.size() && i < n_out; ++i)
    if (targets[i].defined())
      KILN_RETURN_IF_ERROR(check_target(targets[i], p.output_dtypes[i],
                                        p.slots[p.output_slots[i]].desc.shape, g.outputs()[i]->name,
                                        e.io != nullptr, e_.options.device_index));
  outputs.clear();
  // Outputs kept in the device's memory: the caller's there, or new ones where asked.
  device_out.assign(n_out, Tensor());
  std::vector<const void*> copied_out(n_out, nullptr);
  for (size_t i = 0; e.io && i < n_out; ++i) {
    const Tensor* t = i < targets.size() && targets[i].defined() ? &targets[i] : nullptr;
    if (t && t->gpu() >= 0) {
      device_out[i] = *t;
    } else if (!t && on_device) {
      KILN_ASSIGN_OR_RETURN(
          device_out[i],
          device_->allocate(p.output_dtypes[i], p.slots[p.output_slots[i]].desc.shape));
    } else {
      copied_out[i] = p.data(p.output_slots[i]);
    }
  }
  if (e.io) {
    // Staging is reused: the last run's copies from it must be done.
    const auto staging = std::chrono::steady_clock::now();
    if (e.ran_once) KILN_RETURN_IF_ERROR(e.events->wait(1));
    e.stage_wait_ms = ms_since(staging);
    for (size_t i = 0; i < inputs.size(); ++i)
      KILN_RETURN_IF_ERROR(e.io->stage_input(i, *inputs[i]));
    e.stage_ms = ms_since(staging);
  } else {
    // The plan reads the inputs where the caller holds them and writes the outputs in place.
    in_data_.clear();
    out_data_.clear();
    for (const Tensor* t : inputs) in_data_.push_back(t->raw());
    for (size_t i = 0; i < n_out; ++i) {
      const TensorDesc& d = p.slots[p.output_slots[i]].desc;
      KILN_ASSIGN_OR_RETURN(Tensor t,
                            allocate(d.dtype, d.shape, "output '" + g.outputs()[i]->name + "'"));
      out_data_.push_back(t.raw());
      outputs.push_back(std::move(t));
    }
    set_plan_io(p, in_data_, out_data_);  // pointers only: the tensors are not held
  }
  // Poisoned before the steps, in the device's order (never part of a capture).
  KILN_RETURN_IF_ERROR(poison(p));

  // The whole run is captured (copies from the staging buffers included) once it has run
  // eagerly, where the engine captures runs, every input went through staging and every
  // output goes to it, no compute order waits between the copies and the compute, and no
  // observer looks between steps.
  bool all_out = true;
  for (const void* c : copied_out) all_out = all_out && c;
  const bool whole = e_.device->capture_runs() && e.io && e.io->all_staged() && all_out &&
                     !order_ && !observer && !p.has_fallback;
  e.replayed = false;
  e.waited = false;
  if (whole && (e.whole || e.ran_once)) {
    if (!e.whole) {
      KILN_RETURN_IF_ERROR(device_->begin_capture());
      bool waited = false;
      const Status enqueued = enqueue_run(e, nullptr, true, &waited, copied_out);
      KILN_ASSIGN_OR_RETURN(e.whole, device_->end_capture(enqueued));
    }
    KILN_RETURN_IF_ERROR(device_->launch(*e.whole));
    e.replayed = true;
  } else {
    KILN_RETURN_IF_ERROR(enqueue_run(e, observer, false, &e.waited, copied_out));
    e.replayed = e.compute != nullptr && !observer;
  }
  // The outputs kept on the device, in the graph's dtypes, after the compute.
  for (size_t i = 0; i < n_out; ++i) {
    if (!device_out[i].defined()) continue;
    const int s = p.output_slots[i];
    const TensorDesc& d = p.slots[s].desc;
    Tensor& t = device_out[i];
    if (d.dtype == t.dtype() && d.layout == Layout::kPlain) {
      KILN_RETURN_IF_ERROR(device_->copy(t.raw(), p.data(s), d.nbytes()));
    } else {
      TensorRef src{TensorDesc{d.dtype, d.shape, nullptr, d.layout}, p.data(s)};
      TensorRef dst{TensorDesc{t.dtype(), t.shape(), nullptr, Layout::kPlain}, t.raw()};
      KILN_RETURN_IF_ERROR(device_->plan_device().convert(src, dst));
    }
  }
  e.ran_once = true;
  return Status::ok();
}

Status ContextPlans::finish(Entry& e, std::vector<Tensor>& outputs,
                            const std::vector<Tensor>& targets,
                            const std::vector<Tensor>& device_out) {
  Plan& p = *e.plan;
  for (size_t i = 0; i < p.output_slots.size(); ++i) {
    const TensorDesc& d = p.slots[p.output_slots[i]].desc;
    if (e.io) {
      outputs.push_back(device_out[i].defined() ? device_out[i]
                                                : tensor_from_bytes(e.io->output(i), d.dtype,
                                                                    d.shape, p.output_dtypes[i]));
    } else if (!plan_output_in_place(p, i) && outputs[i].nbytes()) {
      std::memcpy(outputs[i].raw(), p.data(p.output_slots[i]), outputs[i].nbytes());
    }
    // Into the caller's host buffer.
    if (i < targets.size() && targets[i].defined() && targets[i].gpu() < 0) {
      Tensor target = targets[i];  // the caller's bytes
      if (outputs[i].nbytes()) std::memcpy(target.raw(), outputs[i].raw(), outputs[i].nbytes());
      outputs[i] = target;
    }
  }
  return Status::ok();
}

Status ContextPlans::enqueue(const std::vector<const Tensor*>& inputs,
                             const std::vector<Tensor>& targets, bool on_device, void* stream,
                             Done done) {
  const auto called = std::chrono::steady_clock::now();
  KILN_RETURN_IF_ERROR(device().status());
  if (stream) KILN_RETURN_IF_ERROR(device_->follow(stream));
  std::vector<Tensor> outputs;
  bool cached = false;
  KILN_ASSIGN_OR_RETURN(Entry * e, find_or_build(descs_of(inputs), &cached));
  if (!e->plan->read_back.empty()) {  // in segments: runs now, on the calling thread
    if (on_device)
      return invalid_argument(
          "outputs kept on the device: not for this model, whose output shapes follow its data "
          "(its outputs are returned in host memory)");
    for (const Tensor& t : targets)
      if (t.defined() && t.gpu() >= 0)
        return invalid_argument(
            "output buffers in device memory: not for this model, whose output shapes follow "
            "its data");
    e->last_inputs.clear();
    for (const Tensor* t : inputs) e->last_inputs.push_back(*t);
    const int64_t builds = stats_.plan_builds;
    KILN_RETURN_IF_ERROR(run_segments(*e, inputs, outputs, nullptr));
    stats_.plan_runs += cached && stats_.plan_builds == builds;
    for (size_t i = 0; i < targets.size() && i < outputs.size(); ++i)
      if (targets[i].defined() && targets[i].gpu() < 0 &&
          targets[i].nbytes() == outputs[i].nbytes()) {
        Tensor target = targets[i];  // the caller's bytes
        std::memcpy(target.raw(), outputs[i].raw(), outputs[i].nbytes());
        outputs[i] = target;
      }
    done(std::move(outputs));
    return Status::ok();
  }
  e->last_inputs.clear();
  for (const Tensor* t : inputs) e->last_inputs.push_back(*t);
  std::vector<Tensor> device_out;
  e->started = called;
  e->stage_ms = e->finish_ms = e->run_ms = e->stage_wait_ms = 0;
  KILN_RETURN_IF_ERROR(start(*e, inputs, outputs, targets, on_device, nullptr, device_out));
  if (stream) KILN_RETURN_IF_ERROR(device_->precede(stream));
  stats_.plan_runs += cached;
  const ContextMemory& m = device_->memory();
  stats_.arena_allocations = m.allocations;
  stats_.arena_bytes = m.arena_bytes[device_index(device_->kind())];
  // The outputs are read when the device is done: on its thread, after this Context's earlier
  // work and before its later work (the entry stays: dropping a plan waits for the device).
  auto finished = std::make_shared<std::vector<Tensor>>(std::move(outputs));
  return device_->when_done([this, e, finished, targets, device_out, done = std::move(done)] {
    const auto finishing = std::chrono::steady_clock::now();
    const Status st = finish(*e, *finished, targets, device_out);
    e->finish_ms = ms_since(finishing);
    e->run_ms = ms_since(e->started);
    if (!st.is_ok()) {
      done(st);
      return;
    }
    done(std::move(*finished));
  });
}

Result<PlanInfo> ContextPlans::plan(const std::vector<TensorDesc>& inputs) {
  KILN_RETURN_IF_ERROR(device().status());
  bool cached = false;
  KILN_ASSIGN_OR_RETURN(Entry * e, find_or_build(inputs, &cached, /*profile=*/true));
  e->profile = true;  // a profile's, even where a run had built it first
  PlanInfo r = plan_info(*e->plan, *e_.graph);
  for (const ReadBack& b : e->plan->read_back)
    r.unfinished += (r.unfinished.empty() ? "" : ", ") + b.what;
  return r;
}

Status ContextPlans::wait() {
  if (!device_) return Status::ok();
  return device_->synchronize();
}

Result<ContextPlans::Entry*> ContextPlans::last(const char* what) const {
  if (plans_.empty() || plans_.front()->last_inputs.empty())
    return invalid_argument(std::string(what) + " needs a run() first");
  return plans_.front().get();
}

Result<DeviceTiming> ContextPlans::last_timing() const {
  KILN_ASSIGN_OR_RETURN(Entry * e, last("last_device_timing"));
  const DeviceEvents& ev = *e->events;
  DeviceTiming t;
  // A device that computes in host memory copies nothing in or out.
  t.h2d_ms = e->io ? ev.elapsed_ms(0, 1) : 0.0;
  // No wait enqueued, none reported: the two events around it can still be apart by a time
  // slice that another process took on the GPU.
  t.wait_ms = e->waited ? ev.elapsed_ms(1, 2) : 0.0;
  t.compute_ms = ev.elapsed_ms(2, 3);
  t.d2h_ms = e->io ? ev.elapsed_ms(3, 4) : 0.0;
  t.stage_ms = e->stage_ms;
  t.stage_wait_ms = e->stage_wait_ms;
  t.finish_ms = e->finish_ms;
  t.run_ms = e->run_ms;
  return t;
}

Status ContextPlans::keep_inputs(Entry& e, const char* what) {
  if (!e.ran_once) return invalid_argument(std::string(what) + " needs a run() first");
  if (e.io) return e.io->keep_inputs(what, input_slots(e));
  // Outputs of their own, so the caller's from the last run stay as they are.
  if (e.scratch_outputs.empty())
    for (int s : e.plan->output_slots) {
      const TensorDesc& d = e.plan->slots[s].desc;
      KILN_ASSIGN_OR_RETURN(Tensor t, allocate(d.dtype, d.shape, std::string(what)));
      e.scratch_outputs.push_back(std::move(t));
    }
  return Status::ok();
}

Status ContextPlans::restore_inputs(Entry& e) {
  if (e.io) return e.io->restore_inputs(input_slots(e));
  in_data_.clear();
  out_data_.clear();
  for (const Tensor& t : e.last_inputs) in_data_.push_back(t.raw());
  for (Tensor& t : e.scratch_outputs) out_data_.push_back(t.raw());
  set_plan_io(*e.plan, in_data_, out_data_);
  return Status::ok();
}

Result<std::vector<double>> ContextPlans::time_compute(int iterations) {
  KILN_ASSIGN_OR_RETURN(Entry * e, last("time_compute"));
  KILN_RETURN_IF_ERROR(device().status());
  std::vector<double> ms;
  if (!e->plan->read_back.empty()) {  // in segments: the whole run again, read-backs included
    std::vector<const Tensor*> in;
    for (const Tensor& t : e->last_inputs) in.push_back(&t);
    for (int i = 0; i < iterations; ++i) {
      std::vector<Tensor> out;
      KILN_RETURN_IF_ERROR(run_segments(*e, in, out, nullptr));
      ms.push_back(e->events->elapsed_ms(2, 3));
    }
    return ms;
  }
  KILN_RETURN_IF_ERROR(bind(*e));  // another plan may have grown the shared memory
  KILN_RETURN_IF_ERROR(keep_inputs(*e, "time_compute"));
  DeviceEvents& ev = *e->events;
  for (int i = 0; i < iterations; ++i) {
    KILN_RETURN_IF_ERROR(restore_inputs(*e));
    KILN_RETURN_IF_ERROR(ev.record(0));
    KILN_RETURN_IF_ERROR(enqueue_compute(*e, nullptr));
    KILN_RETURN_IF_ERROR(ev.record(1));
    KILN_RETURN_IF_ERROR(device_->synchronize());
    ms.push_back(ev.elapsed_ms(0, 1));
  }
  return ms;
}

Result<std::vector<LayerProfile>> ContextPlans::profile_steps(int iterations) {
  KILN_ASSIGN_OR_RETURN(Entry * e, last("profile_layers"));
  if (iterations < 1) return invalid_argument("profile_layers needs at least one iteration");
  KILN_RETURN_IF_ERROR(device().status());
  std::vector<LayerProfile> layers;
  if (!e->plan->read_back.empty()) {  // in segments: each step timed alone over whole runs
    std::vector<double> ms;
    std::vector<const Tensor*> in;
    for (const Tensor& t : e->last_inputs) in.push_back(&t);
    for (int i = 0; i < iterations; ++i) {
      std::vector<Tensor> out;
      KILN_RETURN_IF_ERROR(run_segments(*e, in, out, nullptr, &ms));
    }
    size_t k = 0;
    for (const Entry* s : e->chain)
      for (const PlanStep& st : s->plan->steps) {
        LayerProfile l = st.info;
        if (l.tactic.empty() || l.tactic[0] == ' ') l.tactic = "reference" + l.tactic;
        l.ms = k < ms.size() ? ms[k] / iterations : 0.0;
        ++k;
        layers.push_back(std::move(l));
      }
    return layers;
  }
  KILN_RETURN_IF_ERROR(bind(*e));
  KILN_RETURN_IF_ERROR(keep_inputs(*e, "profile_layers"));
  Plan& p = *e->plan;
  const size_t n = p.steps.size();
  KILN_ASSIGN_OR_RETURN(auto ev, device_->make_events(n + 1));
  std::vector<double> total(n, 0.0);
  for (int it = 0; it < iterations; ++it) {
    KILN_RETURN_IF_ERROR(restore_inputs(*e));
    KILN_RETURN_IF_ERROR(ev->record(0));
    for (size_t k = 0; k < n; ++k) {
      KILN_RETURN_IF_ERROR(run_plan_steps(p, devices_, k, k + 1));
      KILN_RETURN_IF_ERROR(ev->record(k + 1));
    }
    KILN_RETURN_IF_ERROR(device_->synchronize());
    for (size_t k = 0; k < n; ++k) total[k] += ev->elapsed_ms(k, k + 1);
  }
  for (size_t k = 0; k < n; ++k) {
    LayerProfile l = p.steps[k].info;
    // A kernel that says nothing of itself is the reference.
    if (l.tactic.empty() || l.tactic[0] == ' ') l.tactic = "reference" + l.tactic;
    l.ms = total[k] / iterations;
    layers.push_back(std::move(l));
  }
  return layers;
}

Result<DeviceMemoryInfo> ContextPlans::memory() const {
  DeviceMemoryInfo m;
  // Constants placed on the device; a device that computes in host memory reads the model's.
  m.weights = e_.device->constant_bytes();
  if (device_ && device_->computes_in_host_memory())
    for (const auto& v : e_.graph->values())
      if (v->is_constant()) m.weights += static_cast<int64_t>(v->constant.nbytes());
  if (plans_.empty()) return m;
  const Entry& top = *plans_.front();
  // A chain's memory is its last segment's (placed after the earlier ones').
  const Entry& e = top.chain.empty() ? top : *top.chain.back();
  const size_t main = device_index(device_->kind()), cpu = device_index(DeviceKind::kCpu);
  m.arena = e.plan->arena_bytes[main];
  m.arena_lower_bound = e.plan->arena_lower_bound[main];
  // The workspace is shared: the largest any segment asks for.
  m.workspace = static_cast<int64_t>(top.plan->workspace_bytes[main]);
  for (const Entry* s : top.chain)
    m.workspace = std::max(m.workspace, static_cast<int64_t>(s->plan->workspace_bytes[main]));
  // Host memory a device that computes elsewhere stages through: its host steps' arena, and
  // the inputs' and outputs' staging.
  if (e.io) m.pinned_host = e.plan->arena_bytes[cpu] + e.staging_bytes;
  return m;
}

Result<PlanInfo> ContextPlans::last_plan_info() const {
  if (plans_.empty()) return invalid_argument("no run yet on this context: no plan to show");
  return chain_info(*plans_.front());
}

PlanInfo ContextPlans::chain_info(const Entry& top) const {
  if (top.chain.size() < 2) return plan_info(*top.plan, *e_.graph);
  PlanInfo r;
  for (const Entry* s : top.chain) {
    PlanInfo part = plan_info(*s->plan, *e_.graph);
    if (r.input_shapes.empty()) r.input_shapes = part.input_shapes;
    for (PlanInfo::ReadBack& b : part.read_backs) {
      b.after_steps += r.steps.size();
      r.read_backs.push_back(std::move(b));
    }
    for (PlanStepInfo& st : part.steps) r.steps.push_back(std::move(st));
    // The last segment's arena holds the earlier ones'; the workspace is shared.
    r.arena_bytes = part.arena_bytes;
    for (const auto& [device, bytes] : part.workspace_bytes)
      r.workspace_bytes[device] = std::max(r.workspace_bytes[device], bytes);
  }
  return r;
}

ContextStats ContextPlans::stats() const {
  ContextStats s = stats_;
  std::function<void(const Entry&)> add = [&](const Entry& e) {
    for (const std::string& n : e.plan->notes)
      if (std::find(s.notes.begin(), s.notes.end(), n) == s.notes.end()) s.notes.push_back(n);
    for (const auto& [key, next] : e.next) add(*next);
  };
  for (const auto& e : plans_) add(*e);
  return s;
}

bool ContextPlans::replayed() const { return !plans_.empty() && plans_.front()->replayed; }

}  // namespace kiln
