#include "runtime/cpu_plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <new>

#include "core/check.h"
#include "ir/op_kind.h"
#include "ops/op_registry.h"
#include "planner/arena_planner.h"
#include "runtime/engine_impl.h"
#include "runtime/tensor_limit.h"

namespace kiln {

namespace {

constexpr int64_t kArenaAlignment = 64;  // a cache line; oneDNN's AVX-512 loads want 64

// The statistics of one float32 tensor. The layout does not matter (a oneDNN-blocked value
// holds the same elements in another order).
ValueStats stats_of(const Tensor& t, const Node& node, const Value& v) {
  ValueStats s;
  s.value = v.name;
  s.node = node.name;
  s.op = op_name(node.op);
  s.count = t.numel();
  const float* p = t.data<float>();
  constexpr float kMinNormal = 6.103515625e-05f;  // 2^-14
  double max_abs = 0;
  int64_t nonzero = 0, below = 0, nonfinite = 0;
  for (int64_t k = 0; k < s.count; ++k) {
    const float a = std::fabs(p[k]);
    if (!std::isfinite(a)) {
      ++nonfinite;
      continue;
    }
    nonzero += a != 0.f;
    below += a != 0.f && a < kMinNormal;
    max_abs = std::max<double>(max_abs, a);
  }
  s.nonzero = nonzero;
  s.below_fp16_normal = below;
  s.nonfinite = nonfinite;
  s.max_abs = max_abs;
  return s;
}

// The plan key of `inputs`: dtypes and shapes, and the bytes of the keyed ones.
std::string key_of(const std::vector<const Tensor*>& inputs) {
  std::string k;
  for (const Tensor* t : inputs) {
    k += std::to_string(static_cast<int>(t->dtype()));
    for (int64_t d : t->shape()) k += "," + std::to_string(d);
    if (is_keyed_input(*t)) {
      k += "=";
      k.append(static_cast<const char*>(t->raw()), t->nbytes());
    }
    k += ";";
  }
  return k;
}

// Executes one kernel on in/out tensors (through `refs`), with the hooks.
Status execute(const Node& node, size_t k, Kernel& kernel, const std::vector<const Tensor*>& in,
               const std::vector<Tensor*>& out, HostOperands& refs, const CpuRunHooks& hooks) {
  static const RunContext run(DeviceKind::kCpu);
  refs.bind(in, out);
  Status executed;
  try {
    if (hooks.node_seconds) {
      const auto t0 = std::chrono::steady_clock::now();
      executed = kernel.execute(refs.in_ptr, refs.out_ptr, run);
      (*hooks.node_seconds)[k] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } else {
      executed = kernel.execute(refs.in_ptr, refs.out_ptr, run);
    }
  } catch (const std::bad_alloc&) {
    executed = Status(StatusCode::kResourceExhausted, node.describe() + ": out of memory");
  }
  KILN_RETURN_IF_ERROR(executed);
  if (hooks.value_stats)
    for (size_t i = 0; i < node.outputs.size(); ++i)
      if (out[i] && out[i]->dtype() == DataType::kFloat32)
        hooks.value_stats->push_back(stats_of(*out[i], node, *node.outputs[i]));
  return Status::ok();
}

// A fresh tensor of `d`, or kResourceExhausted naming `what`.
Result<Tensor> allocate(const TensorDesc& d, const std::string& what) {
  try {
    return Tensor(d.dtype, d.shape);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kResourceExhausted,
                  what + ": out of memory allocating " + shape_str(d.shape));
  }
}

}  // namespace

struct CpuStep {
  std::unique_ptr<Kernel> kernel;
  // Infers and prepares again on every run (see cpu_plan.h).
  bool dynamic = false;
  // A view (Reshape, Flatten, Squeeze, Unsqueeze): its output is planned over its input's
  // bytes, so the step does not run.
  bool view = false;
  std::vector<TensorDesc> planned_out;  // the output descs the plan was built with
  // Wired to the plan's slots at build; scratch for dynamic steps.
  std::vector<const Tensor*> in;
  std::vector<Tensor*> out;
  std::vector<TensorDesc> in_desc, out_desc;
  HostOperands refs;  // the kernel's operands over `in` and `out`
};

