// `kiln inspect MODEL [--graph] [--passes] [--plan]`: what a model takes and gives, what it is
// made of and how much it costs (op counts, parameters, FLOPs per image), with --graph the kiln
// IR, with --passes what the graph optimizer does to it, with --plan (and always on CUDA) the
// plan of one input shape, step by step. The description is of the model
// as imported (the engine's report keeps it from before the passes), so it matches the .onnx
// file the user knows; --graph prints the imported graph too.
#include <cstdio>
#include <vector>

#include "cli_common.h"
#include "kiln/calibration.h"
#include "kiln/precision_report.h"

namespace kiln::cli {

namespace {

struct InspectOptions {
  std::string model;
  bool graph = false;
  bool passes = false;
  bool plan = false;
  bool plan_steps = false;
  bool precision_report = false;
  double max_layer_error = kDefaultMaxLayerError;
  int64_t batch = 0;
};

std::string human_count(double v) {
  char buf[32];
  if (v >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2f G", v / 1e9);
  else if (v >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2f M", v / 1e6);
  else if (v >= 1e3)
    std::snprintf(buf, sizeof buf, "%.2f K", v / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

std::string human_bytes(double v) {
  char buf[32];
  if (v >= 1 << 30)
    std::snprintf(buf, sizeof buf, "%.2f GiB", v / (1 << 30));
  else if (v >= 1 << 20)
    std::snprintf(buf, sizeof buf, "%.2f MiB", v / (1 << 20));
  else if (v >= 1 << 10)
    std::snprintf(buf, sizeof buf, "%.2f KiB", v / (1 << 10));
  else
    std::snprintf(buf, sizeof buf, "%.0f B", v);
  return buf;
}

void print_tensors(const char* title, const std::vector<TensorInfo>& infos) {
  std::printf("%s\n", title);
  size_t w = 4;
  for (const auto& i : infos) w = std::max(w, i.name.size());
  for (const auto& i : infos)
    std::printf("  %-*s  %-8s %s\n", static_cast<int>(w), i.name.c_str(), dtype_name(i.dtype),
                declared_shape(i).c_str());
}

// Node counts after each pass and the fused groups, from the engine's report.
void print_passes(const EngineReport& report, const char* whose) {
  std::printf("\npasses%s\n  %-22s %lld nodes\n", whose, "imported",
              static_cast<long long>(report.imported.num_nodes));
  for (const PassStep& step : report.passes)
    std::printf("  %-22s %lld nodes\n", step.pass.c_str(),
                static_cast<long long>(step.nodes_after));
  std::printf("fused groups (%zu)\n", report.fused_groups.size());
  for (const std::string& line : report.fused_groups) std::printf("  %s\n", line.c_str());
}

// The plan for one input shape (CUDA, or the CPU with --plan): every step with its kernel or
// algorithm, the nodes that fall back to the CPU (with copies), conversions, and the memory.
int print_plan(const InspectOptions& o, const GlobalOptions& g,
               const std::vector<std::string>& fp32_values) {
  // With --shapes and --precision-overrides, and the fp16 range guard's values in fp32.
  auto engine_or = load_engine(o.model, g, fp32_values);
  if (!engine_or.is_ok()) return fail(engine_or.status());
  const Engine& e = **engine_or;
  // A CUDA engine runs passes of its own after the optimizer's (fuse_concat_affine,
  // fuse_squeeze_excite): its report, not the CPU engine's, says what its plan runs.
  if (o.passes && g.cuda()) print_passes(e.report(), " (the CUDA engine's)");
  print_quantization(e.report().quantization, e.options().precision);
  if (!e.report().fp32_kept.empty()) {
    std::printf("\nkept in fp32 (%zu)\n", e.report().fp32_kept.size());
    for (const std::string& line : e.report().fp32_kept) std::printf("  %s\n", line.c_str());
  }
  auto feeds = random_inputs(e, o.batch, {}, 1);
  if (!feeds.is_ok()) return usage_error(feeds.status().message());
  auto ctx = e.create_context();
  auto r = ctx->run(*feeds);
  if (!r.is_ok()) return fail(r.status());
  auto layers = ctx->profile_layers(3);
  if (!layers.is_ok()) return fail(layers.status());
  auto mem = ctx->device_memory();
  if (!mem.is_ok()) return fail(mem.status());
  int cpu = 0, converts = 0;
  double total = 0;
  for (const LayerProfile& l : *layers) {
    cpu += l.on_cpu;
    converts += l.op == "Convert";
    total += l.ms;
  }
  const bool cuda = g.cuda();
  if (cuda)
    std::printf(
        "\nCUDA plan (%s, batch %lld): %zu steps, %d on the CPU, %d layout/dtype "
        "conversions, %.4g ms summed (mean of 3 runs, one step at a time)\n",
        precision_name(e.options().precision), static_cast<long long>(o.batch > 0 ? o.batch : 1),
        layers->size(), cpu, converts, total);
  else
    std::printf("\nCPU plan (batch %lld): %zu steps, %.4g ms summed (mean of 3 runs)\n",
                static_cast<long long>(o.batch > 0 ? o.batch : 1), layers->size(), total);
  for (const LayerProfile& l : *layers)
    std::printf("  %-14s %-36s %8.4f ms  %s%s\n", l.op.c_str(), l.name.substr(0, 36).c_str(), l.ms,
                l.on_cpu && cuda ? "CPU fallback: " : "", l.tactic.c_str());
  if (cuda)
    std::printf(
        "device memory: activation arena %s (lower bound %s), workspace %s, weights %s; "
        "pinned host %s\n",
        human_bytes(mem->arena).c_str(), human_bytes(mem->arena_lower_bound).c_str(),
        human_bytes(mem->workspace).c_str(), human_bytes(mem->weights).c_str(),
        human_bytes(mem->pinned_host).c_str());
  else
    std::printf("memory: activation arena %s (lower bound %s), weights %s\n",
                human_bytes(mem->arena).c_str(), human_bytes(mem->arena_lower_bound).c_str(),
                human_bytes(mem->weights).c_str());
  for (const std::string& note : ctx->stats().notes) std::printf("note: %s\n", note.c_str());
  if (o.plan_steps) {
    auto plan = ctx->plan();
    if (!plan.is_ok()) return fail(plan.status());
    std::printf("\nplan steps (device, kind, op, name [tactic]: inputs -> outputs)\n%s",
                plan->text().c_str());
  }
  return kExitOk;
}

// --precision-report: every layer of the engine --precision asks for against fp32 on the
// same device, on held-aside calibration samples (--calib), else on random inputs (said).
int print_precision_report(const InspectOptions& o, const GlobalOptions& g,
                           const std::vector<std::string>& fp32_values) {
  if (g.engine.precision == Precision::kFp32)
    return usage_error(
        "--precision-report compares a reduced precision (--precision "
        "fp16|bf16|int8...) with fp32");
  auto reduced = load_engine(o.model, g, fp32_values);
  if (!reduced.is_ok()) return fail(reduced.status());
  EngineOptions fo = g.engine;
  fo.precision = Precision::kFp32;
  fo.precision_overrides.clear();
  fo.fp32_values.clear();
  auto fp32 = Engine::load(o.model, fo);
  if (!fp32.is_ok()) return fail(fp32.status());
  std::vector<std::map<std::string, Tensor>> samples;
  std::string what;
  if (!g.engine.calibration_data.empty()) {
    auto held = held_aside_samples(**fp32, g.engine, 4, &what);
    if (!held.is_ok()) return fail(held.status());
    samples = std::move(*held);
  } else {
    for (uint32_t seed : {1u, 2u}) {
      auto r = random_inputs(**fp32, o.batch > 0 ? o.batch : 1, {}, seed);
      if (!r.is_ok()) return usage_error(r.status().message());
      samples.push_back(std::move(*r));
    }
    what = "2 random inputs, not inputs like the real ones (give --calib DIR|FILE.npy)";
  }
  auto r = compare_precision(**reduced, **fp32, samples, o.max_layer_error);
  if (!r.is_ok()) return fail(r.status());
  int over = 0;
  for (const LayerError& l : r->layers) over += l.over_budget;
  std::printf(
      "\nprecision report: %s against fp32 on %d batches of %s; budget %g relative L2, "
      "%d of %zu values over it\n",
      r->precision.c_str(), r->samples, what.c_str(), r->max_layer_error, over, r->layers.size());
  std::printf("  %-36s %-20s %12s %10s\n", "value (node)", "op", "rel. L2", "cosine");
  for (const LayerError& l : r->layers)
    std::printf("  %-36s %-20s %12.3e %10.6f%s\n", (l.value + " (" + l.node + ")").c_str(),
                l.op.c_str(), l.relative_l2, l.cosine, l.over_budget ? "  OVER" : "");
  for (const LayerError& l : r->outputs)
    std::printf("  output %-29s %-20s %12.3e %10.6f%s\n", l.value.c_str(), "", l.relative_l2,
                l.cosine, l.over_budget ? "  OVER" : "");
  for (const std::string& line : r->lost) std::printf("  LOST: %s\n", line.c_str());
  return kExitOk;
}

int run(const InspectOptions& o, const GlobalOptions& g) {
  // A plan file holds an engine: its summary comes from that engine itself (loaded on the
  // device it was built for: --device must agree).
  const bool plan_file = is_plan_file(o.model);
  EngineOptions opts = g.engine;
  if (!plan_file) {
    opts.device = Device::kCpu;         // the CUDA plan is printed below
    opts.precision = Precision::kFp32;  // --precision: the CUDA plan's, and the fp16 range check
  }
  auto engine_or = Engine::load(o.model, opts);
  if (!engine_or.is_ok()) return fail(engine_or.status());
  const Engine& e = **engine_or;
  const EngineReport& report = e.report();
  const ModelStats& s = report.imported;

  std::printf("model       %s\n", o.model.c_str());
  if (!report.graph_name.empty()) std::printf("graph       %s\n", report.graph_name.c_str());
  std::printf("opset       %lld\n", static_cast<long long>(report.opset));
  print_tensors("inputs", e.inputs());
  print_tensors("outputs", e.outputs());
  std::printf("nodes       %lld\n", static_cast<long long>(s.num_nodes));
  std::printf("ops        ");
  // Most frequent first, then by name.
  std::vector<std::pair<std::string, int64_t>> ops(s.op_counts.begin(), s.op_counts.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [op, n] : ops) std::printf(" %s×%lld", op.c_str(), static_cast<long long>(n));
  std::printf("\n");
  std::printf("parameters  %s (%s)\n", human_count(s.num_parameters).c_str(),
              human_bytes(s.parameter_bytes).c_str());
  std::printf("GFLOPs      %.4g per image (Conv/ConvTranspose/Gemm/MatMul, multiply-add = 2)\n",
              s.flops_per_image / 1e9);
  if (!e.metadata().empty()) {
    std::printf("metadata\n");
    for (const auto& [k, v] : e.metadata()) std::printf("  %s = %s\n", k.c_str(), v.c_str());
  }
  if (o.graph && plan_file) return usage_error("--graph takes an .onnx model, not a plan file");
  if (o.graph) {
    // The graph as imported: an engine built without the optimizer.
    opts.optimize = false;
    auto imported = Engine::load(o.model, opts);
    if (!imported.is_ok()) return fail(imported.status());
    std::printf("\n%s", (*imported)->graph_text().c_str());
  }
  if (o.passes && !g.cuda()) print_passes(report, "");
  std::vector<std::string> fp32_values;
  if (g.engine.precision == Precision::kFp16 && !plan_file) {
    std::printf("\n");
    fp32_values = print_fp16_range(o.model, g, o.batch > 0 ? o.batch : 1, {}, true);
    if (g.no_fp16_fallback) fp32_values.clear();
  }
  if (g.cuda() || o.plan || o.plan_steps) {
    const int code = print_plan(o, g, fp32_values);
    if (code != kExitOk || !o.precision_report) return code;
  }
  if (o.precision_report) return print_precision_report(o, g, fp32_values);
  return kExitOk;
}

}  // namespace

Command add_inspect_command(CLI::App& root, const GlobalOptions& global) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* app = root.add_subcommand("inspect", "describe a model: I/O, ops, parameters, FLOPs");
  app->add_option("model", o->model, "the .onnx model")->required();
  app->add_flag("--graph", o->graph, "also print the imported graph (kiln IR), one node a line");
  app->add_flag("--passes", o->passes,
                "also print the node count after each optimizer pass and the fused groups "
                "(with --device cuda: the CUDA engine's, whose own passes run after the "
                "optimizer's)");
  app->add_flag("--plan", o->plan,
                "also print the plan for one input shape: every step, its kernel and time "
                "(always with --device cuda)");
  app->add_flag("--plan-steps", o->plan_steps,
                "also print the plan as data: every step's device and kernel, and each "
                "operand's dtype, shape, layout and place in the arena");
  app->add_flag("--precision-report", o->precision_report,
                "every layer of the --precision engine against fp32 (relative L2, cosine), on "
                "held-aside --calib samples, else random inputs");
  app->add_option("--max-layer-error", o->max_layer_error,
                  "--precision-report: the relative L2 error a layer may reach (default 0.01)")
      ->check(CLI::PositiveNumber);
  app->add_option("-b,--batch", o->batch, "the batch size of the plan to print (default 1)")
      ->check(CLI::PositiveNumber);
  return {app, [o, &global] { return run(*o, global); }};
}

}  // namespace kiln::cli
