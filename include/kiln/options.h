// Options that shape how an Engine is built and run.
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

enum class Device { kCpu, kCuda };
const char* device_name(Device d);

struct EngineOptions {
  Device device = Device::kCpu;
  // CPU worker threads; 0 means the number of cores.
  int threads = 0;
  // Which CPU kernels to use: "auto" (oneDNN where it supports the node, else the reference
  // kernels) or "reference" (only the reference kernels; tests compare against it).
  std::string backend = "auto";
  // The largest tensor one run may allocate. A model or input whose shapes would need more
  // (a corrupted pad, an absurd batch) fails with kResourceExhausted instead of exhausting
  // the host's memory.
  int64_t max_tensor_bytes = int64_t{8} << 30;
  // Run the graph optimizer (src/passes: constant folding, BatchNorm folding, epilogue
  // fusion...) before planning. Off gives the imported graph as is, e.g. to bisect a pass.
  bool optimize = true;
};

}  // namespace kiln
