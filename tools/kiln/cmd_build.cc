// `kiln build MODEL.onnx [--device cuda] [--precision P] [--batch N] -o MODEL.kiln`: build an
// engine, time every layer's candidate algorithms (on the CPU oneDNN's convs and layouts) on the
// given input shapes, and write a plan file that `kiln run` / `kiln bench` load without timing
// anything again. A CPU plan records the instruction sets it was built for (AVX2, AVX-512...).
// An int8 build (--precision int8) calibrates on --calib (or reads --calib-cache), writing the
// calibration beside the plan (OUTPUT.calib) unless --calib-cache names a file; the plan file
// keeps the scales.
#include <cstdio>

#include "cli_common.h"

namespace kiln::cli {

namespace {

struct BuildOptions {
  std::string model;
  std::string output;
  int64_t batch = 0;
  std::vector<std::string> shapes;
};

int run(const BuildOptions& o, GlobalOptions g) {
  double t0 = now_seconds();
  // An int8 build calibrates once: into OUTPUT.calib unless a cache is named, which the
  // second load below (and a later build) reads. A stale one from an earlier build goes first.
  EngineOptions& eo = g.engine;
  if (eo.precision == Precision::kInt8 && eo.calibration_cache.empty() &&
      !eo.calibration_data.empty()) {
    eo.calibration_cache = o.output + ".calib";
    std::remove(eo.calibration_cache.c_str());
  }
  // The guard's values are kept in fp32 as overrides, which the plan file records.
  const std::vector<std::string> fp32_values = fp16_guard(o.model, g, o.batch, o.shapes);
  auto engine_or = load_engine(o.model, g, fp32_values);
  if (!engine_or.is_ok()) return fail(engine_or.status());
  const double t_load = now_seconds();
  auto feeds = random_inputs(**engine_or, o.batch, o.shapes, 1);
  if (!feeds.is_ok())
    return feeds.status().code() == StatusCode::kInvalidArgument
               ? usage_error(feeds.status().message())
               : fail(feeds.status());
  if (g.engine.shape_profiles.empty()) {
    // The shapes to tune for become the engine's shape profile: its plan is built with the
    // engine (every layer's tactic timed), and the plan file records it.
    GlobalOptions with_profile = g;
    std::map<std::string, std::vector<int64_t>> profile;
    for (const auto& [name, t] : *feeds) profile[name] = t.shape();
    with_profile.engine.shape_profiles = {profile};
    engine_or = load_engine(o.model, with_profile, fp32_values);
    if (!engine_or.is_ok()) return fail(engine_or.status());
  }
  const Engine& e = **engine_or;
  // The profiles' plans are built; this run goes through the one of these shapes.
  auto ctx = e.create_context();
  auto r = ctx->run(*feeds);
  if (!r.is_ok()) return fail(r.status());
  double t_plan = now_seconds();
  Status saved = e.save_plan(o.output);
  if (!saved.is_ok()) return fail(saved);
  auto mem = ctx->device_memory();
  std::printf("wrote %s (%s): import + passes %.2f s, kernels + tactic timing %.2f s",
              o.output.c_str(), precision_name(e.options().precision), t_load - t0,
              t_plan - t_load);
  if (mem.is_ok())
    std::printf(", activation arena %.1f MiB, weights %.1f MiB", mem->arena / 1048576.0,
                mem->weights / 1048576.0);
  std::printf("\n");
  return kExitOk;
}

}  // namespace

Command add_build_command(CLI::App& root, const GlobalOptions& global) {
  auto o = std::make_shared<BuildOptions>();
  CLI::App* app = root.add_subcommand(
      "build", "build an engine (CPU or CUDA) and write it as a plan file (.kiln)");
  app->add_option("model", o->model, "the .onnx model")->required();
  app->add_option("-o,--output", o->output, "the plan file to write")->required();
  app->add_option("-b,--batch", o->batch, "batch size to tune for (a symbolic batch dimension)")
      ->check(CLI::PositiveNumber);
  app->add_option("--shape", o->shapes, "NAME=1x3x224x224: an input's shape to tune for")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  return {app, [o, &global] { return run(*o, global); }};
}

}  // namespace kiln::cli
