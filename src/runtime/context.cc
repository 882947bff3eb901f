// Context::run on the CPU (node by node through the chosen backends' kernels) and the
// Context accessors, CUDA ones forwarded to cuda_runtime.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <new>
#include <string>

#include "ir/op_kind.h"
#include "ops/op_registry.h"
#include "runtime/cuda_runtime.h"
#include "runtime/engine_impl.h"
#include "runtime/tensor_limit.h"

namespace kiln {

namespace {

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

}  // namespace

namespace {

std::string names_of(const std::vector<TensorInfo>& infos) {
  std::string r;
  for (const auto& i : infos) r += (r.empty() ? "" : ", ") + ("'" + i.name + "'");
  return r;
}

std::string declared_shape(const TensorInfo& info) {
  std::string r = "[";
  for (size_t i = 0; i < info.dims.size(); ++i) {
    if (i) r += ",";
    r += info.dims[i] >= 0 ? std::to_string(info.dims[i])
                           : (info.dim_params[i].empty() ? "?" : info.dim_params[i]);
  }
  return r + "]";
}

Status check_input(const TensorInfo& info, const Tensor& t) {
  std::string where = "input '" + info.name + "'";
  if (!t.defined()) return invalid_argument(where + ": tensor is empty");
  if (t.dtype() != info.dtype)
    return invalid_argument(where + ": expected dtype " + dtype_name(info.dtype) + ", got " +
                            dtype_name(t.dtype()));
  if (!info.has_shape) return Status::ok();
  bool ok = t.rank() == static_cast<int64_t>(info.dims.size());
  for (size_t i = 0; ok && i < info.dims.size(); ++i)
    if (info.dims[i] >= 0 && info.dims[i] != t.shape()[i]) ok = false;
  if (!ok)
    return invalid_argument(where + ": expected shape " + declared_shape(info) + ", got " +
                            shape_str(t.shape()));
  return Status::ok();
}

}  // namespace

Context::Context(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Context::~Context() = default;

Result<std::map<std::string, Tensor>> Context::run(const std::map<std::string, Tensor>& inputs) {
  const Engine::Impl& e = *impl_->engine;
  const Graph& g = *e.graph;
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const auto& info : e.inputs) known |= info.name == name;
    if (!known)
      return not_found("unknown input '" + name + "' (the model's inputs: " + names_of(e.inputs) +
                       ")");
  }
  std::vector<Tensor>& slots = impl_->slots;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    auto it = inputs.find(e.inputs[i].name);
    if (it == inputs.end())
      return invalid_argument("missing input '" + e.inputs[i].name +
                              "' (the model's inputs: " + names_of(e.inputs) + ")");
    KILN_RETURN_IF_ERROR(check_input(e.inputs[i], it->second));
    slots[g.inputs()[i]->id()] = it->second;
  }
  if (e.cuda) {
    std::vector<Tensor> in_list, out_list;
    for (const Value* v : g.inputs()) in_list.push_back(slots[v->id()]);
    for (Tensor& t : slots) t = Tensor();
    KILN_RETURN_IF_ERROR(cuda_run(e, impl_->cuda, in_list, out_list));
    std::map<std::string, Tensor> result;
    for (size_t i = 0; i < out_list.size(); ++i) result[g.outputs()[i]->name] = out_list[i];
    return result;
  }
  impl_->last_inputs = inputs;
  for (const auto& v : g.values())
    if (v->is_constant()) slots[v->id()] = v->constant;

  // Clears every slot on all paths out, so a failed run leaves the Context reusable.
  struct Clear {
    std::vector<Tensor>& s;
    ~Clear() {
      for (Tensor& t : s) t = Tensor();
    }
  } clear{slots};

  std::vector<const Tensor*> in;
  std::vector<TensorDesc> in_desc;
  std::vector<TensorDesc> out_desc;
  std::vector<Tensor*> out;
  for (size_t k = 0; k < e.order.size(); ++k) {
    const Node& node = *e.order[k];
    in.assign(node.inputs.size(), nullptr);
    in_desc.assign(node.inputs.size(), TensorDesc{});
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const Value* v = node.inputs[i];
      if (!v) continue;
      const Tensor& t = slots[v->id()];
      if (!t.defined())
        return internal_error(node.describe() + ": input '" + v->name + "' was not computed");
      in[i] = &t;
      in_desc[i] = {t.dtype(), t.shape(), &t};
    }
    out_desc.assign(node.outputs.size(), TensorDesc{});
    // The outputs' sizes are checked from the shape rule before the kernel prepares (and
    // only here: prepare gives the same shapes): a library kernel may allocate for them
    // (oneDNN's scratchpads, timing buffers) first.
    if (const OpDef* def = OpRegistry::find(node.op)) {
      KILN_RETURN_IF_ERROR(infer_node(*def, node, in_desc, out_desc).with_context(node.describe()));
      for (size_t i = 0; i < node.outputs.size(); ++i)
        if (node.outputs[i] && out_desc[i].present())
          KILN_RETURN_IF_ERROR_CTX(
              check_tensor_size(out_desc[i].dtype, out_desc[i].shape, e.options.max_tensor_bytes),
              node.describe() + ": output '" + node.outputs[i]->name + "'");
      out_desc.assign(node.outputs.size(), TensorDesc{});
    }
    Kernel& kernel = *impl_->kernels[k];
    KILN_RETURN_IF_ERROR(kernel.prepare(in_desc, out_desc));
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
      try {
        slots[v->id()] = Tensor(out_desc[i].dtype, out_desc[i].shape);
      } catch (const std::bad_alloc&) {
        return Status(StatusCode::kResourceExhausted,
                      node.describe() + ": out of memory allocating output '" + v->name + "' " +
                          shape_str(out_desc[i].shape));
      }
      out[i] = &slots[v->id()];
    }
    Status executed;
    try {
      if (impl_->node_seconds) {
        const auto t0 = std::chrono::steady_clock::now();
        executed = kernel.execute(in, out);
        (*impl_->node_seconds)[k] +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      } else {
        executed = kernel.execute(in, out);
      }
    } catch (const std::bad_alloc&) {
      executed = Status(StatusCode::kResourceExhausted, node.describe() + ": out of memory");
    }
    KILN_RETURN_IF_ERROR(executed);
    if (impl_->value_stats)
      for (size_t i = 0; i < node.outputs.size(); ++i)
        if (out[i] && out[i]->dtype() == DataType::kFloat32)
          impl_->value_stats->push_back(stats_of(*out[i], node, *node.outputs[i]));
    // Free what no later node reads.
    for (const Value* v : node.inputs)
      if (v && e.last_use[v->id()] == static_cast<int>(k) && !e.is_graph_output[v->id()] &&
          !v->is_constant())
        slots[v->id()] = Tensor();
  }

  std::map<std::string, Tensor> result;
  for (const Value* o : g.outputs()) {
    const Tensor& t = slots[o->id()];
    if (!t.defined()) return internal_error("output '" + o->name + "' was not computed");
    result[o->name] = t;
  }
  return result;
}

}  // namespace kiln

