#include "backends/cuda/cuda_device.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "backends/cuda/cublaslt/lt_loader.h"
#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/launch.h"
#include "backends/cuda/tactic_timing.h"

namespace kiln {

Status CudaSharedMemory::reserve(cudaStream_t stream, size_t arena_need, size_t workspace_need,
                                 size_t host_need) {
  if (arena_need <= arena_bytes && workspace_need <= workspace_bytes &&
      host_need <= host_arena_bytes)
    return Status::ok();
  // Plans bound to the old buffers may have work in flight on the Context's stream. Not the
  // whole device: a device-wide synchronize fails, and breaks the capture, while another
  // Context's stream captures a CUDA graph.
  KILN_CUDA(cudaStreamSynchronize(stream));
  auto grow = [](void*& p, size_t& have, size_t need) -> Status {
    if (need <= have) return Status::ok();
    cudaFree(p);
    p = nullptr;
    have = 0;
    KILN_CUDA(cudaMalloc(&p, need));
    have = need;
    return Status::ok();
  };
  KILN_RETURN_IF_ERROR(grow(arena, arena_bytes, arena_need));
  KILN_RETURN_IF_ERROR(grow(workspace, workspace_bytes, workspace_need));
  if (host_need > host_arena_bytes) {
    cudaFreeHost(host_arena);
    host_arena = nullptr;
    host_arena_bytes = 0;
    KILN_CUDA(cudaHostAlloc(&host_arena, host_need, cudaHostAllocDefault));
    host_arena_bytes = host_need;
  }
  ++allocations;
  ++generation;
  return Status::ok();
}

CudaSharedMemory::~CudaSharedMemory() {
  cudaFreeHost(host_arena);
  cudaFree(workspace);
  cudaFree(arena);
}

Result<std::unique_ptr<CudaStreamHandles>> CudaStreamHandles::create() {
  auto h = std::make_unique<CudaStreamHandles>();
  KILN_CUDA(cudaStreamCreateWithFlags(&h->stream, cudaStreamNonBlocking));
  KILN_CUDNN(cudnnCreate(&h->cudnn));
  KILN_CUDNN(cudnnSetStream(h->cudnn, h->stream));
  KILN_RETURN_IF_ERROR(load_cublaslt());
  KILN_CUBLAS(cublasLtCreate(&h->cublaslt));
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  h->copy_pool = std::make_unique<ThreadPool>(static_cast<int>(std::min(hw, 16u)) - 1);
  return h;
}

CudaStreamHandles::~CudaStreamHandles() {
  if (cublaslt) cublasLtDestroy(cublaslt);
  if (cudnn) cudnnDestroy(cudnn);
  if (stream) cudaStreamDestroy(stream);
}

CudaPlanDevice::CudaPlanDevice(CudaStreamHandles& handles, WeightStore& weights,
                               TacticCache& tactics, const CudaDeviceOptions& options)
    : handles_(handles), weights_(weights) {
  build_.conv_path = options.conv_path;
  build_.space_to_depth = options.space_to_depth;
  build_.runtime_fusion = options.runtime_fusion;
  build_.stream = handles.stream;
  build_.cudnn = handles.cudnn;
  build_.cublaslt = handles.cublaslt;
  build_.workspace_limit = options.workspace_limit;
  build_.time_tactics = options.time_tactics;
  build_.max_tactics = options.max_tactics;
  build_.weights = &weights;
  build_.tactics = &tactics;
}

Result<void*> CudaPlanDevice::place_constant(const std::string& key, const void* bytes, size_t n) {
  return weights_.upload(key, bytes, n);
}

Status CudaPlanDevice::execute(Kernel& kernel, const KernelOperands& ops, void* workspace,
                               size_t workspace_bytes) {
  CudaRunContext run;
  run.stream = handles_.stream;
  run.cudnn = handles_.cudnn;
  run.cublaslt = handles_.cublaslt;
  run.workspace = workspace;
  run.workspace_bytes = workspace_bytes;
  return kernel.execute(ops.in_ptr, ops.out_ptr, run);
}

Result<float> CudaPlanDevice::time_kernel(Kernel& kernel, const std::vector<TensorDesc>& in,
                                          const std::vector<TensorDesc>& out,
                                          const std::string& key) {
  std::string cached;
  if (build_.tactics->get(key, &cached)) {
    const float ms = std::strtof(cached.c_str(), nullptr);
    if (ms > 0) return ms;
  }
  // Scratch operands: floats in [-1, 1), other dtypes zero; a constant read on the host has
  // none. Outputs poisoned.
  std::vector<ScratchBuffer> bufs(in.size() + out.size() + 1);
  KernelOperands ops;
  ops.reset(in.size(), out.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].present()) continue;
    if (in[i].value && kernel.reads_on_host(static_cast<int>(i))) {
      ops.set_in(i, in[i], nullptr);
      continue;
    }
    if (is_device_float(in[i].dtype)) {
      KILN_RETURN_IF_ERROR(bufs[i].alloc_random(in[i].dtype, in[i].numel(), 31 + i));
    } else {
      KILN_RETURN_IF_ERROR(bufs[i].alloc(in[i].nbytes()));
      KILN_CUDA(cudaMemsetAsync(bufs[i].get(), 0, in[i].nbytes(), handles_.stream));
    }
    ops.set_in(i, in[i], bufs[i].get());
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].present()) continue;
    ScratchBuffer& b = bufs[in.size() + i];
    KILN_RETURN_IF_ERROR(b.alloc(out[i].nbytes()));
    KILN_CUDA(cudaMemsetAsync(b.get(), 0xFF, out[i].nbytes(), handles_.stream));
    ops.set_out(i, out[i], b.get());
  }
  ScratchBuffer& ws = bufs.back();
  KILN_RETURN_IF_ERROR(ws.alloc(kernel.workspace_bytes()));
  // The memsets ran on the timing stream, ahead of the timed launches (no device-wide
  // synchronize: another Context's stream may be capturing).
  KILN_ASSIGN_OR_RETURN(const float ms, time_launches(handles_.stream, [&] {
                          return execute(kernel, ops, ws.get(), kernel.workspace_bytes());
                        }));
  build_.tactics->put(key, std::to_string(ms));
  return ms;
}

