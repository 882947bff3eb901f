// Options that shape how an Engine is built and run.
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

enum class Device { kCpu, kCuda };

// Default per-layer CUDA workspace limits (EngineOptions::workspace_limit).
inline constexpr int64_t kWorkspaceLimit = int64_t{256} << 20;
inline constexpr int64_t kFp32WorkspaceLimit = int64_t{1} << 30;
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
  // With time_tactics: the most candidates of one library path timed per layer, in the
  // library's heuristic order (0: all it offers). A small limit builds faster (each cuDNN
  // graph candidate may compile a kernel) at the risk of missing a faster late candidate.
  // Choices made under a limit go to the timing cache like any other.
  int max_tactics = 0;
  // The most device scratch memory one layer may use, in bytes; the layers share one
  // workspace, so this bounds the engine's too. Negative (the default): by precision,
  // kFp32WorkspaceLimit in fp32, kWorkspaceLimit in tf32/fp16. Strict-fp32 convs need room
  // for their FFT and Winograd-style algorithms (ResNet-50 at batch 256 runs 1.27x faster
  // with 1 GiB than with 256 MiB); the tensor-core convs of tf32/fp16 gain nothing from more
  // and would spend memory on noise-level wins (fp16 ResNet-50 at batch 256 with 1 GiB:
  // 460 MiB more workspace, 2% slower).
  int64_t workspace_limit = -1;
  // Fill the device activation memory with 0xFF bytes (NaN in float32 and float16) before
  // every run, so a step that leaves part of its output unwritten shows as NaN instead of
  // as a plausible stale value. For tests; it costs a memset per run.
  bool poison_memory = false;
  // A timing cache file: read at build when it exists and matches the device, written
  // after new layers were timed. Empty: none.
  std::string timing_cache;
};

// The per-layer workspace limit `o` asks for: workspace_limit itself when it is set (>= 0),
// else the default for its precision.
inline int64_t effective_workspace_limit(const EngineOptions& o) {
  if (o.workspace_limit >= 0) return o.workspace_limit;
  return o.precision == "fp32" ? kFp32WorkspaceLimit : kWorkspaceLimit;
}

}  // namespace kiln
