// ContextPlans: the plan cache and run sequence of runtime/context_plans.h.
#include "runtime/context_plans.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "runtime/engine_impl.h"

namespace kiln {

namespace {

// A run's timing points: start, inputs copied, compute started (after any wait for the compute
// order), compute done, outputs copied.
constexpr size_t kEvents = 5;

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
  std::unique_ptr<Plan> plan;             // planned ahead (runtime/plan.h)
  std::unique_ptr<RunningPlan> running;   // or built by running: shapes follow the data
  std::unique_ptr<DeviceIo> io;           // staging, where the device does not compute in host
  std::unique_ptr<DeviceEvents> events;   // kEvents
  std::unique_ptr<CapturedWork> whole;    // the whole run, captured (copies and compute)
  std::unique_ptr<CapturedWork> compute;  // the compute alone, captured
  uint64_t generation = 0;                // of the Context's memory the plan is bound to
  bool bound = false;
  bool ran_once = false;
  bool replayed = false;  // the last run replayed captured work
  bool waited = false;    // the last run's compute waited for the compute order
  int64_t staging_bytes = 0;
  // Host-memory devices and plans built by running: the last run's inputs (shared buffers, not
  // copies) and outputs to write when its compute is repeated.
  std::vector<Tensor> last_inputs;
  std::vector<Tensor> scratch_outputs;
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
                                                         const std::vector<const Tensor*>* inputs,
                                                         std::vector<Tensor>& outputs,
                                                         RunObserver* observer, bool* ran,
                                                         bool* cached) {
  *ran = false;
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
  // done with it).
  const size_t limit = static_cast<size_t>(std::max(1, e_.options.max_cached_plans));
  if (plans_.size() >= limit) KILN_RETURN_IF_ERROR(device_->synchronize());
  while (plans_.size() >= limit) plans_.pop_back();
  stats_.plans_cached = static_cast<int64_t>(plans_.size());

  auto entry = std::make_unique<Entry>();
  entry->key = key;
  auto plan = std::make_unique<Plan>();
  const Status built =
      build_plan(*e_.graph, e_.order, descs, plan_options(e_, *device_), devices_, *plan);
  if (built.is_ok()) {
    entry->plan = std::move(plan);
    if (!device_->computes_in_host_memory()) {
      std::vector<size_t> in_bytes, out_bytes;
      for (int s : entry->plan->input_slots)
        in_bytes.push_back(entry->plan->slots[s].desc.nbytes());
      for (int s : entry->plan->output_slots)
        out_bytes.push_back(entry->plan->slots[s].desc.nbytes());
      KILN_ASSIGN_OR_RETURN(entry->io, device_->make_io(in_bytes, out_bytes));
      for (size_t n : in_bytes) entry->staging_bytes += static_cast<int64_t>(n);
      for (size_t n : out_bytes) entry->staging_bytes += static_cast<int64_t>(n);
    }
    KILN_ASSIGN_OR_RETURN(entry->events, device_->make_events(kEvents));
    // The memory now, so the build's cost is all paid here.
    KILN_RETURN_IF_ERROR(bind(*entry));
  } else if (plan->needs_data && !inputs) {
    return nullptr;  // nothing to plan ahead: the plan follows the data
  } else if (plan->needs_data && device_->computes_in_host_memory()) {
    RunningHooks hooks;
    hooks.observer = observer;
    hooks.device = device_.get();
    KILN_ASSIGN_OR_RETURN(entry->events, device_->make_events(kEvents));
    for (size_t i = 0; i < 3; ++i) KILN_RETURN_IF_ERROR(entry->events->record(i));
    KILN_ASSIGN_OR_RETURN(entry->running, RunningPlan::build(e_, *inputs, outputs, hooks));
    for (size_t i = 3; i < kEvents; ++i) KILN_RETURN_IF_ERROR(entry->events->record(i));
    *ran = true;
  } else {
    return built;
  }
  ++stats_.plan_builds;
  KILN_RETURN_IF_ERROR(e_.device->plan_built());
  plans_.insert(plans_.begin(), std::move(entry));
  stats_.plans_cached = static_cast<int64_t>(plans_.size());
  return plans_.front().get();
}

Status ContextPlans::run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs,
                         RunObserver* observer) {
  KILN_RETURN_IF_ERROR(device().status());
  while (true) {
    bool ran = false, cached = false;
    KILN_ASSIGN_OR_RETURN(
        Entry * e, find_or_build(descs_of(inputs), &inputs, outputs, observer, &ran, &cached));
    e->last_inputs.clear();
    for (const Tensor* t : inputs) e->last_inputs.push_back(*t);
    if (ran) return Status::ok();  // built by running these inputs
    if (e->plan) {
      std::vector<Tensor> device_out;
      KILN_RETURN_IF_ERROR(start(*e, inputs, outputs, {}, false, observer, device_out));
      KILN_RETURN_IF_ERROR(device_->synchronize());
      KILN_RETURN_IF_ERROR(finish(*e, outputs, {}, device_out));
      stats_.plan_runs += cached;
      break;
    }
    bool fits = true;
    KILN_RETURN_IF_ERROR(run_by_running(*e, inputs, outputs, observer, &fits));
    if (fits) {
      stats_.plan_runs += cached;
      break;
    }
    plans_.erase(plans_.begin());  // its data changed a dynamic step's shapes: build afresh
    stats_.plans_cached = static_cast<int64_t>(plans_.size());
  }
  const ContextMemory& m = device_->memory();
  stats_.arena_allocations = m.allocations;
  stats_.arena_bytes = m.arena_bytes[device_index(device_->kind())];
  return Status::ok();
}