Status CudaPlanDevice::convert(const TensorRef& src, const TensorRef& dst) {
  TensorRef d = dst;
  return launch_convert(src, d, handles_.stream);
}

// Both copies are ordered on the Context's own stream and waited for: a plain cudaMemcpy
// runs on the default stream, which the non-blocking stream does not wait for, and a host
// step reads (or the plan reuses) the host bytes right after.
Status CudaPlanDevice::copy_to_host(void* host, const void* device, size_t n) {
  if (n) KILN_CUDA(cudaMemcpyAsync(host, device, n, cudaMemcpyDeviceToHost, handles_.stream));
  KILN_CUDA(cudaStreamSynchronize(handles_.stream));
  return Status::ok();
}

Status CudaPlanDevice::copy_from_host(void* device, const void* host, size_t n) {
  if (n) KILN_CUDA(cudaMemcpyAsync(device, host, n, cudaMemcpyHostToDevice, handles_.stream));
  KILN_CUDA(cudaStreamSynchronize(handles_.stream));
  return Status::ok();
}

Result<std::string> cuda_device_tag(int device) {
  cudaDeviceProp prop{};
  KILN_CUDA(cudaGetDeviceProperties(&prop, device));
  int rt = 0;
  KILN_CUDA(cudaRuntimeGetVersion(&rt));
  return std::string(prop.name) + " sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
         " cudnn " + std::to_string(cudnnGetVersion()) + " cudart " + std::to_string(rt);
}

Result<int64_t> cuda_device_used_bytes() {
  size_t free_b = 0, total_b = 0;
  KILN_CUDA(cudaMemGetInfo(&free_b, &total_b));
  return static_cast<int64_t>(total_b - free_b);
}

}  // namespace kiln
