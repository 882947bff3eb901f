// The CUDA backend's kernel contract.
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
// Life cycle, as for every backend (backends/backend.h):
//   create   the registered factory looks at the node (op, attributes, dtypes) and returns
//            a kernel, or kUnsupported with the reason; the node then runs on the CPU.
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

#include "backends/tactic_cache.h"
#include "ir/graph.h"
#include "kiln/options.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

enum class Layout : uint8_t {
  kPlain,  // row-major in the logical shape's order (NCHW for rank 4)
  kNHWC,   // rank 4 only: logical [N,C,H,W] stored as [N,H,W,C]
};
const char* layout_name(Layout l);

// float32 or float16: the dtypes a float activation has on the device (ctx.act_dtype()).
inline bool is_device_float(DataType dt) {
  return dt == DataType::kFloat32 || dt == DataType::kFloat16;
}

struct DevDesc {
  DataType dtype = DataType::kUndefined;
  Shape shape;  // logical (ONNX) shape
  Layout layout = Layout::kPlain;
  // Host contents when the value is a constant of the graph (weights, shape tensors), else
  // nullptr. Lets kernels pack weights at prepare and read attribute-like inputs.
  const Tensor* value = nullptr;
  bool present() const { return dtype != DataType::kUndefined; }
  int64_t numel() const { return shape_numel(shape); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
};

struct DevTensor {
  DevDesc desc;
  void* data = nullptr;  // device pointer
};

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

// What prepare() may use.
struct CudaBuildContext {
  Precision precision = Precision::kFp32;
  CudnnConvPath conv_path = CudnnConvPath::kAuto;     // EngineOptions::cudnn_conv_path
  SpaceToDepth space_to_depth = SpaceToDepth::kAuto;  // EngineOptions::space_to_depth
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
  // The plan's notes (CudaPlan::notes), for what a kernel changed that a user should know
  // of; never null.
  std::vector<std::string>* notes = nullptr;
  DataType act_dtype() const {
    return precision == Precision::kFp16 ? DataType::kFloat16 : DataType::kFloat32;
  }
  bool allow_tf32() const { return precision != Precision::kFp32; }
};

// What enqueue() gets.
struct CudaRunContext {
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;  // bound to `stream`
  cublasLtHandle_t cublaslt = nullptr;
  void* workspace = nullptr;  // at least the kernel's workspace_bytes()
  size_t workspace_bytes = 0;
};

class CudaKernel {
 public:
  virtual ~CudaKernel() = default;

  // The layout input i must arrive in, given the layout its producer offers. Kernels that
  // do not care return `offered`. Default: kPlain.
  virtual Layout input_layout(int i, Layout offered) const { return Layout::kPlain; }
  // True when input i may arrive exactly as its producer stores it (`offered`: dtype and
  // layout), for instance the model's float32 NCHW input, because the kernel converts it
  // itself more cheaply than a separate conversion would (fused with its own input
  // transform). The plan then skips its conversion for that input. Default: false.
  virtual bool takes_offered(int i, const DevDesc& offered) const { return false; }
  // True when input i is a constant the kernel reads from DevDesc::value at prepare (and
  // packs itself); the plan then does not upload it and passes nullptr data for it.
  virtual bool reads_on_host(int i) const { return false; }
  // Output 0 may be written over input `inplace_input()` (same bytes and layout) when no
  // later step reads that input; -1 when the kernel cannot work in place.
  virtual int inplace_input() const { return -1; }
  // True for pure views (Reshape, Flatten, Squeeze, Unsqueeze, Identity on kPlain data):
  // output 0 is input 0's buffer with a new shape; enqueue() is never called.
  virtual bool is_alias() const { return false; }

  // `in` has one entry per node input (not present for omitted inputs); `out` is pre-sized
  // to the node's outputs: fill dtype, shape and layout of each.
  virtual Status prepare(const std::vector<DevDesc>& in, std::vector<DevDesc>& out,
                         CudaBuildContext& ctx) = 0;
  virtual size_t workspace_bytes() const { return 0; }
  // A short description of the chosen implementation for `kiln inspect` / profiles, e.g.
  // "cudnn IMPLICIT_PRECOMP_GEMM (0.041 ms)".
  virtual std::string tactic() const { return ""; }
  // in[i] / out[i] nullptr for omitted tensors.
  virtual Status enqueue(const std::vector<const DevTensor*>& in,
                         const std::vector<DevTensor*>& out, const CudaRunContext& run) = 0;
};

// A factory returns a kernel for the node, or kUnsupported saying why (the node then runs on
// the CPU reference with copies). `precision` is the engine's.
using CudaKernelFactory = Result<std::unique_ptr<CudaKernel>> (*)(const Node& node,
                                                                  Precision precision);

class CudaKernelRegistry {
 public:
  static bool add(OpKind op, CudaKernelFactory f);
  static CudaKernelFactory find(OpKind op);  // nullptr when no kernel is registered
};

}  // namespace kiln

// In src/backends/cuda/<dir>/<op>.cc|cu: KILN_REGISTER_CUDA_KERNEL(Relu, make_relu_kernel);
#define KILN_REGISTER_CUDA_KERNEL(kind, factory)                          \
  [[maybe_unused]] static const bool kiln_cuda_kernel_registered_##kind = \
      ::kiln::CudaKernelRegistry::add(::kiln::OpKind::kind, factory)
