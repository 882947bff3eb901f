// A host plan built by running: for a graph whose output shapes follow values computed from
// the inputs' data (a shape, pads or scales taken from the data), which build_plan cannot plan
// ahead. It is built by running the graph once on the first inputs of its key, node by node,
// and a step that reads such a value is "dynamic": it infers its output shapes and prepares
// its kernel again on every run (a comparison when nothing changed). Where its shapes differ
// from the plan's, the plan does not fit the run, and the Context builds it afresh.
//
// The Context (runtime/context_plans.h) caches these beside the plans of runtime/plan.h; the
// segmented planner replaces them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/engine.h"
#include "kiln/status.h"
#include "kiln/tensor.h"
#include "runtime/plan.h"

namespace kiln {

struct RunningPlanState;

// Sees every value a run computes, on its device, before its memory is reused.
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // Output `i` of `node`: `ref` in `device`'s memory (host memory where the device computes
  // there).
  virtual Status observe(const Node& node, size_t i, const TensorRef& ref,
                         ContextDevice& device) = 0;
};

// What a run of a plan built by running reports besides its outputs, or nullptr.
struct RunningHooks {
  std::vector<double>* node_seconds = nullptr;  // per node in the engine's order, added to
  RunObserver* observer = nullptr;
  ContextDevice* device = nullptr;  // the observer's
};

class RunningPlan {
 public:
  // Builds the plan by running `inputs` (graph order) through fresh kernels of the engine's
  // host backends; `outputs` gets the run's outputs.
  static Result<std::unique_ptr<RunningPlan>> build(const Engine::Impl& engine,
                                                    const std::vector<const Tensor*>& inputs,
                                                    std::vector<Tensor>& outputs,
                                                    const RunningHooks& hooks);
  ~RunningPlan();
  // Runs `inputs`; *fits = false (and nothing else done) when a dynamic step's shapes differ
  // from the plan's.
  Status run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs,
             const RunningHooks& hooks, bool* fits);
  int64_t arena_bytes() const;
  int64_t arena_lower_bound() const;
  // Per node in the engine's order: its kernel's tactic, "view" for a step planned over its
  // input's bytes.
  std::vector<std::string> tactics() const;

 private:
  explicit RunningPlan(std::unique_ptr<RunningPlanState> state);
  // With the registry's first candidate per node (the reference kernels alone with
  // `reference_only`); *declined (and nothing built) where a kernel declines at prepare.
  static Result<std::unique_ptr<RunningPlan>> build_with(const Engine::Impl& engine,
                                                         const std::vector<const Tensor*>& inputs,
                                                         std::vector<Tensor>& outputs,
                                                         const RunningHooks& hooks,
                                                         bool reference_only, bool* declined);
  std::unique_ptr<RunningPlanState> s_;
};

}  // namespace kiln
