// CudaPlan::build: lower the graph for one set of input shapes (see cuda_plan.h).
#include <algorithm>
#include <cstring>
#include <functional>
#include <string_view>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cuda_plan_impl.h"
#include "core/half.h"
#include "ops/op_registry.h"
#include "planner/arena_planner.h"

namespace kiln {

namespace {

// The device dtype of a graph value: float activations in the precision's dtype.
DataType device_dtype(DataType graph_dtype, Precision p) {
  return is_device_float(graph_dtype) ? act_dtype_of(p) : graph_dtype;
}

}  // namespace

// `t` (float32/float16/other) as bytes of `dt` in plain layout.
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
  Tensor t(dt, shape);
  if (t.nbytes()) std::memcpy(t.raw(), bytes, t.nbytes());
  if (dt == want || !is_device_float(dt) || !is_device_float(want)) return t;
  std::vector<float> f(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) f[i] = static_cast<float>(t.at_double(i));
  Tensor r = Tensor::from_floats(shape, f);
  if (want == DataType::kFloat32) return r;
  Tensor h(want, shape);
  std::vector<uint8_t> hb = host_bytes_as(r, want);
  std::memcpy(h.raw(), hb.data(), hb.size());
  return h;
}

namespace {

class Builder {
 public:
  Builder(CudaPlan::Impl& p, const Graph& g, WeightStore& w, TacticCache& t)
      : p_(p), g_(g), weights_(w), tactics_(t) {}

  Status build(const std::vector<const Node*>& order, const std::vector<Tensor>& inputs);

 private:
  int new_slot(const TensorDesc& d, int value_id, bool arena) {
    PlanSlot s;
    s.desc = d;
    s.desc.value = nullptr;
    s.value_id = value_id;
    if (arena) {
      s.buffer = static_cast<int>(p_.buffers.size());
      p_.buffers.push_back(PlanBuffer{static_cast<int64_t>(d.nbytes()), 0, 0, 0});
    }
    p_.slots.push_back(s);
    return static_cast<int>(p_.slots.size()) - 1;
  }
  // The slot holding value `v` in `layout` and `dtype`, adding a conversion step if needed.
  Result<int> slot_for(const Value* v, Layout layout, DataType dtype);
  // A constant uploaded as `dt` (float constants in the asking node's precision).
  Result<int> constant_slot(const Value* v, const Tensor& t, DataType dt);
  // The node's compute precision: its override, else the plan's.
  Precision precision_of(const Node& n) const {
    auto it = p_.options.precision_overrides.find(n.name);
    return it == p_.options.precision_overrides.end() ? p_.options.precision : it->second;
  }
  Status add_node(const Node& n);
  const Node& resolved(const Node& n);
  Status add_cpu_step(const Node& n, const std::string& why);
  Status eval_on_host(const Node& n, bool* done);
  Status plan_memory();

