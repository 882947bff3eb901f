// `kiln inspect MODEL [--graph] [--passes]`: what a model takes and gives, what it is made
// of and how much it costs (op counts, parameters, FLOPs per image), with --graph the kiln
// IR, with --passes what the graph optimizer does to it. The description is of the model
// as imported (optimize off), so it matches the .onnx file the user knows.
#include <cstdio>
#include <vector>

#include "ir/graph.h"  // print_graph: the IR dump is what --graph promises
#include "kiln/cli_common.h"
#include "onnx/importer.h"
#include "passes/pass.h"

namespace kiln::cli {

namespace {

struct InspectOptions {
  std::string model;
  bool graph = false;
  bool passes = false;
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

// Node counts after each pass and the fused groups, on a fresh import of the model.
int print_passes(const std::string& model) {
  auto graph = import_onnx_file(model);
  if (!graph.is_ok()) return fail(graph.status());
  PassReport report;
  Status s = optimize_graph(**graph, &report);
  if (!s.is_ok()) return fail(s.with_context(model));
  std::printf("\npasses\n  %-22s %lld nodes\n", "imported",
              static_cast<long long>(report.nodes_before));
  for (const auto& step : report.steps)
    std::printf("  %-22s %lld nodes\n", step.pass.c_str(),
                static_cast<long long>(step.nodes_after));
  std::printf("fused groups (%zu)\n", report.fused_groups.size());
  for (const std::string& line : report.fused_groups) std::printf("  %s\n", line.c_str());
  return kExitOk;
}

int run(const InspectOptions& o, const GlobalOptions& g) {
  EngineOptions opts = engine_options(g);
  opts.optimize = false;
  auto engine_or = Engine::load(o.model, opts);
  if (!engine_or.is_ok()) return fail(engine_or.status());
  const Engine& e = **engine_or;
  const Graph& graph = e.graph();
  ModelStats s = e.stats();

  std::printf("model       %s\n", o.model.c_str());
  if (!graph.name.empty()) std::printf("graph       %s\n", graph.name.c_str());
  std::printf("opset       %lld\n", static_cast<long long>(graph.opset));
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
  if (o.graph) std::printf("\n%s", print_graph(graph).c_str());
  if (o.passes) return print_passes(o.model);
  return kExitOk;
}

}  // namespace

Command add_inspect_command(CLI::App& root, const GlobalOptions& global) {
  auto o = std::make_shared<InspectOptions>();
  CLI::App* app = root.add_subcommand("inspect", "describe a model: I/O, ops, parameters, FLOPs");
  app->add_option("model", o->model, "the .onnx model")->required();
  app->add_flag("--graph", o->graph, "also print the imported graph (kiln IR), one node a line");
  app->add_flag("--passes", o->passes,
                "also print the node count after each optimizer pass and the fused groups");
  return {app, [o, &global] { return run(*o, global); }};
}

}  // namespace kiln::cli
