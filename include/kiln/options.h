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

  // CUDA engines (device = kCuda):
  // "fp32" (plain float math), "tf32" (float32 tensors, tensor-core math) or "fp16"
  // (float16 activations and weights, float32 accumulation).
  std::string precision = "fp32";
  // Capture each plan's whole run (copies and kernels) in a CUDA graph on its second run
  // and replay it from then on. Plans with CPU fallback steps run without a graph.
  bool cuda_graph = false;
  // Time the candidate algorithms of each layer on its real shapes and keep the fastest;
  // off takes the libraries' first heuristic choice (a faster build, slower engine).
  bool time_tactics = true;
  // The most device scratch memory one layer may use.
  int64_t workspace_limit = int64_t{256} << 20;
  // A timing cache file: read at build when it exists and matches the device, written
  // after new layers were timed. Empty: none.
  std::string timing_cache;
};

}  // namespace kiln
