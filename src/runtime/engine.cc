#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "backends/cpu/dnnl_backend.h"  // cpu_precision_status
#include "core/check.h"
#include "onnx/importer.h"
#include "passes/pass.h"
#include "runtime/context_plans.h"
#include "runtime/devices.h"
#include "runtime/engine_impl.h"
#include "runtime/fp32_values.h"
#include "runtime/int8_build.h"
#include "runtime/plan_file.h"
#include "runtime/tensor_limit.h"

namespace kiln {

namespace {

// A Context of `e` with no plan yet.
std::unique_ptr<Context> bare_context(const Engine& e) {
  auto impl = std::make_unique<Context::Impl>();
  impl->engine = &engine_impl(e);
  impl->plans = std::make_unique<ContextPlans>(*impl->engine);
  return std::make_unique<Context>(std::move(impl));
}

TensorInfo info_of(const Value& v) {
  TensorInfo t;
  t.name = v.name;
  t.dtype = v.dtype;
  t.has_shape = v.has_shape;
  for (const Dim& d : v.dims) {
    t.dims.push_back(d.known() ? d.value : -1);
    t.dim_params.push_back(d.param);
  }
  return t;
}

}  // namespace

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

const std::vector<TensorInfo>& Engine::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& Engine::outputs() const { return impl_->outputs; }
const EngineOptions& Engine::options() const { return impl_->asked; }
const EngineReport& Engine::report() const { return impl_->report; }
std::string Engine::graph_text() const { return print_graph(*impl_->graph); }
const std::map<std::string, std::string>& Engine::metadata() const { return impl_->metadata; }

// Each shape range names an input, has three shapes of its rank with min <= opt <= max and
// min >= 0, and keeps the input's fixed dimensions.
static Status check_ranges(const std::vector<TensorInfo>& inputs,
                           const std::map<std::string, ShapeRange>& ranges) {
  for (const auto& [name, r] : ranges) {
    const std::string what = "shape range for '" + name + "'";
    const TensorInfo* info = nullptr;
    for (const TensorInfo& t : inputs)
      if (t.name == name) info = &t;
    if (!info) {
      std::string names;
      for (const TensorInfo& t : inputs) names += (names.empty() ? "'" : ", '") + t.name + "'";
      return invalid_argument(what + ": the model has no such input (its inputs: " + names + ")");
    }
    if (r.min.size() != r.opt.size() || r.max.size() != r.opt.size())
      return invalid_argument(what + ": min " + shape_str(r.min) + ", opt " + shape_str(r.opt) +
                              " and max " + shape_str(r.max) + " differ in rank");
    if (info->has_shape && info->dims.size() != r.opt.size())
      return invalid_argument(what + ": rank " + std::to_string(r.opt.size()) +
                              ", the input has rank " + std::to_string(info->dims.size()));
    for (size_t d = 0; d < r.opt.size(); ++d) {
      if (r.min[d] < 0 || r.min[d] > r.opt[d] || r.opt[d] > r.max[d])
        return invalid_argument(what + ": dimension " + std::to_string(d) + " needs 0 <= min <= " +
                                "opt <= max, got " + std::to_string(r.min[d]) + ", " +
                                std::to_string(r.opt[d]) + ", " + std::to_string(r.max[d]));
      const int64_t fixed = info->has_shape ? info->dims[d] : -1;
      if (fixed >= 0 && (r.min[d] != fixed || r.max[d] != fixed))
        return invalid_argument(what + ": dimension " + std::to_string(d) + " of the input is " +
                                std::to_string(fixed) + ", the range gives " +
                                std::to_string(r.min[d]) + " to " + std::to_string(r.max[d]));
    }
  }
  return Status::ok();
}

// Every precision override must name a node of the optimized graph; for one the optimizer
// fused into another the error names the node it went into.
static Status check_overrides(const Graph& g, const std::set<std::string>& imported,
                              const PassReport& passes,
                              const std::map<std::string, Precision>& overrides) {
  std::set<std::string> names;
  for (const auto& n : g.nodes()) names.insert(n->name);
  for (const auto& [node, p] : overrides) {
    if (node.find('\n') != std::string::npos)
      return invalid_argument("precision override: a node name with a line break");
    if (names.count(node)) continue;
    if (!imported.count(node))
      return invalid_argument("precision override: the model has no node '" + node + "'");
    auto it = passes.fused_into.find(node);
    if (it != passes.fused_into.end())
      return invalid_argument("precision override: node '" + node + "' was fused into '" +
                              it->second.node + "' (" + passes.fused_groups[it->second.group] +
                              "): override '" + it->second.node + "' instead");
    return invalid_argument("precision override: node '" + node +
                            "' is not in the optimized graph (an optimizer pass folded or "
                            "removed it; `kiln inspect --passes` shows what they did)");
  }
  return Status::ok();
}

// The CPU computes in fp32, and in bf16 through oneDNN where the CPU has bfloat16 math: the
// engine's precision and every override must be one of those on a CPU engine.
static Status check_device_precisions(const EngineOptions& options) {
  for (const auto& [node, p] : options.precision_overrides)
    if (precision_is_8bit(p))
      return invalid_argument("precision override " + node + "=" + precision_name(p) + ": " +
                              precision_name(p) +
                              " is an engine's precision; a node may be kept in "
                              "fp32, tf32, fp16 or bf16");
  auto cpu_refuses = [&](Precision p, const std::string& what) -> Status {
    if (options.device == Device::kCuda || p == Precision::kFp32 || precision_is_8bit(p))
      return Status::ok();
    if (p != Precision::kBf16)
      return unsupported(what +
                         " needs a CUDA engine (--device cuda): the CPU engine computes "
                         "in fp32 (or bf16)");
    if (options.backend == KernelChoice::kReference)
      return unsupported(what +
                         ": the reference kernels compute in fp32 only (bf16 runs on "
                         "oneDNN, --backend auto)");
    return cpu_precision_status(p).with_context(what);
  };
  KILN_RETURN_IF_ERROR(cpu_refuses(options.precision,
                                   std::string("precision ") + precision_name(options.precision)));
  for (const auto& [node, p] : options.precision_overrides)
    KILN_RETURN_IF_ERROR(cpu_refuses(p, "precision override " + node + "=" + precision_name(p)));
  return Status::ok();
}

namespace {

// A graph through the passes, with what the precision step needs of the graph before them.
struct Optimized {
  PassReport passes;                     // empty without the optimizer
  std::set<std::string> imported_names;  // the nodes as imported
  ValueUses uses;                        // who wrote and read each value, where fp32_values asks
};

// Step 2 of a build: every pass of passes/pipeline.cc, the report's import and pass lines.
Result<Optimized> optimize(Graph& graph, const EngineOptions& options, EngineReport& report,
                           const quant::CalibrationTable* int8, Precision format) {
  Optimized o;
  for (const auto& n : graph.nodes()) o.imported_names.insert(n->name);
  // fp32_values may name values the passes fuse away: remember who wrote and read them.
  if (!options.fp32_values.empty() && options.precision != Precision::kFp32)
    o.uses = value_uses(graph);
  report.graph_name = graph.name;
  report.opset = graph.opset;
  report.imported = model_stats(graph);
  KILN_RETURN_IF_ERROR(
      optimize_graph(graph, options, &o.passes, int8 ? &int8->amax : nullptr, format));
  for (const auto& step : o.passes.steps) report.passes.push_back({step.pass, step.nodes_after});
  report.fused_groups = o.passes.fused_groups;
  report.quantization.layers = std::move(o.passes.quantization.layers);
  report.quantization.float_layers = std::move(o.passes.quantization.float_layers);
  return o;
}

// Step 3: the per-node precisions. The overrides must name nodes of the optimized graph; the
// values kept in fp32 add overrides of their own. Returns the options the engine keeps.
Result<EngineOptions> resolve_precision(const Graph& graph, const Optimized& o,
                                        const EngineOptions& options, EngineReport& report) {
  KILN_RETURN_IF_ERROR(
      check_overrides(graph, o.imported_names, o.passes, options.precision_overrides));
  EngineOptions resolved = options;
  if (!options.fp32_values.empty() && options.precision != Precision::kFp32)
    keep_values_in_fp32(graph, o.uses, o.passes, options.fp32_values, resolved.precision_overrides,
                        report.fp32_kept, report.fp32_kept);
  return resolved;
}

// The engine's shapes: its inputs and outputs as declared, and the profiles to plan (the
// options' profiles, then the ranges' opt shapes as one more).
Status set_shapes(const Graph& graph, const EngineOptions& options, Engine::Impl& impl) {
  for (const Value* v : graph.inputs()) impl.inputs.push_back(info_of(*v));
  for (const Value* v : graph.outputs()) impl.outputs.push_back(info_of(*v));
  impl.metadata = graph.metadata;
  KILN_RETURN_IF_ERROR(check_ranges(impl.inputs, options.shape_ranges));
  impl.profiles = options.shape_profiles;
  if (!options.shape_ranges.empty()) {
    std::map<std::string, std::vector<int64_t>> opt;
    for (const auto& [name, r] : options.shape_ranges) opt[name] = r.opt;
    impl.profiles.push_back(std::move(opt));
  }
  return Status::ok();
}

// The scale of every 8-bit value a QuantizeLinear writes with a constant per-tensor scale and
// zero point (int8 engines' and Q/DQ models'), and of every float value an int8 Conv reads as
// 8-bit codes (Epilogue::input_scale and input_zero_point), for the plans' slots.
std::map<std::string, QuantScale> quantized_values(const Graph& graph) {
  std::map<std::string, QuantScale> r;
  for (const auto& n : graph.nodes()) {
    if (n->epilogue.int8() && n->input(0)) {
      QuantScale q;
      q.scale = {n->epilogue.input_scale};
      q.zero_point = {n->epilogue.input_zero_point};
      r[n->input(0)->name] = std::move(q);
    }
    if (n->op != OpKind::QuantizeLinear || !n->output(0)) continue;
    const Value* s = n->input(1);
    const Value* z = n->input(2);
    if (!s || !s->is_constant() || s->constant.numel() != 1 ||
        s->constant.dtype() != DataType::kFloat32)
      continue;
    if (z && (!z->is_constant() || z->constant.numel() != 1)) continue;
    QuantScale q;
    q.scale = {s->constant.data<float>()[0]};
    if (z)
      q.zero_point = {z->constant.dtype() == DataType::kInt8 ? z->constant.data<int8_t>()[0]
                                                             : z->constant.data<uint8_t>()[0]};
    r[n->output(0)->name] = std::move(q);
  }
  return r;
}

// Step 4: the execution order, each value's last use, and the backends' states. Every node
// must have a kernel on the host (the reference kernels take every op with a shape rule); the
// plans choose each node's kernel among the registry's candidates (runtime/plan_builder.cc).
Status assign_kernels(Graph& graph, Engine::Impl& impl) {
  const EngineOptions& options = impl.options;
  for (Value* o : graph.outputs()) o->is_graph_output = true;
  const DeviceKind main = options.device == Device::kCuda ? DeviceKind::kCuda : DeviceKind::kCpu;
  impl.states = KernelRegistry::make_states(main, options);
  for (const auto& n : graph.nodes()) {
    if (candidates_for(*n, DeviceKind::kCpu, true).empty())
      return unsupported(n->describe() + ": op " + op_name(n->op) + " has no kernel");
    impl.order.push_back(n.get());
  }
  impl.last_use.assign(graph.value_id_limit(), -1);
  impl.is_graph_output.assign(graph.value_id_limit(), false);
  for (size_t i = 0; i < impl.order.size(); ++i)
    for (const Value* in : impl.order[i]->inputs)
      if (in) impl.last_use[in->id()] = static_cast<int>(i);
  for (const Value* o : graph.outputs()) impl.is_graph_output[o->id()] = true;
  return Status::ok();
}

// Step 1 of an int8 build: its magnitudes (given, from the cache, or calibrated), in the
// report; and the float precision the engine computes its other layers in.
Result<std::shared_ptr<const quant::CalibrationTable>> int8_magnitudes(
    std::shared_ptr<const quant::CalibrationTable> given, const std::string& model_bytes,
    const std::string& model_dir, const EngineOptions& options, QuantizationReport& report) {
  if (given) {
    report.method = given->method;
    report.samples = given->samples;
    report.source = "the engine's saved calibration";
    return given;
  }
  if (model_bytes.empty())
    return invalid_argument(
        "an int8 engine is built from a model file or its bytes "
        "(Engine::load, Engine::from_bytes), which calibration runs");
  KILN_ASSIGN_OR_RETURN(quant::CalibrationTable t,
                        int8_calibration(model_bytes, model_dir, options, report));
  return std::make_shared<const quant::CalibrationTable>(std::move(t));
}

}  // namespace

// Import is the caller's (Engine::load, from_bytes, a plan file); then the options are checked,
// the graph optimized, the precisions resolved, the kernels assigned and the profiles planned.
Result<std::shared_ptr<Engine>> build_engine(
    std::unique_ptr<Graph> graph, const EngineOptions& options,
    const std::vector<std::pair<std::string, std::string>>& tactics, std::string model_bytes,
    std::string model_dir, std::shared_ptr<const quant::CalibrationTable> calibration) {
  KILN_RETURN_IF_ERROR(validate_options(options));
  KILN_RETURN_IF_ERROR(check_device_precisions(options));
  EngineReport report;
  EngineOptions compute = options;  // an 8-bit engine's other layers compute in float
  if (precision_is_8bit(options.precision)) {
    KILN_ASSIGN_OR_RETURN(calibration, int8_magnitudes(std::move(calibration), model_bytes,
                                                       model_dir, options, report.quantization));
    compute.precision = options.device == Device::kCuda ? Precision::kFp16 : Precision::kFp32;
  } else {
    calibration = nullptr;
  }
  KILN_ASSIGN_OR_RETURN(Optimized optimized,
                        optimize(*graph, compute, report, calibration.get(), options.precision));
  KILN_ASSIGN_OR_RETURN(EngineOptions resolved,
                        resolve_precision(*graph, optimized, compute, report));
  KILN_RETURN_IF_ERROR(graph->topo_sort());
  KILN_RETURN_IF_ERROR(verify_graph(*graph));
  KILN_RETURN_IF_ERROR(check_declared_sizes(*graph, options.max_tensor_bytes));

  auto impl = std::make_unique<Engine::Impl>();
  impl->options = resolved;
  impl->asked = resolved;
  impl->asked.precision = options.precision;
  impl->calibration = std::move(calibration);
  impl->value_scales = quantized_values(*graph);
  impl->report = std::move(report);
  KILN_RETURN_IF_ERROR(set_shapes(*graph, options, *impl));
  KILN_RETURN_IF_ERROR(assign_kernels(*graph, *impl));
  // A plan file's choices: the backends (oneDNN) take theirs, the device its timing cache.
  for (auto& [name, state] : impl->states.by_backend)
    KILN_RETURN_IF_ERROR_CTX(state->restore_choices(tactics), "the saved choices of " + name);
  // The device state is made once the precision overrides are resolved (fp32_values adds
  // some).
  KILN_ASSIGN_OR_RETURN(const DeviceProvider* provider, provider_of(options.device));
  KILN_ASSIGN_OR_RETURN(impl->device, provider->open(resolved, tactics));
  impl->model_bytes = std::move(model_bytes);
  impl->model_dir = std::move(model_dir);
  impl->graph = std::move(graph);
  // Each profile once, at build: the layers are timed and the layouts chosen now, and their
  // plans go in the report before the engine is shared.
  if (!impl->profiles.empty()) {
    auto engine = std::make_shared<Engine>(std::move(impl));
    auto ctx = bare_context(*engine);
    std::vector<PlanInfo> plans;
    KILN_RETURN_IF_ERROR(plan_profiles(engine_impl(*engine), *ctx, &plans));
    engine_impl(*engine).report.plans = std::move(plans);
    return engine;
  }
  return std::make_shared<Engine>(std::move(impl));
}

namespace {

Result<std::string> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found("cannot open '" + path + "'");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string dir_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The profiles' plans an engine built from a plan file against the ones the file saved: the
// same steps, kernels, layouts, dtypes and arena offsets, or an error naming the first line
// that differs.
Status check_saved_plans(const std::vector<PlanInfo>& built, const std::vector<std::string>& saved,
                         const std::string& path) {
  for (size_t k = 0; k < saved.size(); ++k) {
    const std::string what = "plan file '" + path + "': shape profile " + std::to_string(k + 1);
    if (k >= built.size()) return invalid_argument(what + " was not built again");
    const std::string now = built[k].structure();
    if (now == saved[k]) continue;
    std::istringstream a(saved[k]), b(now);
    std::string la, lb;
    int line = 0;
    while (true) {
      ++line;
      const bool ga = static_cast<bool>(std::getline(a, la));
      const bool gb = static_cast<bool>(std::getline(b, lb));
      if (!ga) la = "(nothing)";
      if (!gb) lb = "(nothing)";
      if (la != lb || (!ga && !gb)) break;
    }
    return invalid_argument(what + " builds a different plan than the one saved, at line " +
                            std::to_string(line) + ": saved '" + la + "', built '" + lb +
                            "': rebuild it with `kiln build`");
  }
  return Status::ok();
}

// A .kiln plan: the device must be the one it was built for; its options replace the
// caller's build options (precision, graph, shape profiles...), its timing cache skips all
// timing, and its profiles' plans must come out as saved.
Result<std::shared_ptr<Engine>> load_plan(const std::string& path, const EngineOptions& opts) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  KILN_ASSIGN_OR_RETURN(PlanFile plan, parse_plan(bytes, path));
  const bool cpu_plan = plan.device_tag.rfind("cpu", 0) == 0;
  if (cpu_plan != (opts.device == Device::kCpu))
    return invalid_argument("'" + path + "' is a " + (cpu_plan ? "CPU" : "CUDA") +
                            " plan file; run it with --device " + (cpu_plan ? "cpu" : "cuda"));
  KILN_ASSIGN_OR_RETURN(std::string tag, device_tag(opts.device, opts.device_index));
  if (tag != plan.device_tag)
    return invalid_argument("plan file '" + path + "' was built for " + plan.device_tag +
                            "; this machine has " + tag + ": rebuild it with `kiln build`");
  // The options that shape the plans (options.def's kPlan) are the file's; the others the
  // caller's. A caller may add CUDA graphs to a plan built without.
  EngineOptions o = opts;
  take_plan_options(plan.options, o);
  o.cuda_graph = o.cuda_graph || opts.cuda_graph;
  KILN_ASSIGN_OR_RETURN(auto graph, import_onnx_bytes(plan.onnx_bytes, dir_of(path)));
  std::shared_ptr<const quant::CalibrationTable> calibration;
  if (!plan.calibration.empty()) {
    KILN_ASSIGN_OR_RETURN(quant::CalibrationTable t,
                          quant::parse_calibration_cache(plan.calibration, path));
    calibration = std::make_shared<const quant::CalibrationTable>(std::move(t));
  }
  KILN_ASSIGN_OR_RETURN(auto engine,
                        build_engine(std::move(graph), o, plan.tactics, std::move(plan.onnx_bytes),
                                     dir_of(path), std::move(calibration)));
  KILN_RETURN_IF_ERROR(check_saved_plans(engine->report().plans, plan.plans, path));
  return engine;
}

}  // namespace

