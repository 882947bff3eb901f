// A Pipeline runs requests on several Contexts of one Engine at once: each Context has its
// own stream (on CUDA) and its own plans, and the weights are the Engine's, shared.
//
//   auto pipeline = kiln::Pipeline::create(engine, {.contexts = 4});
//   std::future<kiln::Result<kiln::Outputs>> f = (*pipeline)->submit({{"input", tensor}});
//   auto outputs = f.get();
//
// submit() is safe from many threads. Requests are taken in the order they were submitted, by
// whichever Context is free; every request gets its own result (outputs or an error that
// names what was wrong with it), exactly once. A request that fails leaves the others running.
// A GPU that fails (StatusCode::kUnavailable) fails the requests running on it and retires its
// Contexts; the other GPUs' Contexts go on with the queue. Once none is left, every request
// waiting or submitted later fails at once with kUnavailable.
// At most `max_queued` requests wait; submit() then blocks until one is taken, while
// try_submit() refuses at once (kUnavailable: a server answers 503) and queues nothing. A
// request still waiting can be cancelled. Destroying the Pipeline finishes every request
// already submitted.
#pragma once

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <string>

#include "kiln/engine.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

using Outputs = std::map<std::string, Tensor>;

struct PipelineOptions {
  int contexts = 2;         // Contexts (CUDA streams) running requests at once
  size_t max_queued = 256;  // requests waiting before submit() blocks
  // CUDA, several Contexts on a GPU: kOrdered runs their computes one at a time, in the order
  // their runs reach it, while the copies of the others overlap it (a run's copies in, its
  // compute, its copies out; the compute waits for the one before it). kConcurrent lets the
  // streams' computes share the GPU at once (their kernels fill each other's tails, and
  // contend). kTimed: warm_up() times both and keeps the faster (ordered until then). No
  // effect on CPU engines.
  enum class ComputeOrder { kTimed, kOrdered, kConcurrent };
  ComputeOrder compute_order = ComputeOrder::kTimed;
  // kTimed: the least length of one timing round, each way, in seconds.
  double order_round_seconds = 0.3;
};

// What warm_up() measured to choose the compute order (PipelineOptions::kTimed): requests per
// second, the median of its rounds each way; zero where nothing was timed.
struct ComputeOrderTiming {
  double ordered_per_s = 0, concurrent_per_s = 0;
  int rounds = 0;  // each way
};

// What a Pipeline has done so far.
struct PipelineStats {
  int64_t submitted = 0;
  int64_t completed = 0;  // results given, errors included
  int64_t failed = 0;     // of completed: results that are errors (cancelled ones included)
  int64_t cancelled = 0;  // of failed: cancelled before they ran (cancel())
  int64_t refused = 0;    // try_submit() calls refused for a full queue (not submitted)
  std::vector<int64_t> per_context;  // requests each Context ran
  // Plans the Contexts have built (ContextStats::plan_builds, summed): their shape profiles'
  // at creation, then one per input shape outside them (or dropped) as requests bring it. A
  // count that grows while serving fixed shapes says requests waited for plan builds.
  int64_t plan_builds = 0;
  // Summed over the completed requests, from each run's device timing (Context::
  // last_device_timing): on CUDA the GPU's copies in, compute, copies out, and the compute's
  // wait for another Context's (the compute order); on the CPU the whole run as compute.
  double upload_ms = 0, compute_ms = 0, download_ms = 0, wait_ms = 0;
  // Per Context: the device failure that retired it (StatusCode::kUnavailable, for example a
  // GPU that faulted), empty while it runs.
  std::vector<std::string> retired;
};

class Pipeline {
 public:
  // The Engine must outlive the Pipeline; its Contexts are created (with the shape profiles'
  // plans) before this returns.
  static Result<std::unique_ptr<Pipeline>> create(std::shared_ptr<const Engine> engine,
                                                  const PipelineOptions& options);
  // Contexts spread over several Engines of one model, one per GPU (kiln bench --gpus 0,1):
  // Context k belongs to engines[k % engines.size()], all fed from the one queue. The Engines
  // must take the same inputs. An Engine listed twice gets Contexts of its own in turn.
  static Result<std::unique_ptr<Pipeline>> create(
      const std::vector<std::shared_ptr<const Engine>>& engines, const PipelineOptions& options);
  // The GPU (EngineOptions::device_index) of Context k; -1 on the CPU.
  int context_device(int k) const;
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Runs `inputs` `runs` times on each Context in turn, from the calling thread, before any
  // request is submitted: each Context builds its plan for these shapes (on CUDA the first
  // run builds it, the second captures its CUDA graph) one after the other rather than all at
  // once. Then, with ComputeOrder::kTimed and a GPU holding several Contexts, it runs
  // alternating rounds of `inputs` through the queue ordered and concurrent (3 each, every
  // round at least 4 requests per Context and order_round_seconds) and keeps the faster order.
  // A round's rate is taken in its steady state: from the completion of its first request per
  // Context to that of its last, the drain included, so that neither order's filling or
  // draining (one burst of completions in concurrent order) counts. An error once a request
  // was submitted.
  Status warm_up(const Outputs& inputs, int runs = 2);
  // CUDA: whether the computes are ordered now (see PipelineOptions::compute_order), and what
  // warm_up() measured to choose.
  bool compute_ordered() const;
  ComputeOrderTiming compute_order_timing() const;
  std::future<Result<Outputs>> submit(Outputs inputs);
  // As submit(), and where the request runs, `timing` receives its device timing (the Context's
  // last_device_timing: copies in, compute, copies out, the compute order's wait) before the
  // result is given. `timing` must stay alive until then; a request that fails leaves it as it
  // was.
  std::future<Result<Outputs>> submit(Outputs inputs, DeviceTiming* timing);
  // A request try_submit() admitted: its id (for cancel()) and its result to come.
  struct Submitted {
    uint64_t id = 0;
    std::future<Result<Outputs>> result;
  };
  // As submit(), but it never waits: kUnavailable, at once, when max_queued requests wait.
  Result<Submitted> try_submit(Outputs inputs);
  // A request that still waits in the queue is taken out, and its result becomes kCancelled
  // (true). One a Context has taken already runs to its end, and an unknown id is ignored
  // (false). For a client that went away before its request ran.
  bool cancel(uint64_t id);
  PipelineStats stats() const;
  // The device memory of all its Contexts' current plans: their arenas, workspaces and pinned
  // staging summed, each Engine's weights once. Call it with no request in flight (a Context's
  // plan may be changing while it runs one).
  Result<DeviceMemoryInfo> device_memory() const;
  int contexts() const;

  struct Impl;

 private:
  explicit Pipeline(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
