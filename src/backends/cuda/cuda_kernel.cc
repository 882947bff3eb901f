#include "backends/cuda/cuda_kernel.h"

#include <fstream>
#include <sstream>

#include "backends/cuda/cuda_common.h"
#include "core/check.h"

namespace kiln {

const char* layout_name(Layout l) { return l == Layout::kNHWC ? "NHWC" : "plain"; }

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

namespace {
std::map<OpKind, CudaKernelFactory>& registry() {
  static std::map<OpKind, CudaKernelFactory> r;
  return r;
}
}  // namespace

bool CudaKernelRegistry::add(OpKind op, CudaKernelFactory f) {
  // Two kernels registered for one op would leave which runs to static initialization order.
  KILN_CHECK(registry().emplace(op, f).second);
  return true;
}

CudaKernelFactory CudaKernelRegistry::find(OpKind op) {
  auto it = registry().find(op);
  return it == registry().end() ? nullptr : it->second;
}

}  // namespace kiln