  CudaPlan::Impl& p_;
  const Graph& g_;
  WeightStore& weights_;
  TacticCache& tactics_;
  CudaBuildContext bctx_;
  std::vector<TensorDesc> host_;        // per value id: graph dtype, shape, known value
  std::vector<std::vector<int>> reps_;  // per value id: its slots (layouts/dtypes)
};

Result<int> Builder::constant_slot(const Value* v, const Tensor& t, DataType dt) {
  if (!is_device_float(t.dtype())) dt = t.dtype();
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
  KILN_ASSIGN_OR_RETURN(void* d, weights_.upload(key, bytes.data(), bytes.size()));
  int s = new_slot(TensorDesc{dt, t.shape()}, v->id(), false);
  p_.slots[s].fixed = d;
  reps_[v->id()].push_back(s);
  return s;
}

Result<int> Builder::slot_for(const Value* v, Layout layout, DataType dtype) {
  std::vector<int>& reps = reps_[v->id()];
  if (reps.empty()) {
    const Tensor* known = host_[v->id()].value;
    if (!known) return internal_error("value '" + v->name + "' has no producer in the plan");
    KILN_RETURN_IF_ERROR(constant_slot(v, *known, dtype).status());
  }
  for (int s : reps)
    if (p_.slots[s].desc.layout == layout && p_.slots[s].desc.dtype == dtype) return s;
  int src = reps.front();
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
      (d.shape[1] == 1 || d.shape[2] * d.shape[3] == 1)) {
    PlanSlot alias = p_.slots[src];
    alias.desc.layout = layout;
    p_.slots.push_back(alias);
    reps.push_back(static_cast<int>(p_.slots.size()) - 1);
    return reps.back();
  }
  d.layout = layout;
  d.dtype = dtype;
  int dst = new_slot(d, v->id(), true);
  PlanStep step;
  step.kind = StepKind::kConvert;
  step.in = {src};
  step.out = {dst};
  step.info = {"convert " + v->name, "Convert",
               std::string(layout_name(p_.slots[src].desc.layout)) + " " +
                   dtype_name(p_.slots[src].desc.dtype) + " -> " + layout_name(layout) + " " +
                   dtype_name(dtype),
               false};
  p_.steps.push_back(std::move(step));
  reps.push_back(dst);
  return dst;
}

// Shape arithmetic (Shape, and nodes whose inputs are all known on the host) is evaluated
// here once, for the plan's shapes, instead of on the device at every run.
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

