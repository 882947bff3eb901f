// compare_precision (kiln/precision_report.h): both engines run each sample with an observer
// that keeps every float value, and the sums of the comparisons accumulate over the samples.
#include "kiln/precision_report.h"

#include <cmath>

#include "runtime/context_plans.h"
#include "runtime/engine_impl.h"

namespace kiln {

namespace {

// The float inputs of `node` by name, each seen through a Q → DQ pair to the value quantized.
std::vector<std::string> float_inputs(const Node& node) {
  std::vector<std::string> r;
  for (const Value* v : node.inputs) {
    if (!v || v->is_constant() || !dtype_is_float(v->dtype)) continue;
    const Node* dq = v->producer;
    if (dq && dq->op == OpKind::DequantizeLinear && dq->input(0) && dq->input(0)->producer &&
        dq->input(0)->producer->op == OpKind::QuantizeLinear && dq->input(0)->producer->input(0))
      v = dq->input(0)->producer->input(0);
    r.push_back(v->name);
  }
  return r;
}

// Every float32 value of one run, as host float32 tensors, in execution order.
class KeepValues final : public RunObserver {
 public:
  struct Kept {
    std::string node, op;
    std::vector<std::string> inputs;
    Tensor t;
  };
  std::map<std::string, Kept> values;
  std::vector<std::string> order;
  Status observe(const Node& node, size_t i, const TensorRef& ref, ContextDevice& device) override {
    const Value* v = node.outputs[i];
    if (!v || v->dtype != DataType::kFloat32) return Status::ok();
    KILN_ASSIGN_OR_RETURN(Tensor t, observed_float32(ref, device, scratch_));
    if (!values.count(v->name)) order.push_back(v->name);
    values[v->name] = {node.name, op_name(node.op), float_inputs(node), std::move(t)};
    return Status::ok();
  }

 private:
  std::vector<uint8_t> scratch_;
};

// Sums over the samples for one value: Σ(a−b)², Σb², Σa², Σab.
struct Sums {
  double diff = 0, ref = 0, got = 0, dot = 0;
  bool nonfinite = false, ref_nonzero = false, got_nonzero = false;
  void add(const Tensor& got_t, const Tensor& ref_t) {
    const float* a = got_t.data<float>();
    const float* b = ref_t.data<float>();
    for (int64_t k = 0; k < ref_t.numel(); ++k) {
      if (!std::isfinite(b[k])) continue;  // fp32's own overflow: nothing to compare
      if (!std::isfinite(a[k])) {
        nonfinite = true;
        continue;
      }
      const double d = static_cast<double>(a[k]) - b[k];
      diff += d * d;
      ref += static_cast<double>(b[k]) * b[k];
      got += static_cast<double>(a[k]) * a[k];
      dot += static_cast<double>(a[k]) * b[k];
      ref_nonzero |= b[k] != 0.f;
      got_nonzero |= a[k] != 0.f;
    }
  }
  LayerError error(double budget) const {
    LayerError e;
    e.relative_l2 = nonfinite ? INFINITY
                    : ref > 0 ? std::sqrt(diff / ref)
                              : (got > 0 ? INFINITY : 0);
    e.cosine = ref > 0 && got > 0 ? dot / std::sqrt(ref * got) : (ref == got ? 1 : 0);
    e.over_budget = !(e.relative_l2 <= budget);
    return e;
  }
};

Result<KeepValues> run_keeping(Context& ctx, const std::map<std::string, Tensor>& in,
                               std::map<std::string, Tensor>* outputs) {
  KeepValues keep;
  context_impl(ctx).observer = &keep;
  auto r = ctx.run(in);
  context_impl(ctx).observer = nullptr;
  KILN_RETURN_IF_ERROR(r.status());
  *outputs = std::move(*r);
  return keep;
}

}  // namespace

Result<PrecisionReport> compare_precision(const Engine& reduced, const Engine& fp32,
                                          const std::vector<std::map<std::string, Tensor>>& samples,
                                          double max_layer_error) {
  if (fp32.options().precision != Precision::kFp32)
    return invalid_argument("compare_precision: the reference engine must compute in fp32");
  if (samples.empty()) return invalid_argument("compare_precision: no samples");
  PrecisionReport report;
  report.precision = precision_name(reduced.options().precision);
  report.max_layer_error = max_layer_error;
  auto a = reduced.create_context();
  auto b = fp32.create_context();
  std::map<std::string, Sums> sums, out_sums;
  std::vector<std::string> order;
  std::map<std::string, KeepValues::Kept> where;  // value -> node, op, inputs (no tensor)
  for (size_t s = 0; s < samples.size(); ++s) {
    std::map<std::string, Tensor> out_a, out_b;
    KILN_ASSIGN_OR_RETURN(KeepValues va, run_keeping(*a, samples[s], &out_a));
    KILN_ASSIGN_OR_RETURN(KeepValues vb, run_keeping(*b, samples[s], &out_b));
    for (const std::string& name : va.order) {
      auto it = vb.values.find(name);
      if (it == vb.values.end() || it->second.t.shape() != va.values[name].t.shape()) continue;
      if (!sums.count(name)) {
        order.push_back(name);
        const KeepValues::Kept& k = va.values[name];
        where[name] = {k.node, k.op, k.inputs, Tensor()};
      }
      sums[name].add(va.values[name].t, it->second.t);
    }
    for (const auto& [name, t] : out_b) {
      auto it = out_a.find(name);
      if (it == out_a.end() || t.dtype() != DataType::kFloat32 || it->second.shape() != t.shape())
        continue;
      out_sums[name].add(it->second, t);
    }
    report.samples = static_cast<int>(s + 1);
  }
  for (const std::string& name : order) {
    LayerError e = sums[name].error(max_layer_error);
    e.value = name;
    e.node = where[name].node;
    e.op = where[name].op;
    e.inputs = where[name].inputs;
    report.layers.push_back(std::move(e));
  }
  for (const auto& [name, s] : out_sums) {
    LayerError e = s.error(max_layer_error);
    e.value = name;
    report.outputs.push_back(e);
    if (s.nonfinite)
      report.lost.push_back("output '" + name + "' has values that are not finite in " +
                            report.precision);
    else if (s.ref_nonzero && !s.got_nonzero)
      report.lost.push_back("output '" + name + "' is all zeros in " + report.precision +
                            ", not in fp32");
  }
  return report;
}

std::vector<LayerError> error_origins(const PrecisionReport& r) {
  std::map<std::string, const LayerError*> by_value;
  for (const LayerError& l : r.layers) by_value[l.value] = &l;
  std::vector<LayerError> origins;
  for (const LayerError& l : r.layers) {
    if (!l.over_budget) continue;
    bool inputs_within = true;
    for (const std::string& in : l.inputs) {
      auto it = by_value.find(in);
      inputs_within = inputs_within && (it == by_value.end() || !it->second->over_budget);
    }
    if (inputs_within) origins.push_back(l);
  }
  return origins;
}

}  // namespace kiln
