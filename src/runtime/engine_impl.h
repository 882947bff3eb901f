// Engine::Impl and Context::Impl: what an Engine holds and what a Context owns.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/device.h"
#include "ir/graph.h"
#include "kiln/engine.h"
#include "quant/calibration_cache.h"
#include "runtime/plan.h"

namespace kiln {

class ContextPlans;
class RunObserver;

struct Engine::Impl {
  std::unique_ptr<Graph> graph;
  EngineReport report;
  // The options the engine plans with: the caller's, the precision overrides resolved, and for
  // an int8 engine the float precision its other layers compute in (fp16 on CUDA, fp32 on the
  // CPU). `asked` is what Engine::options() gives and plan files record: the same with the
  // caller's precision.
  EngineOptions options;
  EngineOptions asked;
  // An int8 engine's magnitudes, which plan files and for_gpu() build from again.
  std::shared_ptr<const quant::CalibrationTable> calibration;
  // The 8-bit values' scales (each QuantizeLinear's output with a constant scale and zero
  // point), which the plans record with their slots.
  std::map<std::string, QuantScale> value_scales;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  std::map<std::string, std::string> metadata;  // the model's metadata_props
  // The shape profiles planned at build: options.shape_profiles, then the opt shapes of
  // options.shape_ranges as one more.
  std::vector<std::map<std::string, std::vector<int64_t>>> profiles;
  std::vector<const Node*> order;  // execution order
  // The states of the main device's backends (oneDNN's caches: layouts, conv choices), this
  // engine's alone, given to the kernels they make.
  BackendStates states;
  // For each value id: index in `order` of its last reader, or -1 (never read by a node).
  std::vector<int> last_use;
  std::vector<bool> is_graph_output;  // by value id
  // What the engine keeps on its device (uploaded constants, timing cache), shared by its
  // Contexts; and for CUDA engines the ONNX bytes (for plan files).
  std::shared_ptr<EngineDevice> device;
  std::string model_bytes;
  std::string model_dir = ".";  // where the model's external data files lie (for_gpu)
};

struct Context::Impl {
  const Engine::Impl* engine = nullptr;
  std::unique_ptr<ContextPlans> plans;  // plans by input key, on the engine's device
  RunObserver* observer = nullptr;      // while value_stats() runs
  // Planning the profiles at create_context() failed (out of memory): the first run returns
  // it, and plans its shapes again.
  Status unplanned = Status::ok();
  ~Impl();
};

inline const Engine::Impl& engine_impl(const Engine& e) { return *e.impl_; }
inline Engine::Impl& engine_impl(Engine& e) { return *e.impl_; }
inline Context::Impl& context_impl(Context& c) { return *c.impl_; }

// The inputs of the engine's shape profile `k` (Engine::Impl::profiles); an error names the
// profile and what is wrong with it.
Result<std::vector<TensorDesc>> profile_descs(const Engine::Impl& e, size_t k);
// Plans every shape profile of the engine on `ctx` (built without running, and cached), and
// gives their plans in `plans` where asked.
Status plan_profiles(const Engine::Impl& e, Context& ctx, std::vector<PlanInfo>* plans);

// Op counts, parameters and FLOPs per image of `g` (Engine::stats of its graph).
ModelStats model_stats(const Graph& g);

// Builds the engine's execution state from an imported graph (choose a backend per node,
// compute value lifetimes). Used by Engine::load and the tests.
// `tactics` pre-fill a CUDA engine's timing cache (from a plan file or another GPU's engine);
// `model_bytes`, the ONNX file, and `model_dir`, where its external data lies, are kept by
// CUDA engines for save_plan() and for_gpu(). An int8 engine takes its magnitudes from
// `calibration` where given (a plan file's, another GPU's engine's), else calibrates
// (runtime/int8_build.h), which needs the model bytes.
Result<std::shared_ptr<Engine>> build_engine(
    std::unique_ptr<Graph> graph, const EngineOptions& options,
    const std::vector<std::pair<std::string, std::string>>& tactics = {},
    std::string model_bytes = {}, std::string model_dir = ".",
    std::shared_ptr<const quant::CalibrationTable> calibration = nullptr);

}  // namespace kiln
