// The CUDA backend's side of the kernel contract (backends/backend.h).
//
// Device tensors keep the node's logical ONNX shape (NCHW for images); `Layout` says how
// the bytes are ordered. Convolutions want NHWC (tensor cores); ops that do not care about
// the order (elementwise on equal shapes, activations) take whatever they are offered; all
// other kernels take kPlain. The plan (cuda_plan.h) inserts a conversion where a producer's
// layout or dtype differs from what a consumer asks for.
//
// Precision: in fp16 mode every float activation lives on the device as float16 (graph
// inputs are converted on arrival, outputs back to float32 on the way out); in fp32 and
// tf32 modes as float32. Kernels therefore see float inputs in `ctx.act_dtype()`, plus
// whatever integer tensors the graph carries.
//
// A CUDA kernel derives from CudaKernel, which takes the contract's prepare/execute with the
// CUDA build and run contexts (stream, library handles, weight store, tactic cache):
//   prepare  once per input shape: check shapes, pick the algorithm (timing candidates on
//            the real shapes where there are several), upload/pack constants, size the
//            workspace, fill the output descriptions. May allocate and synchronize.
//   enqueue  launch on `run.stream`. Never allocates, never synchronizes, never reads
//            device memory back to the host, so a CUDA graph can capture it.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/tactic_cache.h"
#include "core/half.h"
#include "ir/graph.h"
#include "kiln/options.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

// The device dtype of float activations computed in precision `p`.
inline DataType act_dtype_of(Precision p) {
  return p == Precision::kFp16   ? DataType::kFloat16
         : p == Precision::kBf16 ? DataType::kBFloat16
                                 : DataType::kFloat32;
}

// Device copies of constants, owned by the Engine and shared by all its Contexts: a
// weight is uploaded once however many contexts run the engine. Thread-safe.
class WeightStore {
 public:
  WeightStore() = default;
  WeightStore(const WeightStore&) = delete;
  WeightStore& operator=(const WeightStore&) = delete;
  ~WeightStore();
  // Uploads `bytes` from `host` under `key` (e.g. node name + "/filter/fp16/khwc") unless a
  // buffer with that key exists; returns the device pointer. Synchronous.
  Result<void*> upload(const std::string& key, const void* host, size_t bytes);
  size_t total_bytes() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::pair<void*, size_t>> buffers_;
};

// What a CUDA kernel's prepare() may use; BuildContext::precision is the node's.
struct CudaBuildContext : BuildContext {
  CudaBuildContext() : BuildContext(DeviceKind::kCuda) {}
  CudnnConvPath conv_path = CudnnConvPath::kAuto;     // EngineOptions::cudnn_conv_path
  SpaceToDepth space_to_depth = SpaceToDepth::kAuto;  // EngineOptions::space_to_depth
  bool runtime_fusion = true;                         // EngineOptions::cudnn_runtime_fusion
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;  // bound to `stream`
  cublasLtHandle_t cublaslt = nullptr;
  size_t workspace_limit = size_t{256} << 20;  // per kernel
  bool time_tactics = true;                    // false: take the library's first heuristic choice
  size_t max_tactics = 0;  // timed candidates per library path, heuristic order first (0: all)
  // The candidates to time out of `offered` (max_tactics, or all).
  size_t tactic_count(size_t offered) const {
    return max_tactics ? std::min(max_tactics, offered) : offered;
  }
  WeightStore* weights = nullptr;  // never null
  TacticCache* tactics = nullptr;  // never null
  // BuildContext::notes is the plan's (CudaPlan::notes), never null here.
  DataType act_dtype() const { return act_dtype_of(precision); }
  bool allow_tf32() const { return precision != Precision::kFp32; }
};

// What a CUDA kernel's enqueue() gets (RunContext::workspace is device memory).
struct CudaRunContext : RunContext {
  CudaRunContext() : RunContext(DeviceKind::kCuda) {}
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;  // bound to `stream`
  cublasLtHandle_t cublaslt = nullptr;
};

class CudaKernel : public Kernel {
 public:
  DeviceKind device() const final { return DeviceKind::kCuda; }
  // The contract's entry points, given this device's contexts.
  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 BuildContext& ctx) final;
  Status execute(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const RunContext& run) final;

  // `in` has one entry per node input (not present for omitted inputs); `out` is pre-sized
  // to the node's outputs: fill dtype, shape and layout of each.
  virtual Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                         CudaBuildContext& ctx) = 0;
  // in[i] / out[i] nullptr for omitted tensors.
  virtual Status enqueue(const std::vector<const TensorRef*>& in,
                         const std::vector<TensorRef*>& out, const CudaRunContext& run) = 0;
};

// The CUDA kernels' factories: a kernel for the node, or kUnsupported saying why (the node
// then runs on the CPU reference with copies). `precision` is the node's.
using CudaKernelFactory = Result<std::unique_ptr<CudaKernel>> (*)(const Node& node,
                                                                  Precision precision);
// Registers `factory` in the kernel registry (backends/backend.h) as a candidate of `backend`
// ("cuda" for kiln's kernels and the libraries' single ones; Conv has several).
bool register_cuda_kernel(OpKind op, KernelFactory factory, const char* backend = "cuda");
// Whether a CUDA kernel is registered for `op`.
bool has_cuda_kernel(OpKind op);
// The registered CUDA candidates that take `node` (made, not prepared), in the order the
// planner asks them, as CudaKernels (for tests that drive kernels on their own); each with its
// backend's name. kUnsupported when none takes the node.
Result<std::vector<std::pair<std::string, std::unique_ptr<CudaKernel>>>> make_cuda_kernels(
    const Node& node, Precision precision);
// The first of them.
Result<std::unique_ptr<CudaKernel>> make_cuda_kernel(const Node& node, Precision precision);

}  // namespace kiln

// In src/backends/cuda/<dir>/<op>.cc|cu: KILN_REGISTER_CUDA_KERNEL(Relu, make_relu_kernel);
// with `make_relu_kernel` a CudaKernelFactory.
#define KILN_REGISTER_CUDA_KERNEL(kind, factory)                                \
  static ::kiln::Result<std::unique_ptr<::kiln::Kernel>> kiln_cuda_make_##kind( \
      const ::kiln::Node& node, const ::kiln::KernelParams& params) {           \
    auto made = factory(node, params.precision);                                \
    if (!made.is_ok()) return made.status();                                    \
    return std::unique_ptr<::kiln::Kernel>(std::move(made).value());            \
  }                                                                             \
  [[maybe_unused]] static const bool kiln_cuda_kernel_registered_##kind =       \
      ::kiln::register_cuda_kernel(::kiln::OpKind::kind, kiln_cuda_make_##kind)