struct CpuPlan {
  std::vector<CpuStep> steps;    // per node in the engine's order
  std::vector<TensorDesc> desc;  // by value id: every node output's planned desc
  std::vector<int64_t> offset;   // by value id: arena offset, -1 when not in the arena
  std::vector<Tensor> slots;     // by value id: constants, arena views; per run I/O
  std::vector<bool> per_run;     // by value id: a graph input or a fresh graph output
  int64_t arena_bytes = 0;
  int64_t arena_lower_bound = 0;  // the peak of live bytes (ArenaPlan::lower_bound)

  // Points the arena values' slots at `arena`.
  void bind(const Tensor& arena) {
    for (size_t id = 0; id < offset.size(); ++id)
      if (offset[id] >= 0)
        slots[id] =
            Tensor::view_of(arena, static_cast<size_t>(offset[id]), desc[id].dtype, desc[id].shape);
  }
};

struct CpuPlanCache::Entry {
  std::string key;
  std::unique_ptr<Plan> plan;        // planned ahead (runtime/plan.h)
  std::unique_ptr<CpuPlan> dynamic;  // or built by running: shapes follow the data
};

CpuPlanCache::CpuPlanCache(const Engine::Impl& engine)
    : e_(engine), host_(make_host_plan_device()) {
  devices_.by_kind[device_index(DeviceKind::kCpu)] = host_.get();
}
CpuPlanCache::~CpuPlanCache() = default;

void CpuPlanCache::bind(Entry& entry) {
  if (entry.dynamic) {
    entry.dynamic->bind(arena_);
    return;
  }
  void* arena[kDeviceKinds] = {};
  void* workspace[kDeviceKinds] = {};
  arena[device_index(DeviceKind::kCpu)] = arena_.raw();
  workspace[device_index(DeviceKind::kCpu)] = workspace_.defined() ? workspace_.raw() : nullptr;
  bind_plan(*entry.plan, arena, workspace);
}

Status CpuPlanCache::reserve_arena(int64_t bytes, int64_t workspace) {
  const bool arena_ok = arena_.defined() && static_cast<int64_t>(arena_.nbytes()) >= bytes;
  const bool workspace_ok =
      workspace <= 0 ||
      (workspace_.defined() && static_cast<int64_t>(workspace_.nbytes()) >= workspace);
  if (arena_ok && workspace_ok) return Status::ok();
  try {
    if (!arena_ok) arena_ = Tensor(DataType::kUInt8, {std::max<int64_t>(bytes, 1)});
    if (!workspace_ok) workspace_ = Tensor(DataType::kUInt8, {workspace});
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kResourceExhausted,
                  "out of memory allocating the " + std::to_string(bytes) +
                      "-byte activation arena (and a " + std::to_string(workspace) +
                      "-byte workspace)");
  }
  ++stats_.arena_allocations;
  stats_.arena_bytes = static_cast<int64_t>(arena_.nbytes());
  for (auto& entry : plans_) bind(*entry);
  return Status::ok();
}

Status CpuPlanCache::run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs,
                         const CpuRunHooks& hooks) {
  std::string key = key_of(inputs);
  auto it = std::find_if(plans_.begin(), plans_.end(),
                         [&](const std::unique_ptr<Entry>& p) { return p->key == key; });
  if (it == plans_.end()) return build(key, inputs, outputs, hooks);
  std::rotate(plans_.begin(), it, it + 1);  // most recently used first
  Entry& entry = *plans_.front();
  if (entry.plan) {
    KILN_RETURN_IF_ERROR(run_static(*entry.plan, inputs, outputs, hooks));
    ++stats_.plan_runs;
    return Status::ok();
  }
  bool fits = true;
  KILN_RETURN_IF_ERROR(run_plan(*entry.dynamic, inputs, outputs, hooks, &fits));
  if (fits) return Status::ok();
  plans_.erase(plans_.begin());  // its data changed a dynamic step's shapes: build afresh
  stats_.plans_cached = static_cast<int64_t>(plans_.size());
  return build(key, inputs, outputs, hooks);
}

Result<std::unique_ptr<Plan>> CpuPlanCache::build_static(const std::vector<const Tensor*>& inputs) {
  PlanOptions o;
  o.main = DeviceKind::kCpu;
  o.precision = e_.options.precision;
  o.precision_overrides = e_.options.precision_overrides;
  o.max_tensor_bytes = e_.options.max_tensor_bytes;
  o.arena_alignment = kArenaAlignment;
  o.external_io = true;
  o.reuse_memory = e_.options.reuse_memory;
  o.host_kernel = [this](const Node& node, size_t k) -> Result<std::unique_ptr<Kernel>> {
    auto made = e_.node_backend[k]->create_kernel(node);
    if (!made.is_ok()) return made.status().with_context(node.describe());
    return std::move(made).value();
  };
  std::vector<TensorDesc> descs;
  for (const Tensor* t : inputs)
    descs.push_back(TensorDesc{t->dtype(), t->shape(), is_keyed_input(*t) ? t : nullptr});
  auto plan = std::make_unique<Plan>();
  const Status built = build_plan(*e_.graph, e_.order, descs, o, devices_, *plan);
  if (built.is_ok()) return plan;
  if (plan->needs_data) return std::unique_ptr<Plan>();
  return built;
}

