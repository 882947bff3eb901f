// Context::run (inputs checked against the model's declarations, then the CPU plan cache of
// runtime/cpu_plan.h or the CUDA runtime) and the Context accessors, CUDA ones forwarded to
// cuda_runtime.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <new>
#include <string>

#include "ir/op_kind.h"
#include "ops/op_registry.h"
#include "runtime/cpu_plan.h"
#include "runtime/cuda_runtime.h"
#include "runtime/engine_impl.h"
#include "runtime/tensor_limit.h"

namespace kiln {

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

// "shape profile 2", or "the shape ranges' opt" for the profile the ranges add.
std::string profile_name(const Engine::Impl& e, size_t k) {
  if (k >= e.options.shape_profiles.size()) return "the shape ranges' opt";
  return "shape profile " + std::to_string(k + 1);
}

// The profile's shape of each graph input (the declared one for inputs it leaves out).
Result<std::vector<Shape>> profile_shapes(const Engine::Impl& e, size_t k) {
  const auto& profile = e.profiles[k];
  const std::string what = profile_name(e, k);
  for (const auto& [name, shape] : profile) {
    bool known = false;
    for (const auto& info : e.inputs) known |= info.name == name;
    if (!known)
      return invalid_argument(what + ": unknown input '" + name +
                              "' (the model's inputs: " + names_of(e.inputs) + ")");
  }
  std::vector<Shape> shapes;
  for (const TensorInfo& info : e.inputs) {
    auto it = profile.find(info.name);
    if (it != profile.end()) {
      for (int64_t d : it->second)
        if (d < 0)
          return invalid_argument(what + ": input '" + info.name + "' has shape " +
                                  shape_str(it->second));
      shapes.push_back(it->second);
      continue;
    }
    Shape s(info.dims.begin(), info.dims.end());
    if (!info.has_shape || std::find(s.begin(), s.end(), -1) != s.end())
      return invalid_argument(what + ": input '" + info.name + "' has the symbolic shape " +
                              declared_shape(info) + ": give it a shape");
    shapes.push_back(s);
  }
  return shapes;
}

std::string profiles_text(const Engine::Impl& e) {
  std::string r;
  for (size_t k = 0; k < e.options.shape_profiles.size(); ++k) {
    auto shapes = profile_shapes(e, k);
    if (!shapes.is_ok()) continue;
    r += k ? "; " : "";
    for (size_t i = 0; i < shapes->size(); ++i)
      r += (i ? " " : "") + e.inputs[i].name + "=" + shape_str((*shapes)[i]);
  }
  for (const auto& [name, range] : e.options.shape_ranges)
    r += (r.empty() ? "" : "; ") + name + " from " + shape_str(range.min) + " to " +
         shape_str(range.max);
  return r;
}

// Whether `in` lies inside the engine's shape ranges: each ranged input within its min and
// max, every other input at its shape in the ranges' opt profile.
bool inside_ranges(const Engine::Impl& e, const std::vector<const Tensor*>& in) {
  if (e.options.shape_ranges.empty()) return false;
  auto opt = profile_shapes(e, e.profiles.size() - 1);
  if (!opt.is_ok()) return false;
  for (size_t i = 0; i < in.size(); ++i) {
    const Shape& s = in[i]->shape();
    auto it = e.options.shape_ranges.find(e.inputs[i].name);
    if (it == e.options.shape_ranges.end()) {
      if (s != (*opt)[i]) return false;
      continue;
    }
    const ShapeRange& r = it->second;
    if (s.size() != r.min.size()) return false;
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] < r.min[d] || s[d] > r.max[d]) return false;
  }
  return true;
}

}  // namespace

