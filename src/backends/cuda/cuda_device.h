// The CUDA side of a Context: its stream, library handles and shared memory, and the plan
// device (backends/backend.h) through which the runtime's plan prepares and runs CUDA kernels,
// converts layouts and dtypes, and copies between the host and the GPU.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backends/cuda/cuda_kernel.h"
#include "core/thread_pool.h"

namespace kiln {

// The memory all plans of one Context share: one activation arena and one workspace on the
// device, and one pinned host arena (for the values of host steps), each grown to the largest
// a plan has needed and never shrunk. Plans run one at a time on the Context's stream, so they
// can all use the same bytes.
struct CudaSharedMemory {
  void* arena = nullptr;
  size_t arena_bytes = 0;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  void* host_arena = nullptr;  // pinned
  size_t host_arena_bytes = 0;
  int64_t allocations = 0;  // how often a buffer was (re)allocated
  // Bumped at every reallocation: a plan bound to an older generation binds again (and
  // captures its CUDA graph again, which held the old addresses).
  uint64_t generation = 0;
  // Grows the buffers to at least these sizes. Synchronizes `stream` (the only one that uses
  // them) before freeing.
  Status reserve(cudaStream_t stream, size_t arena, size_t workspace, size_t host_arena);
  ~CudaSharedMemory();
};

// Library handles, the stream and the shared memory of one Context.
// Orders the compute of several streams (a Pipeline's Contexts) one after another, in the
// order their runs reach it, while their copies stay free to overlap: each run's compute waits
// for the compute of the run let in before it. Several computes sharing the GPU at once slow
// each other (caches, memory bandwidth); one at a time, with the copies of the others
// underneath, keeps the GPU's whole throughput. `last` is the event recorded after the
// compute last let in.
struct CudaComputeOrder {
  std::mutex mu;
  cudaEvent_t last = nullptr;
  bool enabled = true;  // off: the joined Contexts' computes share the GPU at once
};

struct CudaStreamHandles {
  cudaStream_t stream = nullptr;
  // Shared with the other Contexts of a Pipeline that orders their compute; null: none.
  std::shared_ptr<CudaComputeOrder> compute_order;
  cudnnHandle_t cudnn = nullptr;
  cublasLtHandle_t cublaslt = nullptr;
  // Threads for the staging copies of large inputs, started once per Context.
  std::unique_ptr<ThreadPool> copy_pool;
  CudaSharedMemory memory;
  static Result<std::unique_ptr<CudaStreamHandles>> create();
  ~CudaStreamHandles();
};

// What a CUDA plan's kernels are built with, from EngineOptions.
struct CudaDeviceOptions {
  CudnnConvPath conv_path = CudnnConvPath::kAuto;     // EngineOptions::cudnn_conv_path
  SpaceToDepth space_to_depth = SpaceToDepth::kAuto;  // EngineOptions::space_to_depth
  bool runtime_fusion = true;                         // EngineOptions::cudnn_runtime_fusion
  bool time_tactics = true;
  size_t workspace_limit = size_t{256} << 20;
  size_t max_tactics = 0;      // EngineOptions::max_tactics
  bool blocking_sync = false;  // EngineOptions::cuda_blocking_sync
};

// The GPU of one Context as a plan device. The weights and timing cache are the Engine's.
class CudaPlanDevice final : public PlanDevice {
 public:
  CudaPlanDevice(CudaStreamHandles& handles, WeightStore& weights, TacticCache& tactics,
                 const CudaDeviceOptions& options);
  DeviceKind kind() const override { return DeviceKind::kCuda; }
  DataType dtype_for(DataType dt, Precision p) const override {
    return is_device_float(dt) ? act_dtype_of(p) : dt;
  }
  BuildContext& build_context() override { return build_; }
  Result<void*> place_constant(const std::string& key, const void* bytes, size_t n) override;
  Status execute(Kernel& kernel, const KernelOperands& ops, void* workspace,
                 size_t workspace_bytes) override;
  Status convert(const TensorRef& src, const TensorRef& dst) override;
  Status copy_to_host(void* host, const void* device, size_t n) override;
  Status copy_from_host(void* device, const void* host, size_t n) override;
  bool times_candidates() const override { return build_.time_tactics; }
  Result<float> time_kernel(Kernel& kernel, const std::vector<TensorDesc>& in,
                            const std::vector<TensorDesc>& out, const std::string& key) override;

 private:
  CudaStreamHandles& handles_;
  WeightStore& weights_;
  CudaBuildContext build_;
};

// "NVIDIA H200 sm_90 cudnn 91400 cuda 13000": identifies a device and library versions for
// timing caches and plan files.
Result<std::string> cuda_device_tag(int device = 0);
// Bytes of device memory in use on the current device (total − free), for peak reports.
Result<int64_t> cuda_device_used_bytes();

}  // namespace kiln