Status Builder::add_node(const Node& n) {
  bool evaluated = false;
  KILN_RETURN_IF_ERROR(eval_on_host(n, &evaluated));
  if (evaluated) return Status::ok();

  const std::vector<const KernelCandidate*> candidates =
      KernelRegistry::candidates(n.op, DeviceKind::kCuda);
  if (candidates.empty())
    return add_cpu_step(n, "no CUDA kernel for " + std::string(op_name(n.op)));
  const Node& kn = resolved(n);
  const Precision prec = precision_of(n);
  // The first candidate that takes the node; the last one's reason when none does.
  std::unique_ptr<Kernel> kernel;
  std::string declined;
  for (const KernelCandidate* c : candidates) {
    auto made = c->make(kn, KernelParams{prec, nullptr});
    if (made.is_ok()) {
      kernel = std::move(made).value();
      break;
    }
    if (made.status().code() != StatusCode::kUnsupported)
      return made.status().with_context(n.describe());
    declined = made.status().message();
  }
  if (!kernel) return add_cpu_step(n, declined);

  PlanStep step;
  step.node = &kn;
  std::vector<TensorDesc> in(n.inputs.size());
  step.in.assign(n.inputs.size(), -1);
  // The layouts the inputs are offered in (their first placed form), asked all at once.
  std::vector<Layout> offered(n.inputs.size(), Layout::kPlain);
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.inputs[i] && !reps_[n.inputs[i]->id()].empty())
      offered[i] = p_.slots[reps_[n.inputs[i]->id()].front()].desc.layout;
  const std::vector<Layout> wanted = kernel->input_layouts(offered);
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Value* v = n.inputs[i];
    if (!v) continue;
    const TensorDesc& h = host_[v->id()];
    DataType dt = device_dtype(h.dtype, prec);
    if (h.value && kernel->reads_on_host(static_cast<int>(i))) {
      in[i] = TensorDesc{dt, h.shape, h.value};
      continue;
    }
    Layout want = h.shape.size() == 4 ? wanted[i] : Layout::kPlain;
    int s = -1;
    const std::vector<int>& reps = reps_[v->id()];
    bool converted = false;  // the wanted form exists already
    for (int r : reps) converted |= p_.slots[r].desc.layout == want && p_.slots[r].desc.dtype == dt;
    if (!converted && !reps.empty() &&
        kernel->takes_offered(static_cast<int>(i), p_.slots[reps.front()].desc)) {
      s = reps.front();
    } else {
      KILN_ASSIGN_OR_RETURN(s, slot_for(v, want, dt));
    }
    step.in[i] = s;
    in[i] = p_.slots[s].desc;
    in[i].value = h.value;
  }
  std::vector<TensorDesc> out(n.outputs.size());
  bctx_.precision = prec;  // what the kernel sees as the plan's precision
  Status prepared = kernel->prepare(in, out, bctx_);
  bctx_.precision = p_.options.precision;
  // A kernel may find out only from the shapes that it cannot run the node: the CPU then
  // runs it (conversions already added for it are harmless).
  if (prepared.code() == StatusCode::kUnsupported) return add_cpu_step(n, prepared.message());
  KILN_RETURN_IF_ERROR_CTX(prepared, n.describe());

  // The reference shape rule is the contract: a kernel disagreeing with it is a bug.
  std::vector<TensorDesc> want(n.outputs.size());
  std::vector<TensorDesc> hin(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (n.inputs[i]) hin[i] = host_[n.inputs[i]->id()];
  if (const OpDef* def = OpRegistry::find(n.op))
    KILN_RETURN_IF_ERROR_CTX(infer_node(*def, n, hin, want), n.describe());

  step.out.assign(n.outputs.size(), -1);
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const Value* v = n.outputs[i];
    if (!v || !out[i].present()) continue;
    if (want[i].present() && want[i].shape != out[i].shape)
      return internal_error(n.describe() + ": CUDA kernel gives output shape " +
                            shape_str(out[i].shape) + ", the reference " +
                            shape_str(want[i].shape));
    if (out[i].nbytes() > static_cast<size_t>(p_.options.max_tensor_bytes))
      return Status(
          StatusCode::kResourceExhausted,
          n.describe() + ": output " + shape_str(out[i].shape) + " exceeds the per-tensor limit");
    int s;
    if (kernel->is_alias() && i == 0) {
      s = new_slot(out[i], v->id(), false);
      p_.slots[s].buffer = p_.slots[step.in[0]].buffer;
      p_.slots[s].fixed = p_.slots[step.in[0]].fixed;
    } else {
      s = new_slot(out[i], v->id(), true);
    }
    step.out[i] = s;
    reps_[v->id()].push_back(s);
    host_[v->id()] =
        TensorDesc{want[i].present() ? want[i].dtype : out[i].dtype, out[i].shape, nullptr};
  }
  // In place: the output takes over the input's buffer when nothing reads the input later.
  // Decided in plan_memory(), which knows the last readers; remember the candidate.
  step.kind = StepKind::kKernel;
  step.info = {n.name, op_name(n.op), kernel->tactic(), false};
  if (prec != p_.options.precision)
    step.info.tactic += std::string(" [") + precision_name(prec) + ", overridden]";
  p_.workspace_bytes = std::max(p_.workspace_bytes, kernel->workspace_bytes());
  step.kernel = std::move(kernel);
  p_.steps.push_back(std::move(step));
  return Status::ok();
}

