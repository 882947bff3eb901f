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

bool register_cuda_kernel(OpKind op, KernelFactory factory, const char* backend) {
  return KernelRegistry::add(KernelCandidate{DeviceKind::kCuda, backend, op, nullptr, factory});
}

bool has_cuda_kernel(OpKind op) {
  return !KernelRegistry::candidates(op, DeviceKind::kCuda).empty();
}

Result<std::vector<std::pair<std::string, std::unique_ptr<CudaKernel>>>> make_cuda_kernels(
    const Node& node, Precision precision) {
  std::vector<std::pair<std::string, std::unique_ptr<CudaKernel>>> made;
  std::string why = "no CUDA kernel for " + std::string(op_name(node.op));
  for (const KernelCandidate* c : KernelRegistry::candidates(node.op, DeviceKind::kCuda)) {
    auto k = c->make(node, KernelParams{precision, nullptr});
    if (!k.is_ok()) {
      if (k.status().code() != StatusCode::kUnsupported) return k.status();
      why = k.status().message();
      continue;
    }
    made.emplace_back(c->backend, static_cast<CudaKernel*>(k->release()));
  }
  if (made.empty()) return unsupported(why);
  return made;
}

Result<std::unique_ptr<CudaKernel>> make_cuda_kernel(const Node& node, Precision precision) {
  KILN_ASSIGN_OR_RETURN(auto made, make_cuda_kernels(node, precision));
  return std::move(made.front().second);
}

}  // namespace kiln
