// The CPU executor: plans built once per input shape, cached by each Context, and run with no
// shape inference, no kernel prepare and no allocation besides the caller's outputs.
//
// A plan's key is the inputs' dtypes and shapes plus the bytes of every input of at most
// kKeyedInputElements elements (a value shapes may be computed from). A plan is the runtime's
// (runtime/plan.h) built for the host: the engine's kernel for each node (oneDNN or the
// reference), shape arithmetic computed from the key evaluated at build, the values in one
// activation arena that all plans of the Context share (sized for the largest). A run copies
// the inputs into their slots, runs the steps and copies the outputs into fresh tensors the
// caller keeps.
//
// A graph whose output shapes follow values computed from the inputs' data (a shape, pads or
// scales taken from the data) cannot be planned ahead: its plan is built by running the graph
// once on the first inputs of its key, node by node, and a step that reads such a value is
// "dynamic": it infers its output shapes and prepares its kernel again on every run (a
// comparison when nothing changed). Where its shapes differ from the plan's, the plan does
// not fit the run: it is dropped and built afresh.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/engine.h"
#include "kiln/status.h"
#include "kiln/tensor.h"
#include "runtime/plan.h"

namespace kiln {

struct CpuPlan;

// What a run reports besides its outputs (profiling and range statistics), or nullptr.
struct CpuRunHooks {
  std::vector<double>* node_seconds = nullptr;  // per node in the engine's order, added to
  std::vector<ValueStats>* value_stats = nullptr;
};

// Graph inputs of an integer or bool dtype with at most kKeyedInputElements elements
// (runtime/plan.h) are part of a plan's key (shapes, axes, pads given as inputs): values
// computed from them alone are fixed in the plan.
inline bool is_keyed_input(const Tensor& t) {
  return t.numel() <= kKeyedInputElements && !dtype_is_float(t.dtype());
}

// The plans of one Context and the arena they share (sized for the largest).
class CpuPlanCache {
 public:
  explicit CpuPlanCache(const Engine::Impl& engine);
  ~CpuPlanCache();
  CpuPlanCache(const CpuPlanCache&) = delete;
  CpuPlanCache& operator=(const CpuPlanCache&) = delete;

  // Runs the engine on `inputs` (one per graph input, in order, already checked against the
  // declared types), through the cached plan of their key or a new one; `outputs` gets one
  // tensor per graph output.
  Status run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs,
             const CpuRunHooks& hooks);

  const ContextStats& stats() const { return stats_; }
  // The activation bytes the most recently used plan needs at its peak (0 before a run).
  int64_t last_plan_lower_bound() const;
  // The most recently used plan as data; an error before a run.
  Result<PlanInfo> last_plan_info() const;
  // What each step of the most recently used plan runs, in the engine's node order: its
  // kernel's tactic() ("onednn brgconv:avx512_core", "reference (...)"), "view" for a step
  // planned over its input's bytes; empty before a run or where the kernel says nothing.
  std::vector<std::string> last_plan_tactics() const;

 private:
  struct Entry;
  // Builds the plan of `key` by running `inputs` through fresh kernels, and caches it.
  Status build(const std::string& key, const std::vector<const Tensor*>& inputs,
               std::vector<Tensor>& outputs, const CpuRunHooks& hooks);
  // Runs `inputs` through `p`; *fits = false (and nothing else done) when a dynamic step's
  // shapes differ from the plan's.
  Status run_plan(CpuPlan& p, const std::vector<const Tensor*>& inputs,
                  std::vector<Tensor>& outputs, const CpuRunHooks& hooks, bool* fits);
  // Makes the arena at least `bytes` long and the workspace at least `workspace`, binding
  // every cached plan to them.
  Status reserve_arena(int64_t bytes, int64_t workspace = 0);

  // The plan of `key` through build_plan, or nullptr (and ok) where the graph's shapes follow
  // the data.
  Result<std::unique_ptr<Plan>> build_static(const std::vector<const Tensor*>& inputs);
  Status run_static(Plan& p, const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs,
                    const CpuRunHooks& hooks);
  // Adds a built plan (static or dynamic) to the cache, most recent first.
  void cache(const std::string& key, std::unique_ptr<Plan> plan, std::unique_ptr<CpuPlan> dynamic);
  void bind(Entry& entry);

  const Engine::Impl& e_;
  std::unique_ptr<PlanDevice> host_;
  PlanDevices devices_;
  std::vector<std::unique_ptr<Entry>> plans_;  // most recently used first
  Tensor arena_;                               // uint8 [bytes]
  Tensor workspace_;                           // uint8, the largest a plan's kernels need
  std::vector<const void*> in_data_;           // run_static's input and output pointers
  std::vector<void*> out_data_;
  ContextStats stats_;
};

}  // namespace kiln
