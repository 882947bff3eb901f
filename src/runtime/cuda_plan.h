// A CUDA Context's plan for one set of input shapes: the runtime's plan (runtime/plan.h) built
// for the GPU, with what a CUDA run adds around its steps. run() copies the inputs through
// pinned staging buffers, enqueues every step on the context's stream (or replays the CUDA
// graph captured on the first run), and copies the outputs back.
#pragma once

#if KILN_HAVE_CUDA

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_device.h"
#include "runtime/plan.h"

namespace kiln {

struct CudaPlanOptions {
  PlanOptions plan;          // main = kCuda
  CudaDeviceOptions device;  // how the CUDA kernels are built
  bool cuda_graph = false;
  bool poison_memory = false;  // EngineOptions::poison_memory
};

struct CudaMemoryReport {
  int64_t arena_bytes = 0;  // what this plan needs of the Context's shared arena
  int64_t arena_lower_bound = 0;
  int64_t workspace_bytes = 0;  // what this plan needs of the shared workspace
  int64_t staging_bytes = 0;    // pinned host: input/output staging and host steps' arena
};

struct CudaTiming {
  double h2d_ms = 0, compute_ms = 0, d2h_ms = 0;
  double wait_ms = 0;  // between the copies in and the compute: the compute order's wait
};

class CudaPlan {
 public:
  static Result<std::unique_ptr<CudaPlan>> build(const Graph& graph,
                                                 const std::vector<const Node*>& order,
                                                 const std::vector<Tensor>& inputs,  // graph order
                                                 const CudaPlanOptions& options,
                                                 WeightStore& weights, TacticCache& tactics,
                                                 CudaStreamHandles& handles);
  ~CudaPlan();

  // Runs on `inputs` (graph order, the shapes the plan was built for) and returns the
  // outputs (graph order). Synchronizes the stream before returning.
  Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);
  // Device-event times of the last run().
  const CudaTiming& last_timing() const;
  // Re-runs only the device compute of the last run (inputs already on the device, no host
  // transfers; the CUDA graph when enabled), `iterations` times; per-iteration ms.
  Result<std::vector<double>> time_compute(int iterations);
  // Per-step device time (ms, mean of `iterations`, steps run one by one with events).
  Result<std::vector<double>> profile_steps(int iterations);

  // Each step: name, op, tactic, and whether it runs on the host (ms unset).
  const std::vector<LayerProfile>& steps() const;
  // The plan as data (plan_info).
  PlanInfo info(const Graph& graph) const;
  // What the build changed that a user should know of: constants saturated to fp16's range.
  const std::vector<std::string>& notes() const;
  const CudaMemoryReport& memory() const;
  bool uses_cuda_graph() const;
  const std::vector<Shape>& input_shapes() const;

  struct Impl;

 private:
  explicit CudaPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln

#endif  // KILN_HAVE_CUDA
