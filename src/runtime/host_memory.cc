// register_host_memory (kiln/engine.h): caller-owned host memory page-locked in place, so that
// CUDA engines copy tensors over it by DMA without staging (CudaPlan::run takes any memory
// cudaPointerGetAttributes reports as host memory CUDA knows of).
#include <string>
#include <utility>

#include "kiln/engine.h"

#if KILN_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace kiln {

HostMemoryRegistration::HostMemoryRegistration(HostMemoryRegistration&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

HostMemoryRegistration& HostMemoryRegistration::operator=(HostMemoryRegistration&& o) noexcept {
  if (this != &o) {
    HostMemoryRegistration gone(std::move(*this));
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

HostMemoryRegistration::~HostMemoryRegistration() {
#if KILN_HAVE_CUDA
  if (data_ && cudaHostUnregister(data_) != cudaSuccess) cudaGetLastError();
#endif
}

Result<HostMemoryRegistration> register_host_memory(void* data, size_t bytes) {
  if (!data || !bytes)
    return invalid_argument("register_host_memory: " +
                            std::string(!data ? "a null pointer" : "no bytes") + " to register");
  HostMemoryRegistration r;
  r.bytes_ = bytes;
#if KILN_HAVE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();  // no GPU: nothing to pin for
    return r;
  }
  const cudaError_t e = cudaHostRegister(data, bytes, cudaHostRegisterPortable);
  if (e != cudaSuccess) {
    cudaGetLastError();
    const std::string what = "register_host_memory: cannot pin " + std::to_string(bytes) +
                             " bytes at " + std::to_string(reinterpret_cast<uintptr_t>(data));
    if (e == cudaErrorHostMemoryAlreadyRegistered)
      return invalid_argument(what + ": the memory (or part of it) is already registered");
    return Status(StatusCode::kResourceExhausted, what + ": " + cudaGetErrorString(e));
  }
  r.data_ = data;
#endif
  return r;
}

}  // namespace kiln
