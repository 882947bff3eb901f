// Options that shape how an Engine is built and run.
#pragma once

#include <string>

namespace kiln {

enum class Device { kCpu, kCuda };
const char* device_name(Device d);

struct EngineOptions {
  Device device = Device::kCpu;
  // CPU worker threads; 0 means the number of cores.
  int threads = 0;
};

}  // namespace kiln