Status CpuPlanCache::run_static(Plan& p, const std::vector<const Tensor*>& inputs,
                                std::vector<Tensor>& outputs, const CpuRunHooks& hooks) {
  const Graph& g = *e_.graph;
  outputs.clear();
  in_data_.clear();
  out_data_.clear();
  for (const Tensor* t : inputs) in_data_.push_back(t->raw());
  for (size_t i = 0; i < p.output_slots.size(); ++i) {
    const TensorDesc& d = p.slots[p.output_slots[i]].desc;
    KILN_ASSIGN_OR_RETURN(Tensor t, allocate(d, "output '" + g.outputs()[i]->name + "'"));
    out_data_.push_back(t.raw());
    outputs.push_back(std::move(t));
  }
  set_plan_io(p, in_data_, out_data_);  // pointers only: the tensors are not held
  if (!hooks.node_seconds && !hooks.value_stats) {
    KILN_RETURN_IF_ERROR(run_plan_steps(p, devices_, 0, p.steps.size()));
  } else {
    for (size_t k = 0; k < p.steps.size(); ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      KILN_RETURN_IF_ERROR(run_plan_steps(p, devices_, k, k + 1));
      const PlanStep& st = p.steps[k];
      if (st.order_index < 0) continue;
      if (hooks.node_seconds)
        (*hooks.node_seconds)[st.order_index] +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (hooks.value_stats && !st.kernel->is_alias())
        for (size_t i = 0; i < st.out.size(); ++i)
          if (st.out[i] >= 0 && st.operands.out[i].desc.dtype == DataType::kFloat32)
            hooks.value_stats->push_back(
                stats_of(host_tensor(st.operands.out[i]), *st.node, *st.node->outputs[i]));
    }
  }
  for (size_t i = 0; i < p.output_slots.size(); ++i)
    if (!plan_output_in_place(p, i) && outputs[i].nbytes())
      std::memcpy(outputs[i].raw(), p.data(p.output_slots[i]), outputs[i].nbytes());
  return Status::ok();
}

void CpuPlanCache::cache(const std::string& key, std::unique_ptr<Plan> plan,
                         std::unique_ptr<CpuPlan> dynamic) {
  ++stats_.plan_builds;
  const size_t limit = static_cast<size_t>(std::max(1, e_.options.max_cached_plans));
  while (plans_.size() >= limit) plans_.pop_back();
  auto entry = std::make_unique<Entry>();
  entry->key = key;
  entry->plan = std::move(plan);
  entry->dynamic = std::move(dynamic);
  plans_.insert(plans_.begin(), std::move(entry));
  stats_.plans_cached = static_cast<int64_t>(plans_.size());
}

