#include "backends/cuda/cuda_kernel.h"

#include <fstream>
#include <sstream>

#include "backends/cuda/cuda_common.h"
#include "core/check.h"

namespace kiln {

WeightStore::~WeightStore() {
  for (auto& [key, buf] : buffers_) cudaFree(buf.first);
}

Result<void*> WeightStore::upload(const std::string& key, const void* host, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buffers_.find(key);
  if (it != buffers_.end()) {
    if (it->second.second != bytes)
      return internal_error("weight '" + key + "' uploaded twice with different sizes");
    return it->second.first;
  }
  void* d = nullptr;
  KILN_CUDA(cudaMalloc(&d, bytes == 0 ? 1 : bytes));
  // From pageable memory cudaMemcpy returns before its DMA lands, and the plans' non-blocking
  // streams do not wait for the default stream it ran on: wait for the copy here.
  Status copied =
      cuda_status(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice), "uploading weight");
  if (copied.is_ok())
    copied = cuda_status(cudaStreamSynchronize(nullptr), "waiting for a weight upload");
  if (!copied.is_ok()) {
    cudaFree(d);
    return copied.with_context(key);
  }
  buffers_[key] = {d, bytes};
  return d;
}

size_t WeightStore::total_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [key, buf] : buffers_) n += buf.second;
  return n;
}

Status CudaKernel::prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                           BuildContext& ctx) {
  KILN_CHECK(ctx.device == DeviceKind::kCuda);
  return prepare(in, out, static_cast<CudaBuildContext&>(ctx));
}

Status CudaKernel::execute(const std::vector<const TensorRef*>& in,
                           const std::vector<TensorRef*>& out, const RunContext& run) {
  KILN_CHECK(run.device == DeviceKind::kCuda);
  return enqueue(in, out, static_cast<const CudaRunContext&>(run));
}

bool register_cuda_kernel(OpKind op, KernelFactory factory) {
  return KernelRegistry::add(KernelCandidate{DeviceKind::kCuda, "cuda", op, nullptr, factory});
}

bool has_cuda_kernel(OpKind op) { return KernelRegistry::find(op, DeviceKind::kCuda, "cuda"); }

Result<std::unique_ptr<CudaKernel>> make_cuda_kernel(const Node& node, Precision precision) {
  const KernelCandidate* c = KernelRegistry::find(node.op, DeviceKind::kCuda, "cuda");
  if (!c) return unsupported("no CUDA kernel for " + std::string(op_name(node.op)));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> k, c->make(node, KernelParams{precision, nullptr}));
  return std::unique_ptr<CudaKernel>(static_cast<CudaKernel*>(k.release()));
}

}  // namespace kiln