Status Builder::add_cpu_step(const Node& n, const std::string& why) {
  const OpDef* def = OpRegistry::find(n.op);
  if (!def) return unsupported(n.describe() + ": op " + op_name(n.op) + " has no kernel");
  // Its device-side inputs and outputs take the node's precision (a node kept in fp32 reads
  // and writes float32 there, as its CUDA kernel would).
  const Precision prec = precision_of(n);
  PlanStep step;
  step.kind = StepKind::kCpu;
  step.node = &n;
  std::vector<TensorDesc> hin(n.inputs.size());
  step.in.assign(n.inputs.size(), -1);
  step.host_in.assign(n.inputs.size(), nullptr);
  step.host_in_dtypes.assign(n.inputs.size(), DataType::kUndefined);
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const Value* v = n.inputs[i];
    if (!v) continue;
    hin[i] = host_[v->id()];
    // The reference runs in the graph's dtypes: float32 where the device holds float16.
    step.host_in_dtypes[i] = hin[i].dtype;
    step.host_in[i] = hin[i].value;
    if (hin[i].value) continue;  // read on the host directly
    DataType dt = device_dtype(hin[i].dtype, prec);
    KILN_ASSIGN_OR_RETURN(step.in[i], slot_for(v, Layout::kPlain, dt));
  }
  std::vector<TensorDesc> out(n.outputs.size());
  KILN_RETURN_IF_ERROR_CTX(infer_node(*def, n, hin, out), n.describe());
  step.out.assign(n.outputs.size(), -1);
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const Value* v = n.outputs[i];
    if (!v || !out[i].present()) continue;
    TensorDesc d{device_dtype(out[i].dtype, prec), out[i].shape};
    step.out[i] = new_slot(d, v->id(), true);
    step.host_out_dtypes.resize(n.outputs.size());
    step.host_out_dtypes[i] = out[i].dtype;
    reps_[v->id()].push_back(step.out[i]);
    host_[v->id()] = TensorDesc{out[i].dtype, out[i].shape, nullptr};
  }
  step.info = {n.name, std::string("CPU:") + op_name(n.op), why, true};
  p_.has_cpu_steps = true;
  p_.steps.push_back(std::move(step));
  return Status::ok();
}

Status Builder::build(const std::vector<const Node*>& order, const std::vector<Tensor>& inputs) {
  bctx_.precision = p_.options.precision;
  bctx_.conv_path = p_.options.conv_path;
  bctx_.space_to_depth = p_.options.space_to_depth;
  bctx_.stream = p_.handles->stream;
  bctx_.cudnn = p_.handles->cudnn;
  bctx_.cublaslt = p_.handles->cublaslt;
  bctx_.workspace_limit = p_.options.workspace_limit;
  bctx_.time_tactics = p_.options.time_tactics;
  bctx_.max_tactics = p_.options.max_tactics;
  bctx_.weights = &weights_;
  bctx_.tactics = &tactics_;
  bctx_.notes = &p_.notes;
  host_.assign(g_.value_id_limit(), TensorDesc{});
  reps_.assign(g_.value_id_limit(), {});
  for (const auto& v : g_.values())
    if (v->is_constant())
      host_[v->id()] = TensorDesc{v->constant.dtype(), v->constant.shape(), &v->constant};
  for (size_t i = 0; i < g_.inputs().size(); ++i) {
    const Value* v = g_.inputs()[i];
    const Tensor& t = inputs[i];
    host_[v->id()] = TensorDesc{t.dtype(), t.shape(), nullptr};
    int s = new_slot(TensorDesc{t.dtype(), t.shape()}, v->id(), true);
    reps_[v->id()].push_back(s);
    p_.input_slots.push_back(s);
    p_.input_shapes.push_back(t.shape());
  }
  for (const Node* n : order) KILN_RETURN_IF_ERROR(add_node(*n));
  for (const Value* o : g_.outputs()) {
    const TensorDesc& h = host_[o->id()];
    if (h.value) {  // an output computed entirely at build time
      KILN_ASSIGN_OR_RETURN(int s, slot_for(o, Layout::kPlain, h.dtype));
      p_.output_slots.push_back(s);
    } else {
      KILN_ASSIGN_OR_RETURN(int s, slot_for(o, Layout::kPlain, h.dtype));
      p_.output_slots.push_back(s);
    }
    p_.output_dtypes.push_back(h.dtype);
  }
  return plan_memory();
}