Status CpuPlanCache::run_plan(CpuPlan& p, const std::vector<const Tensor*>& inputs,
                              std::vector<Tensor>& outputs, const CpuRunHooks& hooks, bool* fits) {
  const Graph& g = *e_.graph;
  for (size_t i = 0; i < inputs.size(); ++i) p.slots[g.inputs()[i]->id()] = *inputs[i];
  // Clears the per-run slots on all paths out: the caller's tensors are not held.
  struct Clear {
    CpuPlan& p;
    ~Clear() {
      for (size_t id = 0; id < p.per_run.size(); ++id)
        if (p.per_run[id]) p.slots[id] = Tensor();
    }
  } clear{p};
  for (const Value* o : g.outputs())
    if (o->producer && p.per_run[o->id()]) {
      KILN_ASSIGN_OR_RETURN(p.slots[o->id()],
                            allocate(p.desc[o->id()], "output '" + o->name + "'"));
    }
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const Node& node = *e_.order[k];
    CpuStep& s = p.steps[k];
    if (s.view) continue;
    if (s.dynamic) {
      for (size_t i = 0; i < node.inputs.size(); ++i)
        s.in_desc[i] = s.in[i] ? TensorDesc{s.in[i]->dtype(), s.in[i]->shape(), s.in[i],
                                            p.desc[node.inputs[i]->id()].layout}
                               : TensorDesc{};
      s.out_desc.assign(node.outputs.size(), TensorDesc{});
      if (const OpDef* def = OpRegistry::find(node.op)) {
        KILN_RETURN_IF_ERROR(
            infer_node(*def, node, s.in_desc, s.out_desc).with_context(node.describe()));
        for (size_t i = 0; i < node.outputs.size(); ++i)
          if (node.outputs[i] && (s.out_desc[i].dtype != s.planned_out[i].dtype ||
                                  s.out_desc[i].shape != s.planned_out[i].shape)) {
            *fits = false;
            return Status::ok();
          }
        s.out_desc.assign(node.outputs.size(), TensorDesc{});
      }
      BuildContext bctx(DeviceKind::kCpu);
      KILN_RETURN_IF_ERROR(s.kernel->prepare(s.in_desc, s.out_desc, bctx));
    }
    KILN_RETURN_IF_ERROR(execute(node, k, *s.kernel, s.in, s.out, s.refs, hooks));
  }
  outputs.clear();
  for (const Value* o : g.outputs()) outputs.push_back(p.slots[o->id()]);
  ++stats_.plan_runs;
  return Status::ok();
}

