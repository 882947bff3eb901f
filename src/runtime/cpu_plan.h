// The CPU executor: plans built once per input shape, cached by each Context, and run with no
// shape inference, no kernel prepare and no allocation besides the caller's outputs.
//
// A plan is built by running the graph once on the first inputs of its key, node by node: a
// fresh kernel per node (from the node's backend) prepares for the shapes it meets and writes
// freshly allocated outputs. What that run saw becomes the plan: each value's dtype and shape,
// and an offset in one activation arena (planner/arena_planner.h) from the values' lifetimes.
// Later runs with the same key go through the plan: the kernels execute on views of the arena.
// Graph outputs are fresh tensors the caller keeps.
//
// A plan's key is the inputs' dtypes and shapes plus the bytes of every input of at most
// kKeyedInputElements elements (a value shapes may be computed from). Everything computed from
// the key alone (shape arithmetic: Shape → Gather → Concat → Reshape) is then fixed in the
// plan. A step that also reads a small or integer value computed from the inputs' data (a
// shape, pads or scales taken from the data) is "dynamic": it infers its output shapes and
// prepares its kernel again on every run (a comparison when nothing changed). Where its shapes
// differ from the plan's, the plan does not fit the run: it is dropped and built afresh.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/engine.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

struct CpuPlan;

// What a run reports besides its outputs (profiling and range statistics), or nullptr.
struct CpuRunHooks {
  std::vector<double>* node_seconds = nullptr;  // per node in the engine's order, added to
  std::vector<ValueStats>* value_stats = nullptr;
};

// Graph inputs with at most this many elements are part of a plan's key.
inline constexpr int64_t kKeyedInputElements = 16;

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
  // Makes the arena at least `bytes` long, binding every cached plan to it.
  Status reserve_arena(int64_t bytes);

  const Engine::Impl& e_;
  std::vector<std::unique_ptr<Entry>> plans_;  // most recently used first
  Tensor arena_;                               // uint8 [bytes]
  ContextStats stats_;
};

}  // namespace kiln