// Buffer lifetimes in step numbers: 0 is the input copy, step k is k + 1, the output copy
// is steps.size() + 1. In-place candidates take over their input's buffer when the input
// is read by no later step and is not a graph input or output.
Status Builder::plan_memory() {
  const int n_steps = static_cast<int>(p_.steps.size());
  std::vector<int> last_read(p_.buffers.size(), -1), first_write(p_.buffers.size(), INT32_MAX);
  auto touch = [&](int slot, int t, bool write) {
    int b = p_.slots[slot].buffer;
    if (b < 0) return;
    if (write) first_write[b] = std::min(first_write[b], t);
    last_read[b] = std::max(last_read[b], t);
  };
  for (int s : p_.input_slots) touch(s, 0, true);
  for (int k = 0; k < n_steps; ++k) {
    for (int s : p_.steps[k].in)
      if (s >= 0) touch(s, k + 1, false);
    for (int s : p_.steps[k].out)
      if (s >= 0) touch(s, k + 1, true);
  }
  for (int s : p_.output_slots) touch(s, n_steps + 1, false);
  std::vector<bool> pinned(p_.buffers.size(), false);  // graph inputs/outputs
  for (int s : p_.input_slots)
    if (p_.slots[s].buffer >= 0) pinned[p_.slots[s].buffer] = true;
  for (int s : p_.output_slots)
    if (p_.slots[s].buffer >= 0) pinned[p_.slots[s].buffer] = true;

  // In place: redirect the output buffer to the input's when legal.
  std::vector<int> redirect(p_.buffers.size());
  for (size_t b = 0; b < redirect.size(); ++b) redirect[b] = static_cast<int>(b);
  for (int k = 0; k < n_steps; ++k) {
    PlanStep& st = p_.steps[k];
    if (st.kind != StepKind::kKernel) continue;
    int ip = st.kernel->inplace_input();
    if (ip < 0 || ip >= static_cast<int>(st.in.size()) || st.in[ip] < 0 || st.out.empty() ||
        st.out[0] < 0)
      continue;
    int bi = p_.slots[st.in[ip]].buffer, bo = p_.slots[st.out[0]].buffer;
    if (bi < 0 || bo < 0 || pinned[bi] || pinned[bo]) continue;
    bi = redirect[bi];
    // Not over a buffer the step also reads through another input: Conv(r) + r would write
    // its output over the r its other threads still read.
    bool shared = false;
    for (size_t j = 0; j < st.in.size(); ++j) {
      if (static_cast<int>(j) == ip || st.in[j] < 0) continue;
      const int bj = p_.slots[st.in[j]].buffer;
      shared = shared || (bj >= 0 && redirect[bj] == bi);
    }
    if (shared) continue;
    if (last_read[bi] != k + 1 || p_.buffers[bi].bytes != p_.buffers[bo].bytes) continue;
    // bo's readers now read bi: extend bi's life and retire bo.
    last_read[bi] = std::max(last_read[bi], last_read[bo]);
    redirect[bo] = bi;
    last_read[bo] = -1;
    st.info.tactic += " (in place)";
  }
  for (PlanSlot& s : p_.slots)
    if (s.buffer >= 0) s.buffer = redirect[s.buffer];

  std::vector<BufferUse> uses(p_.buffers.size());
  for (size_t b = 0; b < uses.size(); ++b) {
    bool used = last_read[b] >= 0 && redirect[b] == static_cast<int>(b);
    uses[b].bytes = used ? p_.buffers[b].bytes : 0;
    uses[b].first = used ? std::min(first_write[b], last_read[b]) : 0;
    uses[b].last = used ? last_read[b] : 0;
  }
  ArenaPlan plan = plan_arena(uses);
  KILN_RETURN_IF_ERROR(check_arena_plan(uses, plan));
  for (size_t b = 0; b < uses.size(); ++b) p_.buffers[b].offset = plan.offsets[b];
  p_.memory.arena_bytes = plan.total_bytes;
  p_.memory.arena_lower_bound = plan.lower_bound;
  p_.memory.workspace_bytes = static_cast<int64_t>(p_.workspace_bytes);
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<CudaPlan>> CudaPlan::build(const Graph& graph,
                                                  const std::vector<const Node*>& order,
                                                  const std::vector<Tensor>& inputs,
                                                  const CudaPlanOptions& options,
                                                  WeightStore& weights, TacticCache& tactics,
                                                  CudaStreamHandles& handles) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->handles = &handles;
  Builder b(*impl, graph, weights, tactics);
  KILN_RETURN_IF_ERROR(b.build(order, inputs));
  for (const PlanStep& s : impl->steps) impl->infos.push_back(s.info);

  // Device memory: the Context's shared arena and workspace, grown for this plan now, so the
  // build's cost is all paid here.
  KILN_RETURN_IF_ERROR(impl->bind());
  for (int s : impl->input_slots) {
    void* p = nullptr;
    size_t n = impl->slots[s].desc.nbytes();
    KILN_CUDA(cudaHostAlloc(&p, n ? n : 1, cudaHostAllocDefault));
    impl->in_staging.push_back(p);
    impl->memory.staging_bytes += static_cast<int64_t>(n);
  }
  for (int s : impl->output_slots) {
    void* p = nullptr;
    size_t n = impl->slots[s].desc.nbytes();
    KILN_CUDA(cudaHostAlloc(&p, n ? n : 1, cudaHostAllocDefault));
    impl->out_staging.push_back(p);
    impl->memory.staging_bytes += static_cast<int64_t>(n);
  }
  for (cudaEvent_t& e : impl->ev) KILN_CUDA(cudaEventCreate(&e));
  return std::unique_ptr<CudaPlan>(new CudaPlan(std::move(impl)));
}