Status CpuPlanCache::build(const std::string& key, const std::vector<const Tensor*>& inputs,
                           std::vector<Tensor>& outputs, const CpuRunHooks& hooks) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Plan> planned, build_static(inputs));
  if (planned) {
    const size_t cpu = device_index(DeviceKind::kCpu);
    const int64_t bytes = planned->arena_bytes[cpu];
    const auto workspace = static_cast<int64_t>(planned->workspace_bytes[cpu]);
    Plan& p = *planned;
    cache(key, std::move(planned), nullptr);
    KILN_RETURN_IF_ERROR(reserve_arena(bytes, workspace));
    bind(*plans_.front());
    return run_static(p, inputs, outputs, hooks);
  }
  const Graph& g = *e_.graph;
  const size_t nv = g.value_id_limit();
  auto plan = std::make_unique<CpuPlan>();
  CpuPlan& p = *plan;
  p.desc.assign(nv, TensorDesc{});
  p.offset.assign(nv, -1);
  p.slots.assign(nv, Tensor());
  p.per_run.assign(nv, false);
  // Whether a value's shape, and its contents, follow from the plan's key alone.
  std::vector<bool> fixed_shape(nv, true), fixed_value(nv, true);
  std::vector<Tensor> values(nv);  // the build run's tensors
  for (size_t i = 0; i < inputs.size(); ++i) {
    const size_t id = g.inputs()[i]->id();
    values[id] = *inputs[i];
    p.per_run[id] = true;
    fixed_value[id] = is_keyed_input(*inputs[i]);
  }
  for (const auto& v : g.values())
    if (v->is_constant()) values[v->id()] = p.slots[v->id()] = v->constant;

  std::vector<TensorDesc> in_desc, out_desc;
  std::vector<const Tensor*> in;
  std::vector<Tensor*> out;
  for (size_t k = 0; k < e_.order.size(); ++k) {
    const Node& node = *e_.order[k];
    CpuStep step;
    auto made = e_.node_backend[k]->create_kernel(node);
    KILN_CHECK(made.is_ok());  // supports() was checked at build; a failure is a backend bug
    step.kernel = std::move(made).value();
    in.assign(node.inputs.size(), nullptr);
    in_desc.assign(node.inputs.size(), TensorDesc{});
    bool reads_data = false, all_fixed = true;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const Value* v = node.inputs[i];
      if (!v) continue;
      const Tensor& t = values[v->id()];
      if (!t.defined())
        return internal_error(node.describe() + ": input '" + v->name + "' was not computed");
      in[i] = &t;
      in_desc[i] = {t.dtype(), t.shape(), &t, p.desc[v->id()].layout};  // as its producer wrote it
      all_fixed = all_fixed && fixed_value[v->id()];
      if (!fixed_shape[v->id()] || (!fixed_value[v->id()] && (t.numel() <= kKeyedInputElements ||
                                                              !dtype_is_float(t.dtype()))))
        reads_data = true;
    }
    step.dynamic = reads_data;
    out_desc.assign(node.outputs.size(), TensorDesc{});
    // The outputs' sizes are checked from the shape rule before the kernel prepares: a
    // library kernel may allocate for them (oneDNN's scratchpads, timing buffers) first.
    if (const OpDef* def = OpRegistry::find(node.op)) {
      KILN_RETURN_IF_ERROR(infer_node(*def, node, in_desc, out_desc).with_context(node.describe()));
      for (size_t i = 0; i < node.outputs.size(); ++i)
        if (node.outputs[i] && out_desc[i].present())
          KILN_RETURN_IF_ERROR_CTX(
              check_tensor_size(out_desc[i].dtype, out_desc[i].shape, e_.options.max_tensor_bytes),
              node.describe() + ": output '" + node.outputs[i]->name + "'");
      out_desc.assign(node.outputs.size(), TensorDesc{});
    }
    BuildContext bctx(DeviceKind::kCpu);
    KILN_RETURN_IF_ERROR(step.kernel->prepare(in_desc, out_desc, bctx));
    out.assign(node.outputs.size(), nullptr);
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const Value* v = node.outputs[i];
      if (!v) continue;
      if (!out_desc[i].present())
        return internal_error(node.describe() + ": no type for output " + std::to_string(i));
      for (int64_t d : out_desc[i].shape)
        if (d < 0)
          return invalid_argument(node.describe() + ": output '" + v->name + "' would have shape " +
                                  shape_str(out_desc[i].shape));
      p.desc[v->id()] = {out_desc[i].dtype, out_desc[i].shape, nullptr, out_desc[i].layout};
      fixed_shape[v->id()] = !step.dynamic;
      fixed_value[v->id()] = all_fixed || (node.op == OpKind::Shape && !step.dynamic);
      KILN_ASSIGN_OR_RETURN(values[v->id()],
                            allocate(out_desc[i], node.describe() + ": output '" + v->name + "'"));
      out[i] = &values[v->id()];
    }
    KILN_RETURN_IF_ERROR(execute(node, k, *step.kernel, in, out, step.refs, hooks));
    step.planned_out = out_desc;
    for (TensorDesc& d : step.planned_out) d.value = nullptr;
    step.in_desc.resize(node.inputs.size());
    step.out_desc.resize(node.outputs.size());
    // Free what no later node reads (the build run's memory stays at the live peak).
    for (const Value* v : node.inputs)
      if (v && e_.last_use[v->id()] == static_cast<int>(k) && !e_.is_graph_output[v->id()] &&
          !v->is_constant() && !p.per_run[v->id()])
        values[v->id()] = Tensor();
    p.steps.push_back(std::move(step));
  }
  outputs.clear();
  for (const Value* o : g.outputs()) {
    const Tensor& t = values[o->id()];
    if (!t.defined()) return internal_error("output '" + o->name + "' was not computed");
    outputs.push_back(t);
  }

  // Views: a Reshape, Flatten, Squeeze or Unsqueeze of a value in the arena (row-major bytes:
  // the runtime's tensors are, and these ops are no oneDNN layout operands) is the same bytes
  // with another shape. Its output shares its input's buffer (root), which then lives until
  // the last reader of either; the step does not run. Not for graph inputs and outputs (the
  // caller's tensors), constants, or steps whose shapes follow the data.
  std::vector<size_t> root(nv);
  for (size_t id = 0; id < nv; ++id) root[id] = id;
  auto in_arena = [&](const Value* v) {
    return v && !v->is_constant() && v->producer && !e_.is_graph_output[v->id()] &&
           !p.per_run[v->id()];
  };
  for (size_t k = 0; k < e_.order.size(); ++k) {
    const Node& node = *e_.order[k];
    const bool view_op = node.op == OpKind::Reshape || node.op == OpKind::Flatten ||
                         node.op == OpKind::Squeeze || node.op == OpKind::Unsqueeze;
    if (!view_op || p.steps[k].dynamic || node.outputs.size() != 1) continue;
    const Value* x = node.input(0);
    const Value* y = node.output(0);
    if (!in_arena(x) || !in_arena(y)) continue;
    const TensorDesc &dx = p.desc[x->id()], &dy = p.desc[y->id()];
    if (dx.dtype != dy.dtype || shape_numel(dx.shape) != shape_numel(dy.shape) ||
        dx.layout != Layout::kPlain)
      continue;
    root[y->id()] = root[x->id()];
    p.steps[k].view = true;
  }
  // The arena: every node output that is not a graph output, live from its producer to its
  // last reader (a buffer: from its root's producer to the last reader of any of its views).
  std::vector<int> first(nv, -1), last(nv, -1);
  for (size_t k = 0; k < e_.order.size(); ++k)
    for (const Value* v : e_.order[k]->outputs) {
      if (!v) continue;
      if (e_.is_graph_output[v->id()]) {
        p.per_run[v->id()] = true;
        continue;
      }
      const size_t r = root[v->id()];
      if (first[r] < 0) first[r] = static_cast<int>(k);
      last[r] = std::max({last[r], static_cast<int>(k), e_.last_use[v->id()]});
    }
  std::vector<BufferUse> uses;
  std::vector<size_t> ids;
  for (size_t id = 0; id < nv; ++id) {
    if (first[id] < 0 || root[id] != id) continue;
    const TensorDesc& d = p.desc[id];
    uses.push_back(
        {static_cast<int64_t>(shape_numel(d.shape) * dtype_size(d.dtype)), first[id], last[id]});
    ids.push_back(id);
  }
  const ArenaPlan arena = plan_arena(uses, kArenaAlignment);
  for (size_t b = 0; b < ids.size(); ++b) p.offset[ids[b]] = arena.offsets[b];
  for (size_t id = 0; id < nv; ++id)
    if (root[id] != id && first[root[id]] >= 0) p.offset[id] = p.offset[root[id]];
  p.arena_bytes = arena.total_bytes;
  p.arena_lower_bound = arena.lower_bound;
  // Wire each step to the slots (a vector not resized again, so the pointers stay valid).
  for (size_t k = 0; k < e_.order.size(); ++k) {
    const Node& node = *e_.order[k];
    CpuStep& s = p.steps[k];
    s.in.assign(node.inputs.size(), nullptr);
    s.out.assign(node.outputs.size(), nullptr);
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (node.inputs[i]) s.in[i] = &p.slots[node.inputs[i]->id()];
    for (size_t i = 0; i < node.outputs.size(); ++i)
      if (node.outputs[i]) s.out[i] = &p.slots[node.outputs[i]->id()];
  }

  cache(key, nullptr, std::move(plan));
  KILN_RETURN_IF_ERROR(reserve_arena(p.arena_bytes));
  p.bind(arena_);
  return Status::ok();
}