Result<std::shared_ptr<Engine>> Engine::load(const std::string& path, const EngineOptions& opts) {
  if (looks_like_plan(path)) return load_plan(path, opts);
  KILN_ASSIGN_OR_RETURN(auto graph, import_onnx_file(path));
  // An engine keeps the ONNX bytes for save_plan() and for_gpu(); the graph no longer has them.
  KILN_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  return build_engine(std::move(graph), opts, {}, std::move(bytes), dir_of(path))
      .with_context(path);
}

Result<std::shared_ptr<Engine>> Engine::for_gpu(int device_index) const {
  if (impl_->options.device != Device::kCuda)
    return invalid_argument("Engine::for_gpu: a CPU engine has no GPU to build for");
  if (impl_->model_bytes.empty())
    return invalid_argument("Engine::for_gpu: this engine has no model bytes to build again");
  KILN_RETURN_IF_ERROR(check_cuda_device(device_index, "Engine::for_gpu"));
  EngineOptions o = impl_->asked;
  o.device_index = device_index;
  // The same GPU model (and libraries): this engine's timings stand, so no layer is timed
  // again; another model times its own.
  KILN_ASSIGN_OR_RETURN(const std::string here,
                        device_tag(Device::kCuda, impl_->options.device_index));
  KILN_ASSIGN_OR_RETURN(const std::string there, device_tag(Device::kCuda, device_index));
  std::vector<std::pair<std::string, std::string>> tactics;
  if (here == there) tactics = impl_->device->tactic_entries();
  KILN_ASSIGN_OR_RETURN(auto graph, import_onnx_bytes(impl_->model_bytes, impl_->model_dir));
  return build_engine(std::move(graph), o, tactics, impl_->model_bytes, impl_->model_dir,
                      impl_->calibration)
      .with_context("Engine::for_gpu(" + std::to_string(device_index) + ")");
}