namespace kiln {

Result<DeviceTiming> Context::last_device_timing() const {
  if (!impl_->engine->cuda) return invalid_argument("device timings are for CUDA engines");
  return cuda_last_timing(impl_->cuda.get());
}

Result<std::vector<double>> Context::time_compute(int iterations) {
  if (!impl_->engine->cuda) return invalid_argument("time_compute is for CUDA engines");
  return cuda_time_compute(impl_->cuda.get(), iterations);
}

Result<std::vector<LayerProfile>> Context::profile_layers(int iterations) {
  if (impl_->engine->cuda) return cuda_profile_layers(impl_->cuda.get(), iterations);
  // CPU: the last run's inputs again, each node's execute() timed (allocation and the
  // runtime's bookkeeping between nodes are not counted).
  if (impl_->last_inputs.empty()) return invalid_argument("profile_layers needs a run() first");
  if (iterations < 1) return invalid_argument("profile_layers needs at least one iteration");
  const Engine::Impl& e = *impl_->engine;
  std::vector<double> seconds(e.order.size(), 0.0);
  impl_->node_seconds = &seconds;
  const std::map<std::string, Tensor> inputs = impl_->last_inputs;
  Status status = Status::ok();
  for (int i = 0; i < iterations && status.is_ok(); ++i) status = run(inputs).status();
  impl_->node_seconds = nullptr;
  KILN_RETURN_IF_ERROR(status);
  std::vector<LayerProfile> layers;
  for (size_t k = 0; k < e.order.size(); ++k) {
    LayerProfile l;
    l.name = e.order[k]->name;
    l.op = op_name(e.order[k]->op);
    l.tactic = e.node_backend[k] ? e.node_backend[k]->name() : "";
    l.on_cpu = true;
    l.ms = seconds[k] * 1e3 / iterations;
    layers.push_back(std::move(l));
  }
  return layers;
}

Result<DeviceMemoryInfo> Context::device_memory() const {
  if (!impl_->engine->cuda) return invalid_argument("device memory is for CUDA engines");
  return cuda_device_memory(*impl_->engine->cuda, impl_->cuda.get());
}

Result<std::vector<ValueStats>> Context::value_stats(const std::map<std::string, Tensor>& inputs) {
  if (impl_->engine->cuda) return invalid_argument("value_stats is for CPU engines");
  std::vector<ValueStats> stats;
  impl_->value_stats = &stats;
  auto r = run(inputs);
  impl_->value_stats = nullptr;
  KILN_RETURN_IF_ERROR(r.status());
  return stats;
}

bool Context::uses_cuda_graph() const { return cuda_uses_graph(impl_->cuda.get()); }

}  // namespace kiln
