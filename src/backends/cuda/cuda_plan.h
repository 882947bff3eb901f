// The CUDA execution plan: a graph lowered for one set of input shapes.
//
// build() walks the graph in order and, per node, creates the registered CUDA kernel (or a
// CPU fallback step when none claims the node), inserts layout/dtype conversions where a
// producer's layout differs from what a consumer asks for, prepares each kernel (algorithm
// choice by timing, weights uploaded once into the engine's WeightStore), then plans one
// activation arena from the tensors' lifetimes (src/planner) with in-place reuse where a
// kernel allows it. run() copies the inputs through pinned staging buffers, enqueues every
// step on the context's stream (or replays the CUDA graph captured on the first run), and
// copies the outputs back.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "core/thread_pool.h"
#include "ir/graph.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

struct CudaPlanOptions {
  Precision precision = Precision::kFp32;
  std::map<std::string, Precision> precision_overrides;  // by node name
  CudnnConvPath conv_path = CudnnConvPath::kAuto;        // EngineOptions::cudnn_conv_path
  SpaceToDepth space_to_depth = SpaceToDepth::kAuto;     // EngineOptions::space_to_depth
  bool cuda_graph = false;
  bool time_tactics = true;
  size_t workspace_limit = size_t{256} << 20;
  int64_t max_tensor_bytes = int64_t{8} << 30;
  bool poison_memory = false;  // EngineOptions::poison_memory
  size_t max_tactics = 0;      // EngineOptions::max_tactics
};

// The device memory all plans of one Context share: one activation arena and one workspace,
// each grown to the largest a plan has needed and never shrunk. Plans run one at a time on
// the Context's stream, so they can all use the same bytes.
struct CudaSharedMemory {
  void* arena = nullptr;
  size_t arena_bytes = 0;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  int64_t allocations = 0;  // how often either buffer was (re)allocated
  // Bumped at every reallocation: a plan bound to an older generation binds again (and
  // captures its CUDA graph again, which held the old addresses).
  uint64_t generation = 0;
  // Grows the buffers to at least these sizes. Synchronizes the device before freeing.
  Status reserve(size_t arena, size_t workspace);
  ~CudaSharedMemory();
};

// Library handles, the stream and the shared device memory of one Context.
struct CudaStreamHandles {
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasLtHandle_t cublaslt = nullptr;
  // Threads for the staging copies of large inputs, started once per Context.
  std::unique_ptr<ThreadPool> copy_pool;
  CudaSharedMemory memory;
  static Result<std::unique_ptr<CudaStreamHandles>> create();
  ~CudaStreamHandles();
};

// One step's description for inspect and profiles.
struct CudaStepInfo {
  std::string name;    // node name, or "convert <value>" / "input"/"output"
  std::string op;      // op name, "Convert", "CPU:<op>"
  std::string tactic;  // the kernel's chosen implementation
  bool on_cpu = false;
};

struct CudaMemoryReport {
  int64_t arena_bytes = 0;  // what this plan needs of the Context's shared arena
  int64_t arena_lower_bound = 0;
  int64_t workspace_bytes = 0;  // what this plan needs of the shared workspace
  int64_t staging_bytes = 0;    // pinned host
  int64_t io_device_bytes = 0;  // device input/output buffers outside the arena
};

struct CudaTiming {
  double h2d_ms = 0, compute_ms = 0, d2h_ms = 0;
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

  const std::vector<CudaStepInfo>& steps() const;
  // What the build changed that a user should know of: constants saturated to fp16's range.
  const std::vector<std::string>& notes() const;
  const CudaMemoryReport& memory() const;
  bool uses_cuda_graph() const;
  bool has_cpu_steps() const;
  const std::vector<Shape>& input_shapes() const;

  struct Impl;

 private:
  explicit CudaPlan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "NVIDIA H200 sm_90 cudnn 91400 cuda 13000": identifies a device and library versions for
// timing caches and plan files.
Result<std::string> cuda_device_tag(int device = 0);
// Bytes of device memory in use on the current device (total − free), for peak reports.
Result<int64_t> cuda_device_used_bytes();

}  // namespace kiln
