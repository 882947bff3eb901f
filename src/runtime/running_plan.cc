#include "runtime/running_plan.h"

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

// Executes one kernel on in/out tensors (through `refs`), with the hooks.
Status execute(const Node& node, size_t k, Kernel& kernel, const std::vector<const Tensor*>& in,
               const std::vector<Tensor*>& out, HostOperands& refs, const RunningHooks& hooks) {
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
  if (hooks.observer)
    for (size_t i = 0; i < node.outputs.size(); ++i)
      if (out[i])
        KILN_RETURN_IF_ERROR(hooks.observer->observe(node, i, host_ref(*out[i]), *hooks.device));
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

struct RunningStep {
  std::unique_ptr<Kernel> kernel;
  // Infers and prepares again on every run (see running_plan.h).
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

struct RunningPlanState {
  const Engine::Impl* engine = nullptr;
  Tensor arena;                    // uint8, the plan's own
  std::vector<RunningStep> steps;  // per node in the engine's order
  std::vector<TensorDesc> desc;    // by value id: every node output's planned desc
  std::vector<int64_t> offset;     // by value id: arena offset, -1 when not in the arena
  std::vector<Tensor> slots;       // by value id: constants, arena views; per run I/O
  std::vector<bool> per_run;       // by value id: a graph input or a fresh graph output
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

RunningPlan::RunningPlan(std::unique_ptr<RunningPlanState> state) : s_(std::move(state)) {}
RunningPlan::~RunningPlan() = default;

Status RunningPlan::run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs,
                        const RunningHooks& hooks, bool* fits) {
  RunningPlanState& p = *s_;
  const Engine::Impl& e_ = *p.engine;
  const Graph& g = *e_.graph;
  for (size_t i = 0; i < inputs.size(); ++i) p.slots[g.inputs()[i]->id()] = *inputs[i];
  // Clears the per-run slots on all paths out: the caller's tensors are not held.
  struct Clear {
    RunningPlanState& p;
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
    RunningStep& s = p.steps[k];
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
      const Status prepared = s.kernel->prepare(s.in_desc, s.out_desc, bctx);
      if (prepared.code() == StatusCode::kUnsupported) {  // declines these shapes: build afresh
        *fits = false;
        return Status::ok();
      }
      KILN_RETURN_IF_ERROR(prepared);
    }
    KILN_RETURN_IF_ERROR(execute(node, k, *s.kernel, s.in, s.out, s.refs, hooks));
  }
  outputs.clear();
  for (const Value* o : g.outputs()) outputs.push_back(p.slots[o->id()]);
  return Status::ok();
}

Result<std::unique_ptr<RunningPlan>> RunningPlan::build(const Engine::Impl& e,
                                                        const std::vector<const Tensor*>& inputs,
                                                        std::vector<Tensor>& outputs,
                                                        const RunningHooks& hooks) {
  // The engine's kernels; where one declines the shapes it meets, the reference kernels for
  // every node (a kernel's stored layouts assume its neighbours are its backend's too).
  bool declined = false;
  auto plan = build_with(e, inputs, outputs, hooks, e.options.backend == KernelChoice::kReference,
                         &declined);
  if (!declined) return plan;
  return build_with(e, inputs, outputs, hooks, true, &declined);
}

Result<std::unique_ptr<RunningPlan>> RunningPlan::build_with(
    const Engine::Impl& e_, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs,
    const RunningHooks& hooks, bool reference_only, bool* declined) {
  *declined = false;
  const Graph& g = *e_.graph;
  const size_t nv = g.value_id_limit();
  auto plan = std::make_unique<RunningPlanState>();
  RunningPlanState& p = *plan;
  p.engine = &e_;
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
    RunningStep step;
    const std::vector<const KernelCandidate*> candidates =
        candidates_for(node, DeviceKind::kCpu, reference_only);
    if (candidates.empty())
      return unsupported(node.describe() + ": op " + op_name(node.op) + " has no kernel");
    const KernelCandidate& c = *candidates.front();
    auto made = c.make(node, KernelParams{Precision::kFp32, e_.states.find(c.backend)});
    KILN_RETURN_IF_ERROR(made.status().with_context(node.describe()));
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
    const Status prepared = step.kernel->prepare(in_desc, out_desc, bctx);
    if (prepared.code() == StatusCode::kUnsupported && !reference_only) {
      *declined = true;
      return std::unique_ptr<RunningPlan>();
    }
    KILN_RETURN_IF_ERROR(prepared);
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
    RunningStep& s = p.steps[k];
    s.in.assign(node.inputs.size(), nullptr);
    s.out.assign(node.outputs.size(), nullptr);
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (node.inputs[i]) s.in[i] = &p.slots[node.inputs[i]->id()];
    for (size_t i = 0; i < node.outputs.size(); ++i)
      if (node.outputs[i]) s.out[i] = &p.slots[node.outputs[i]->id()];
  }

  try {
    p.arena = Tensor(DataType::kUInt8, {std::max<int64_t>(p.arena_bytes, 1)});
  } catch (const std::bad_alloc&) {
    return Status(
        StatusCode::kResourceExhausted,
        "out of memory allocating the " + std::to_string(p.arena_bytes) + "-byte activation arena");
  }
  p.bind(p.arena);
  return std::unique_ptr<RunningPlan>(new RunningPlan(std::move(plan)));
}

int64_t RunningPlan::arena_bytes() const { return s_->arena_bytes; }
int64_t RunningPlan::arena_lower_bound() const { return s_->arena_lower_bound; }

std::vector<std::string> RunningPlan::tactics() const {
  const RunningPlanState& p = *s_;
  const Engine::Impl& e_ = *p.engine;
  std::vector<std::string> r;
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const RunningStep& step = p.steps[k];
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