Result<std::map<std::string, Tensor>> profile_inputs(const Engine::Impl& e, size_t k) {
  KILN_ASSIGN_OR_RETURN(std::vector<Shape> shapes, profile_shapes(e, k));
  std::map<std::string, Tensor> inputs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Tensor t = Tensor::zeros(e.inputs[i].dtype, shapes[i]);
    KILN_RETURN_IF_ERROR_CTX(check_input(e.inputs[i], t), profile_name(e, k));
    inputs[e.inputs[i].name] = std::move(t);
  }
  return inputs;
}

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
  std::vector<const Tensor*> in(e.inputs.size(), nullptr);
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    auto it = inputs.find(e.inputs[i].name);
    if (it == inputs.end())
      return invalid_argument("missing input '" + e.inputs[i].name +
                              "' (the model's inputs: " + names_of(e.inputs) + ")");
    KILN_RETURN_IF_ERROR(check_input(e.inputs[i], it->second));
    const int gpu = it->second.gpu();
    if (gpu >= 0 && e.options.device != Device::kCuda)
      return invalid_argument("input '" + e.inputs[i].name + "' is in the memory of GPU " +
                              std::to_string(gpu) + "; a CPU engine takes host tensors");
    if (gpu >= 0 && gpu != e.options.device_index)
      return invalid_argument("input '" + e.inputs[i].name + "' is in the memory of GPU " +
                              std::to_string(gpu) + "; this engine runs on GPU " +
                              std::to_string(e.options.device_index));
    in[i] = &it->second;
  }
  if (e.options.only_profile_shapes && !e.profiles.empty()) {
    bool listed = inside_ranges(e, in);
    for (size_t k = 0; k < e.profiles.size() && !listed; ++k) {
      auto shapes = profile_shapes(e, k);
      listed = shapes.is_ok();
      for (size_t i = 0; listed && i < in.size(); ++i) listed = (*shapes)[i] == in[i]->shape();
    }
    if (!listed) {
      std::string given;
      for (size_t i = 0; i < in.size(); ++i)
        given += (i ? " " : "") + e.inputs[i].name + "=" + shape_str(in[i]->shape());
      return invalid_argument("input shapes " + given +
                              " are none of the engine's shape profiles or ranges (" +
                              profiles_text(e) + "), and only those may run (only_profile_shapes)");
    }
  }
  std::vector<Tensor> out;
  if (e.cuda) {
    std::vector<Tensor> in_list;
    for (const Tensor* t : in) in_list.push_back(*t);
    KILN_RETURN_IF_ERROR(cuda_run(e, impl_->cuda, in_list, out));
  } else {
    impl_->last_inputs = inputs;
    CpuRunHooks hooks;
    hooks.node_seconds = impl_->node_seconds;
    hooks.value_stats = impl_->value_stats;
    const auto t0 = std::chrono::steady_clock::now();
    KILN_RETURN_IF_ERROR(impl_->cpu->run(in, out, hooks));
    impl_->last_run_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  std::map<std::string, Tensor> result;
  for (size_t i = 0; i < out.size(); ++i) result[g.outputs()[i]->name] = out[i];
  return result;
}

}  // namespace kiln

namespace kiln {

Result<DeviceTiming> Context::last_device_timing() const {
  if (impl_->engine->cuda) return cuda_last_timing(impl_->cuda.get());
  // CPU: no copies; the compute is the whole run (the outputs' allocation included).
  if (impl_->last_run_ms < 0) return invalid_argument("last_device_timing needs a run() first");
  return DeviceTiming{0, impl_->last_run_ms, 0};
}

Result<std::vector<double>> Context::time_compute(int iterations) {
  if (impl_->engine->cuda) return cuda_time_compute(impl_->cuda.get(), iterations);
  // CPU: the last run's inputs through its cached plan again (the inputs are in host memory
  // already, as on the device there).
  if (impl_->last_inputs.empty()) return invalid_argument("time_compute needs a run() first");
  const std::map<std::string, Tensor> inputs = impl_->last_inputs;
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    KILN_RETURN_IF_ERROR(run(inputs).status());
    ms.push_back(impl_->last_run_ms);
  }
  return ms;
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
  const std::vector<std::string> tactics = impl_->cpu->last_plan_tactics();
  for (size_t k = 0; k < e.order.size(); ++k) {
    LayerProfile l;
    l.name = e.order[k]->name;
    l.op = op_name(e.order[k]->op);
    // The kernel's own account where it gives one, else its backend's name.
    l.tactic = k < tactics.size() && !tactics[k].empty() ? tactics[k]
               : e.node_backend[k]                       ? e.node_backend[k]->name()
                                                         : "";
    l.on_cpu = true;
    l.ms = seconds[k] * 1e3 / iterations;
    layers.push_back(std::move(l));
  }
  return layers;
}

Result<DeviceMemoryInfo> Context::device_memory() const {
  if (impl_->engine->cuda) return cuda_device_memory(*impl_->engine->cuda, impl_->cuda.get());
  // CPU: the plans' shared arena and the model's constants, in host memory.
  DeviceMemoryInfo m;
  m.arena = impl_->cpu->stats().arena_bytes;
  m.arena_lower_bound = impl_->cpu->last_plan_lower_bound();
  for (const auto& v : impl_->engine->graph->values())
    if (v->is_constant()) m.weights += static_cast<int64_t>(v->constant.nbytes());
  return m;
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

Result<PlanInfo> Context::plan() const {
  if (impl_->engine->cuda) return cuda_plan_info(*impl_->engine, impl_->cuda.get());
  return impl_->cpu->last_plan_info();
}

ContextStats Context::stats() const {
  return impl_->cpu ? impl_->cpu->stats() : cuda_stats(impl_->cuda.get());
}

}  // namespace kiln