bool is_plan_file(const std::string& path) { return looks_like_plan(path); }

Status Engine::save_plan(const std::string& path) const {
  if (impl_->model_bytes.empty())
    return invalid_argument("this engine has no model bytes to save (load it from a file)");
  PlanFile plan;
  plan.kiln_version = kiln_version();
  KILN_ASSIGN_OR_RETURN(plan.device_tag,
                        device_tag(impl_->options.device, impl_->options.device_index));
  plan.options = impl_->asked;
  if (impl_->calibration) plan.calibration = quant::to_kiln_text(*impl_->calibration);
  plan.tactics = impl_->device->tactic_entries();
  for (const auto& [name, state] : impl_->states.by_backend)
    for (auto& entry : state->saved_choices()) plan.tactics.push_back(std::move(entry));
  for (size_t k = 0; k < impl_->report.plans.size() && k < impl_->options.shape_profiles.size();
       ++k)
    plan.plans.push_back(impl_->report.plans[k].structure());
  plan.onnx_bytes = impl_->model_bytes;
  std::string bytes = serialize_plan(plan);
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return not_found("cannot write '" + path + "'");
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) return internal_error("writing '" + path + "' failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return internal_error("renaming '" + tmp + "' to '" + path + "' failed");
  return Status::ok();
}

Result<std::shared_ptr<Engine>> Engine::from_bytes(const std::string& bytes,
                                                   const EngineOptions& opts,
                                                   const std::string& base_dir) {
  KILN_ASSIGN_OR_RETURN(auto graph, import_onnx_bytes(bytes, base_dir));
  return build_engine(std::move(graph), opts, {}, bytes, base_dir);
}

std::unique_ptr<Context> Engine::create_context() const {
  auto ctx = bare_context(*this);
  // The profiles' plans now, so no request builds them. They were planned at the engine's
  // build, so this fails only for lack of memory: the first run returns that error.
  context_impl(*ctx).unplanned = plan_profiles(*impl_, *ctx, nullptr);
  return ctx;
}

}  // namespace kiln
