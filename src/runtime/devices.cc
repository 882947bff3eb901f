// The devices as the public API sees them (kiln/engine.h: GPUs, GPU tensors, pinned and
// registered host memory), through the registered providers: a build without a backend
// answers through the same code that it lacks it.
#include "runtime/devices.h"

#include <utility>

#include "kiln/engine.h"

namespace kiln {

namespace {

const DeviceProvider* cuda() { return device_provider(DeviceKind::kCuda); }

Status no_cuda(const std::string& what) {
  return unsupported(what +
                     ": this kiln build has no CUDA backend (built without the CUDA "
                     "toolkit)");
}

}  // namespace

Result<const DeviceProvider*> provider_of(Device device) {
  const DeviceKind kind = device == Device::kCuda ? DeviceKind::kCuda : DeviceKind::kCpu;
  const DeviceProvider* p = device_provider(kind);
  if (!p) return no_cuda("--device cuda");
  return p;
}

Result<std::string> device_tag(Device device, int index) {
  KILN_ASSIGN_OR_RETURN(const DeviceProvider* p, provider_of(device));
  return p->tag(index);
}

Status check_cuda_device(int device, const std::string& what) {
  const int count = cuda_device_count();
  if (device >= 0 && device < count) return Status::ok();
  return invalid_argument(what + ": no GPU " + std::to_string(device) + " (this machine has " +
                          std::to_string(count) + ")");
}

int cuda_device_count() { return cuda() ? cuda()->count() : 0; }

Result<Tensor> copy_to_gpu(const Tensor& t, int gpu) {
  if (!cuda()) return no_cuda("copy_to_gpu(GPU " + std::to_string(gpu) + ")");
  if (t.gpu() >= 0)
    return invalid_argument("copy_to_gpu: the tensor is already in the memory of GPU " +
                            std::to_string(t.gpu()));
  KILN_RETURN_IF_ERROR(check_cuda_device(gpu, "copy_to_gpu"));
  return cuda()->copy_to_device(t, gpu);
}

Result<std::string> cuda_pci_bus_id(int device) {
  if (!cuda()) return no_cuda("cuda_pci_bus_id(" + std::to_string(device) + ")");
  KILN_RETURN_IF_ERROR(check_cuda_device(device, "cuda_pci_bus_id"));
  return cuda()->bus_id(device);
}

Result<Tensor> pinned_tensor(DataType dtype, Shape shape) {
  for (int64_t d : shape)
    if (d < 0) return invalid_argument("pinned_tensor: negative shape " + shape_str(shape));
  if (!cuda()) return Tensor(dtype, std::move(shape));  // nothing to pin for
  return cuda()->pinned_tensor(dtype, std::move(shape));
}

// register_host_memory: caller-owned host memory page-locked in place, so that CUDA engines
// copy tensors over it by DMA without staging (a CUDA Context's staging takes any memory CUDA
// reports as host memory it knows of).
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
  if (data_ && cuda()) cuda()->unregister_host(data_);
}

Result<HostMemoryRegistration> register_host_memory(void* data, size_t bytes) {
  if (!data || !bytes)
    return invalid_argument("register_host_memory: " +
                            std::string(!data ? "a null pointer" : "no bytes") + " to register");
  HostMemoryRegistration r;
  r.bytes_ = bytes;
  if (!cuda()) return r;
  KILN_ASSIGN_OR_RETURN(const bool pinned, cuda()->register_host(data, bytes));
  if (pinned) r.data_ = data;
  return r;
}

}  // namespace kiln