Status ContextPlans::run_by_running(Entry& e, const std::vector<const Tensor*>& inputs,
                                    std::vector<Tensor>& outputs, RunObserver* observer,
                                    bool* fits) {
  RunningHooks hooks;
  hooks.observer = observer;
  hooks.device = device_.get();
  for (size_t i = 0; i < 3; ++i) KILN_RETURN_IF_ERROR(e.events->record(i));
  KILN_RETURN_IF_ERROR(e.running->run(inputs, outputs, hooks, fits));
  for (size_t i = 3; i < kEvents; ++i) KILN_RETURN_IF_ERROR(e.events->record(i));
  return Status::ok();
}

std::vector<void*> ContextPlans::input_slots(const Entry& e) const {
  std::vector<void*> r;
  for (int s : e.plan->input_slots) r.push_back(e.plan->data(s));
  return r;
}

Status ContextPlans::observe_step(const PlanStep& st, RunObserver& observer) {
  if (st.kind != PlanStepKind::kKernel || st.kernel->is_alias()) return Status::ok();
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
    if (e.ran_once) KILN_RETURN_IF_ERROR(e.events->wait(1));
    for (size_t i = 0; i < inputs.size(); ++i)
      KILN_RETURN_IF_ERROR(e.io->stage_input(i, *inputs[i]));
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
  const size_t main = device_index(device_->kind());
  // Poisoned before the steps, in the device's order (never part of a capture).
  if (e_.options.poison_memory && p.arena_bytes[main] > 0)
    KILN_RETURN_IF_ERROR(
        device_->fill(p.arena[main], static_cast<size_t>(p.arena_bytes[main]), 0xFF));

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
  KILN_RETURN_IF_ERROR(device().status());
  if (stream) KILN_RETURN_IF_ERROR(device_->follow(stream));
  std::vector<Tensor> outputs;
  bool ran = false, cached = false;
  KILN_ASSIGN_OR_RETURN(Entry * e,
                        find_or_build(descs_of(inputs), &inputs, outputs, nullptr, &ran, &cached));
  if (!e->plan) {  // built by running: runs now, on the calling thread
    if (!ran) {
      KILN_RETURN_IF_ERROR(run(inputs, outputs));
    }
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
    const Status st = finish(*e, *finished, targets, device_out);
    if (!st.is_ok()) {
      done(st);
      return;
    }
    done(std::move(*finished));
  });
}