int64_t CpuPlanCache::last_plan_lower_bound() const {
  if (plans_.empty()) return 0;
  const Entry& e = *plans_.front();
  return e.plan ? e.plan->arena_lower_bound[device_index(DeviceKind::kCpu)]
                : e.dynamic->arena_lower_bound;
}

Result<PlanInfo> CpuPlanCache::last_plan_info() const {
  if (plans_.empty()) return invalid_argument("no run yet on this context: no plan to show");
  const Entry& e = *plans_.front();
  if (e.plan) return plan_info(*e.plan, *e_.graph);
  PlanInfo r;
  r.dynamic = "its output shapes follow values computed from the inputs' data";
  r.arena_bytes["cpu"] = e.dynamic->arena_bytes;
  r.workspace_bytes["cpu"] = 0;
  return r;
}

std::vector<std::string> CpuPlanCache::last_plan_tactics() const {
  std::vector<std::string> r;
  if (plans_.empty()) return r;
  if (const Plan* planned = plans_.front()->plan.get()) {
    // Per node in the engine's order: its step's tactic and recorded output layout, or what
    // happened to a node with no step.
    r.assign(e_.order.size(), "computed at build");
    for (const PlanStep& st : planned->steps) {
      if (st.order_index < 0) continue;
      std::string t = st.info.tactic;
      if (!st.out.empty() && st.out[0] >= 0) {
        const Layout l = planned->slots[st.out[0]].desc.layout;
        if (l != Layout::kPlain) t += std::string(t.empty() ? "" : " ") + "-> " + layout_name(l);
      }
      r[st.order_index] = std::move(t);
    }
    return r;
  }
  const CpuPlan& p = *plans_.front()->dynamic;
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const CpuStep& step = p.steps[k];
    std::string t = step.view ? "view" : step.kernel ? step.kernel->tactic() : "";
    // The layout the plan records for the step's output, where it is not plain.
    const Value* y = e_.order[k]->output(0);
    if (y && p.desc[y->id()].layout != Layout::kPlain)
      t += std::string(t.empty() ? "" : " ") + "-> " + layout_name(p.desc[y->id()].layout);
    r.push_back(std::move(t));
  }
  return r;
}

}  // namespace kiln
