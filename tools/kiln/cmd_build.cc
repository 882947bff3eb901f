// `kiln build MODEL.onnx [--device cuda] [--precision P] [--batch N] -o MODEL.kiln`: build an
// engine, time every layer's candidate algorithms (on the CPU oneDNN's convs and layouts) on the
// given input shapes, and write a plan file that `kiln run` / `kiln bench` load without timing
// anything again. A CPU plan records the instruction sets it was built for (AVX2, AVX-512...).
// An int8 build (--precision int8) calibrates on --calib (or reads --calib-cache), writing the
// calibration beside the plan (OUTPUT.calib) unless --calib-cache names a file; the plan file
// keeps the scales. --max-layer-error keeps the layers that lose too much, measured, at a higher
// precision (kiln/precision_report.h); the plan file records them as precision overrides.
// --precision best is 8-bit (fp8 on CUDA, int8 on the CPU) with that fallback at
// kBestMaxLayerError unless --max-layer-error says otherwise.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "cli_common.h"
#include "kiln/calibration.h"
#include "kiln/precision_report.h"

namespace kiln::cli {

namespace {

// --precision best's error budget per layer (relative L2 against fp32 on held-aside --calib
// samples), unless --max-layer-error gives one.
constexpr double kBestMaxLayerError = 0.05;

struct BuildOptions {
  std::string model;
  std::string output;
  int64_t batch = 0;
  std::vector<std::string> shapes;
  double max_layer_error = 0;  // 0: no fallback by measured error
};

// The graph outputs' error: the largest relative L2 over them (infinite where one is lost).
double output_error(const PrecisionReport& r) {
  if (!r.lost.empty()) return std::numeric_limits<double>::infinity();
  double worst = 0;
  for (const LayerError& l : r.outputs) worst = std::max(worst, l.relative_l2);
  return worst;
}

// --precision best without --calib-method (and no --calib-cache to read): one calibration
// gives every method its scales (calibrate_methods; fp8 has no entropy of its own), each
// method's engine is compared with fp32 on held-aside samples, and the method whose graph
// outputs come closest is kept, its cache written where the build reads it.
Status choose_calibration_method(const BuildOptions& o, GlobalOptions& g,
                                 const std::vector<std::string>& fp32_values) {
  EngineOptions& eo = g.engine;
  if (eo.calibration_data.empty())
    return invalid_argument(
        "--precision best measures on samples like the real inputs: give --calib DIR|FILE.npy");
  KILN_ASSIGN_OR_RETURN(auto fp32, Engine::load(o.model, calibration_engine_options(eo)));
  KILN_ASSIGN_OR_RETURN(auto source, open_calibration_data(eo.calibration_data, *fp32));
  const std::vector<std::string> methods =
      eo.precision == Precision::kFp8 ? std::vector<std::string>{"minmax", "percentile"}
                                      : std::vector<std::string>{"entropy", "minmax", "percentile"};
  KILN_ASSIGN_OR_RETURN(std::vector<CalibrationResult> results,
                        calibrate_methods(*fp32, *source, eo, methods, print_calibration_progress));
  std::string what;
  KILN_ASSIGN_OR_RETURN(auto samples, held_aside_samples(*fp32, eo, 4, &what));
  std::string line;
  size_t chosen = 0;
  double least = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < results.size(); ++i) {
    EngineOptions trial = eo;
    trial.calibration_method = results[i].method;
    trial.calibration_cache = eo.calibration_cache + ".trial";
    trial.fp32_values.insert(trial.fp32_values.end(), fp32_values.begin(), fp32_values.end());
    KILN_RETURN_IF_ERROR(save_calibration(*fp32, trial, results[i]));
    auto engine = Engine::load(o.model, trial);
    std::remove(trial.calibration_cache.c_str());
    if (!engine.is_ok()) return engine.status();
    KILN_ASSIGN_OR_RETURN(PrecisionReport r, compare_precision(**engine, *fp32, samples));
    const double error = output_error(r);
    char text[64];
    std::snprintf(text, sizeof text, "%s%s %.2e", line.empty() ? "" : ", ",
                  results[i].method.c_str(), error);
    line += text;
    if (error < least) {
      least = error;
      chosen = i;
    }
  }
  eo.calibration_method = results[chosen].method;
  KILN_RETURN_IF_ERROR(save_calibration(*fp32, eo, results[chosen]));
  std::fprintf(stderr,
               "kiln: --precision best: the outputs' error against fp32 on %zu batches of %s, by "
               "calibration method: %s; %s kept (--calib-method chooses one)\n",
               samples.size(), what.c_str(), line.c_str(), eo.calibration_method.c_str());
  return Status::ok();
}

// --max-layer-error: the layers to keep at a higher precision so that none is further than the
// budget from fp32 on held-aside --calib samples (keep_layers_within_error), as overrides.
Status keep_within_error(const BuildOptions& o, GlobalOptions& g,
                         const std::vector<std::string>& fp32_values) {
  EngineOptions& eo = g.engine;
  if (eo.precision == Precision::kFp32 || eo.precision == Precision::kTf32)
    return invalid_argument(
        "--max-layer-error keeps layers of a reduced precision (--precision "
        "fp16|bf16|int8) in a higher one");
  if (eo.calibration_data.empty())
    return invalid_argument(
        std::string(g.best_precision ? "--precision best" : "--max-layer-error") +
        " measures on samples like the real inputs: give --calib DIR|FILE.npy");
  KILN_ASSIGN_OR_RETURN(auto fp32, Engine::load(o.model, calibration_engine_options(eo)));
  std::string what;
  KILN_ASSIGN_OR_RETURN(auto samples, held_aside_samples(*fp32, eo, 4, &what));
  EngineOptions reduced = eo;
  reduced.fp32_values.insert(reduced.fp32_values.end(), fp32_values.begin(), fp32_values.end());
  KILN_ASSIGN_OR_RETURN(ErrorFallback f, keep_layers_within_error(o.model, reduced, *fp32, samples,
                                                                  o.max_layer_error));
  int over = 0;
  double worst = 0;
  for (const LayerError& l : f.report.layers) {
    over += l.over_budget;
    worst = std::max(worst, l.relative_l2);
  }
  const std::string label = g.best_precision ? std::string("--precision best (") +
                                                   precision_name(eo.precision) + ", budget"
                                             : std::string("--max-layer-error");
  std::fprintf(stderr,
               "kiln: %s %g%s on %d batches of %s: %zu layers kept in a higher "
               "precision in %d rounds; %d of %zu values still over budget (worst %.2e); the "
               "outputs %.2e from fp32\n",
               label.c_str(), o.max_layer_error, g.best_precision ? ")" : "", f.report.samples,
               what.c_str(), f.kept.size(), f.rounds, over, f.report.layers.size(), worst,
               output_error(f.report));
  for (const std::string& line : f.kept) std::fprintf(stderr, "kiln:   kept %s\n", line.c_str());
  eo.precision_overrides = f.overrides;
  return Status::ok();
}

int run(BuildOptions o, GlobalOptions g) {
  double t0 = now_seconds();
  if (g.best_precision && o.max_layer_error == 0) o.max_layer_error = kBestMaxLayerError;
  // An int8 build calibrates once: into OUTPUT.calib unless a cache is named, which the
  // second load below (and a later build) reads. A stale one from an earlier build goes first.
  EngineOptions& eo = g.engine;
  if (precision_is_8bit(eo.precision) && eo.calibration_cache.empty() &&
      !eo.calibration_data.empty()) {
    eo.calibration_cache = o.output + ".calib";
    std::remove(eo.calibration_cache.c_str());
  }
  // The guard's values are kept in fp32 as overrides, which the plan file records.
  const std::vector<std::string> fp32_values = fp16_guard(o.model, g, o.batch, o.shapes);
  if (o.max_layer_error > 0) {
    if (precision_is_8bit(eo.precision)) {
      if (g.best_precision && !g.calibration_method_given &&
          !std::filesystem::exists(eo.calibration_cache)) {
        Status chosen = choose_calibration_method(o, g, fp32_values);
        if (chosen.code() == StatusCode::kInvalidArgument) return usage_error(chosen.message());
        if (!chosen.is_ok()) return fail(chosen);
      }
      // Every round's engine reads the one calibration.
      Status calibrated = calibrate_first(o.model, eo);
      if (!calibrated.is_ok()) return fail(calibrated);
    }
    Status kept = keep_within_error(o, g, fp32_values);
    if (kept.code() == StatusCode::kInvalidArgument) return usage_error(kept.message());
    if (!kept.is_ok()) return fail(kept);
  }
  // Without shape profiles the input shapes to tune for come from a first load, in fp32: it
  // only imports (no profile, no plan), and calibrates nothing.
  const bool profiled = !g.engine.shape_profiles.empty();
  auto engine_or = load_engine(o.model, g, fp32_values, [profiled](EngineOptions& e) {
    if (!profiled) e = calibration_engine_options(e);
  });
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
  std::printf("wrote %s (%s): %s %.2f s, %s %.2f s", o.output.c_str(),
              precision_name(e.options().precision),
              profiled ? "import + passes" : "reading the input shapes", t_load - t0,
              profiled ? "kernels + tactic timing"
                       : "the build (import, passes, kernels, tactic "
                         "timing)",
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
  app->add_option("--max-layer-error", o->max_layer_error,
                  "keep the layers where a reduced precision's error (relative L2 against fp32 "
                  "on held-aside --calib samples) exceeds this at a higher precision, by "
                  "measured error (e.g. 0.05)")
      ->check(CLI::PositiveNumber);
  return {app, [o, &global] { return run(*o, global); }};
}

}  // namespace kiln::cli