Result<PlanInfo> ContextPlans::plan(const std::vector<TensorDesc>& inputs) {
  KILN_RETURN_IF_ERROR(device().status());
  std::vector<Tensor> outputs;
  bool ran = false, cached = false;
  KILN_ASSIGN_OR_RETURN(Entry * e, find_or_build(inputs, nullptr, outputs, nullptr, &ran, &cached));
  if (!e) {
    PlanInfo r;
    r.dynamic = "its output shapes follow values computed from the inputs' data";
    return r;
  }
  return plan_info(*e->plan, *e_.graph);
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
  if (!e->plan) {  // built by running: the whole run again
    std::vector<const Tensor*> in;
    for (const Tensor& t : e->last_inputs) in.push_back(&t);
    KILN_ASSIGN_OR_RETURN(auto events, device_->make_events(2));
    for (int i = 0; i < iterations; ++i) {
      std::vector<Tensor> out;
      bool fits = true;
      KILN_RETURN_IF_ERROR(events->record(0));
      KILN_RETURN_IF_ERROR(run_by_running(*e, in, out, nullptr, &fits));
      KILN_RETURN_IF_ERROR(events->record(1));
      ms.push_back(events->elapsed_ms(0, 1));
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
  if (!e->plan) {  // built by running: each node's execute() timed over whole runs
    std::vector<double> seconds(e_.order.size(), 0.0);
    std::vector<const Tensor*> in;
    for (const Tensor& t : e->last_inputs) in.push_back(&t);
    RunningHooks hooks;
    hooks.node_seconds = &seconds;
    for (int i = 0; i < iterations; ++i) {
      std::vector<Tensor> out;
      bool fits = true;
      KILN_RETURN_IF_ERROR(e->running->run(in, out, hooks, &fits));
    }
    const std::vector<std::string> tactics = e->running->tactics();
    for (size_t k = 0; k < e_.order.size(); ++k) {
      LayerProfile l;
      l.name = e_.order[k]->name;
      l.op = op_name(e_.order[k]->op);
      l.tactic = k < tactics.size() && !tactics[k].empty() ? tactics[k] : "reference";
      l.on_cpu = true;
      l.ms = seconds[k] * 1e3 / iterations;
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
  const Entry& e = *plans_.front();
  if (!e.plan) {
    m.arena = e.running->arena_bytes();
    m.arena_lower_bound = e.running->arena_lower_bound();
    return m;
  }
  const size_t main = device_index(device_->kind()), cpu = device_index(DeviceKind::kCpu);
  m.arena = e.plan->arena_bytes[main];
  m.arena_lower_bound = e.plan->arena_lower_bound[main];
  m.workspace = static_cast<int64_t>(e.plan->workspace_bytes[main]);
  // Host memory a device that computes elsewhere stages through: its host steps' arena, and
  // the inputs' and outputs' staging.
  if (e.io) m.pinned_host = e.plan->arena_bytes[cpu] + e.staging_bytes;
  return m;
}

Result<PlanInfo> ContextPlans::last_plan_info() const {
  if (plans_.empty()) return invalid_argument("no run yet on this context: no plan to show");
  const Entry& e = *plans_.front();
  if (e.plan) return plan_info(*e.plan, *e_.graph);
  PlanInfo r;
  r.dynamic = "its output shapes follow values computed from the inputs' data";
  r.arena_bytes["cpu"] = e.running->arena_bytes();
  r.workspace_bytes["cpu"] = 0;
  return r;
}

ContextStats ContextPlans::stats() const {
  ContextStats s = stats_;
  for (const auto& e : plans_)
    if (e->plan)
      for (const std::string& n : e->plan->notes)
        if (std::find(s.notes.begin(), s.notes.end(), n) == s.notes.end()) s.notes.push_back(n);
  return s;
}

bool ContextPlans::replayed() const { return !plans_.empty() && plans_.front()->replayed; }

}  // namespace kiln