CudaPlan::CudaPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaPlan::~CudaPlan() = default;

void CudaPlan::Impl::drop_graphs() {
  if (graph_exec) cudaGraphExecDestroy(graph_exec);
  if (compute_exec) cudaGraphExecDestroy(compute_exec);
  graph_exec = compute_exec = nullptr;
}

Status CudaPlan::Impl::bind() {
  CudaSharedMemory& m = handles->memory;
  // +256 bytes so that an empty arena still has an address.
  KILN_RETURN_IF_ERROR(m.reserve(static_cast<size_t>(memory.arena_bytes) + 256, workspace_bytes));
  if (bound && bound_generation == m.generation) return Status::ok();
  drop_graphs();
  arena = m.arena;
  workspace = workspace_bytes ? m.workspace : nullptr;
  bound_generation = m.generation;
  bound = true;
  return Status::ok();
}

Status CudaSharedMemory::reserve(size_t arena_need, size_t workspace_need) {
  if (arena_need <= arena_bytes && workspace_need <= workspace_bytes) return Status::ok();
  // Plans bound to the old buffers may have work in flight on this device.
  KILN_CUDA(cudaDeviceSynchronize());
  auto grow = [](void*& p, size_t& have, size_t need) -> Status {
    if (need <= have) return Status::ok();
    cudaFree(p);
    p = nullptr;
    have = 0;
    KILN_CUDA(cudaMalloc(&p, need));
    have = need;
    return Status::ok();
  };
  KILN_RETURN_IF_ERROR(grow(arena, arena_bytes, arena_need));
  KILN_RETURN_IF_ERROR(grow(workspace, workspace_bytes, workspace_need));
  ++allocations;
  ++generation;
  return Status::ok();
}

CudaSharedMemory::~CudaSharedMemory() {
  cudaFree(workspace);
  cudaFree(arena);
}

CudaPlan::Impl::~Impl() {
  drop_graphs();
  for (cudaEvent_t e : ev)
    if (e) cudaEventDestroy(e);
  for (void* p : in_staging) cudaFreeHost(p);
  for (void* p : out_staging) cudaFreeHost(p);
}

const CudaTiming& CudaPlan::last_timing() const { return impl_->timing; }
const std::vector<CudaStepInfo>& CudaPlan::steps() const { return impl_->infos; }
const std::vector<std::string>& CudaPlan::notes() const { return impl_->notes; }
const CudaMemoryReport& CudaPlan::memory() const { return impl_->memory; }
bool CudaPlan::uses_cuda_graph() const { return impl_->graph_exec != nullptr; }
bool CudaPlan::has_cpu_steps() const { return impl_->has_cpu_steps; }
const std::vector<Shape>& CudaPlan::input_shapes() const { return impl_->input_shapes; }

}  // namespace kiln
