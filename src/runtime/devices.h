// The engine's devices through their registered providers (backends/device.h): which one an
// option names, its tag, and whether a GPU exists.
#pragma once

#include <string>

#include "backends/device.h"
#include "kiln/options.h"

namespace kiln {

// The provider of `device`; an error where this build has none ("no CUDA backend").
Result<const DeviceProvider*> provider_of(Device device);
// Identifies device `index` of `device` and its libraries (timing caches, plan files).
Result<std::string> device_tag(Device device, int index);
// OK when CUDA shows GPU `device`; else "WHAT: no GPU <device> (this machine has <count>)".
Status check_cuda_device(int device, const std::string& what);

}  // namespace kiln
