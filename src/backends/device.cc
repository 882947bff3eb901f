// The device providers registered by the backends (backends/device.h).
#include "backends/device.h"

#include <cstdio>
#include <cstdlib>

namespace kiln {

namespace {

std::unique_ptr<DeviceProvider>* providers() {
  static std::unique_ptr<DeviceProvider> by_kind[kDeviceKinds];
  return by_kind;
}

}  // namespace

bool register_device_provider(std::unique_ptr<DeviceProvider> provider) {
  std::unique_ptr<DeviceProvider>& slot = providers()[device_index(provider->kind())];
  if (slot) {
    std::fprintf(stderr, "kiln: device %s registered twice\n", device_kind_name(provider->kind()));
    std::abort();
  }
  slot = std::move(provider);
  return true;
}

const DeviceProvider* device_provider(DeviceKind kind) {
  return providers()[device_index(kind)].get();
}

}  // namespace kiln
