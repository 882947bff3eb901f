// Context::run (inputs checked against the model's declarations, then the Context's plans of
// runtime/context_plans.h, the same on every device) and the Context accessors.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <new>
#include <string>

#include "ir/op_kind.h"
#include "ops/op_registry.h"
#include "runtime/context_plans.h"
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

// `shape` against the input's declared one (symbolic dimensions take any size).
Status check_shape(const TensorInfo& info, const Shape& shape) {
  if (!info.has_shape) return Status::ok();
  bool ok = shape.size() == info.dims.size();
  for (size_t i = 0; ok && i < info.dims.size(); ++i)
    if (info.dims[i] >= 0 && info.dims[i] != shape[i]) ok = false;
  if (!ok)
    return invalid_argument("input '" + info.name + "': expected shape " + declared_shape(info) +
                            ", got " + shape_str(shape));
  return Status::ok();
}

Status check_input(const TensorInfo& info, const Tensor& t) {
  std::string where = "input '" + info.name + "'";
  if (!t.defined()) return invalid_argument(where + ": tensor is empty");
  if (t.dtype() != info.dtype)
    return invalid_argument(where + ": expected dtype " + dtype_name(info.dtype) + ", got " +
                            dtype_name(t.dtype()));
  return check_shape(info, t.shape());
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

Result<std::vector<TensorDesc>> profile_descs(const Engine::Impl& e, size_t k) {
  KILN_ASSIGN_OR_RETURN(std::vector<Shape> shapes, profile_shapes(e, k));
  std::vector<TensorDesc> descs;
  for (size_t i = 0; i < shapes.size(); ++i) {
    KILN_RETURN_IF_ERROR_CTX(check_shape(e.inputs[i], shapes[i]), profile_name(e, k));
    descs.push_back(TensorDesc{e.inputs[i].dtype, shapes[i]});
  }
  return descs;
}

Status plan_profiles(const Engine::Impl& e, Context& ctx, std::vector<PlanInfo>* plans) {
  for (size_t k = 0; k < e.profiles.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(std::vector<TensorDesc> descs, profile_descs(e, k));
    KILN_ASSIGN_OR_RETURN(PlanInfo plan,
                          context_impl(ctx).plans->plan(descs).with_context(profile_name(e, k)));
    if (plans) plans->push_back(std::move(plan));
  }
  return Status::ok();
}

Context::Context(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Context::~Context() = default;

namespace {

// The inputs in the graph's order, each checked against its declaration and the engine's
// device, and their shapes against the profiles where only those may run.
Result<std::vector<const Tensor*>> checked_inputs(const Engine::Impl& e,
                                                  const std::map<std::string, Tensor>& inputs) {
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
    if (gpu >= 0 && e.options.device == Device::kCpu)
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
  return in;
}

std::map<std::string, Tensor> named_outputs(const Graph& g, std::vector<Tensor>& out) {
  std::map<std::string, Tensor> result;
  for (size_t i = 0; i < out.size(); ++i) result[g.outputs()[i]->name] = std::move(out[i]);
  return result;
}

}  // namespace

Result<std::map<std::string, Tensor>> Context::run(const std::map<std::string, Tensor>& inputs) {
  const Engine::Impl& e = *impl_->engine;
  KILN_RETURN_IF_ERROR(take_unplanned());
  KILN_ASSIGN_OR_RETURN(std::vector<const Tensor*> in, checked_inputs(e, inputs));
  std::vector<Tensor> out;
  KILN_RETURN_IF_ERROR(impl_->plans->run(in, out, impl_->observer));
  return named_outputs(*e.graph, out);
}

Status Context::enqueue(const std::map<std::string, Tensor>& inputs, OnDone on_done,
                        const EnqueueOptions& outputs) {
  const Engine::Impl& e = *impl_->engine;
  const Graph& g = *e.graph;
  KILN_RETURN_IF_ERROR(take_unplanned());
  KILN_ASSIGN_OR_RETURN(std::vector<const Tensor*> in, checked_inputs(e, inputs));
  std::vector<Tensor> targets(g.outputs().size());
  for (const auto& [name, t] : outputs.buffers) {
    size_t i = 0;
    while (i < g.outputs().size() && g.outputs()[i]->name != name) ++i;
    if (i == g.outputs().size())
      return not_found("output buffer for unknown output '" + name +
                       "' (the model's outputs: " + names_of(e.outputs) + ")");
    if (!t.defined()) return invalid_argument("output buffer '" + name + "' is empty");
    targets[i] = t;
  }
  const Graph* graph = &g;
  return impl_->plans->enqueue(
      in, targets, outputs.on_device, outputs.stream,
      [graph, on_done = std::move(on_done)](Result<std::vector<Tensor>> out) {
        if (!out.is_ok()) {
          on_done(out.status());
          return;
        }
        on_done(named_outputs(*graph, *out));
      });
}

Status Context::wait() { return impl_->plans->wait(); }

Status Context::take_unplanned() {
  Status st = std::move(impl_->unplanned);
  impl_->unplanned = Status::ok();
  return st.with_context("planning the engine's shape profiles for this context");
}

}  // namespace kiln

namespace kiln {

Context::Impl::~Impl() = default;

Result<DeviceTiming> Context::last_device_timing() const { return impl_->plans->last_timing(); }

Result<std::vector<double>> Context::time_compute(int iterations) {
  return impl_->plans->time_compute(iterations);
}

Result<std::vector<LayerProfile>> Context::profile_layers(int iterations) {
  return impl_->plans->profile_steps(iterations);
}

Result<DeviceMemoryInfo> Context::device_memory() const { return impl_->plans->memory(); }

namespace {

// The statistics of one value, whatever its device, dtype and layout (a blocked or NHWC value
// holds the same elements in another order).
class ValueStatsObserver final : public RunObserver {
 public:
  std::vector<ValueStats> stats;
  Status observe(const Node& node, size_t i, const TensorRef& ref, ContextDevice& device) override {
    const Value* v = node.outputs[i];
    if (!v || v->dtype != DataType::kFloat32) return Status::ok();
    KILN_ASSIGN_OR_RETURN(const Tensor t, observed_float32(ref, device, host_));
    stats.push_back(stats_of(t, node, *v));
    return Status::ok();
  }

 private:
  static ValueStats stats_of(const Tensor& t, const Node& node, const Value& v) {
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
  std::vector<uint8_t> host_;
};

}  // namespace

Result<std::vector<ValueStats>> Context::value_stats(const std::map<std::string, Tensor>& inputs) {
  ValueStatsObserver observer;
  impl_->observer = &observer;
  auto r = run(inputs);
  impl_->observer = nullptr;
  KILN_RETURN_IF_ERROR(r.status());
  return std::move(observer.stats);
}

bool Context::uses_cuda_graph() const { return impl_->plans->replayed(); }

Result<PlanInfo> Context::plan() const { return impl_->plans->last_plan_info(); }

ContextStats Context::stats() const { return impl_->plans->stats(); }

}  // namespace kiln
