// Options that shape how an Engine is built and run.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kiln/status.h"

namespace kiln {

enum class Device { kCpu, kCuda };

// The engine's compute precision. fp32: plain float math. tf32: float32 tensors, tensor-core
// math (CUDA). fp16: float16 activations and weights with float32 accumulation (CUDA). bf16:
// bfloat16 activations and weights (float32's range, 8 bits of mantissa) with float32
// accumulation (CUDA; on the CPU, convolutions and inner products read bfloat16 and write
// float32, where oneDNN has native bfloat16 math: AVX-512 BF16 or AMX). The CPU engine refuses
// tf32 and fp16, and bf16 where the CPU lacks it.
enum class Precision : uint8_t { kFp32, kTf32, kFp16, kBf16 };

// Which cuDNN API the CUDA convolutions may use: both, timed against each other (kAuto), or
// only the legacy one or only the graph one (to check or bisect one path).
enum class CudnnConvPath : uint8_t { kAuto, kLegacy, kGraph };

// The space-to-depth rewrite of stride-2 CUDA convs with few input channels (a stem conv):
// kept where timing finds it faster (kAuto), forced wherever it applies (kOn), or never (kOff).
enum class SpaceToDepth : uint8_t { kAuto, kOn, kOff };

// Which algorithm the CPU's 3x3 stride-1 convs use: always direct (the default: oneDNN's
// Winograd doubles the fp32 rounding error of deep nets), the faster of direct and Winograd
// by timing (kAuto), or Winograd wherever oneDNN can create it (kWinograd).
enum class CpuConvAlgo : uint8_t { kDirect, kAuto, kWinograd };

// How the CPU stores the activations between oneDNN kernels: one layout per connected group,
// the faster by timing (kAuto); nhwc or the blocked layout (nChw16c, nChw8c without AVX-512)
// forced; planned per value by timing (kValue); or, for tests, the two layouts in turn so most
// convs run between operands stored differently (kAlternate).
enum class CpuLayout : uint8_t { kAuto, kNhwc, kBlocked, kValue, kAlternate };

// How callers give the model's image inputs (its rank-4 float32 inputs, [N, C, H, W]):
// float32 NCHW as the model declares them (kFloat32Nchw), or 8-bit pixels, NCHW or NHWC. 8-bit
// pixels are normalized on the engine's device, as (pixel / 255 − mean) / std per channel:
// four times fewer bytes to copy to a GPU than float32.
enum class InputFormat : uint8_t { kFloat32Nchw, kUint8Nchw, kUint8Nhwc };

// Each switch's names, as the CLI and plan files spell them ("fp16", "legacy", "on",
// "winograd", "nhwc"...). parse_* fails with the accepted names.
const char* precision_name(Precision p);
Result<Precision> parse_precision(const std::string& s);
const char* cudnn_conv_path_name(CudnnConvPath p);
Result<CudnnConvPath> parse_cudnn_conv_path(const std::string& s);
const char* space_to_depth_name(SpaceToDepth m);
Result<SpaceToDepth> parse_space_to_depth(const std::string& s);
const char* cpu_conv_algo_name(CpuConvAlgo a);
Result<CpuConvAlgo> parse_cpu_conv_algo(const std::string& s);
const char* cpu_layout_name(CpuLayout l);
Result<CpuLayout> parse_cpu_layout(const std::string& s);
const char* input_format_name(InputFormat f);  // "float32-nchw", "uint8-nchw", "uint8-nhwc"
Result<InputFormat> parse_input_format(const std::string& s);

// Default per-layer CUDA workspace limits (EngineOptions::workspace_limit).
inline constexpr int64_t kWorkspaceLimit = int64_t{256} << 20;
inline constexpr int64_t kFp32WorkspaceLimit = int64_t{1} << 30;
const char* device_name(Device d);

// The shapes one input may take, as TensorRT's optimization profiles give them: every
// dimension between min and max, and opt the shape the engine is planned (and on CUDA timed)
// for at build (EngineOptions::shape_ranges).
struct ShapeRange {
  std::vector<int64_t> min, opt, max;
};

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
  // The input shapes the engine is built for ("shape profiles"): each maps input names to a
  // shape; an input left out takes its declared shape, which must then be fully known. The
  // build runs the model once per profile on zeros, so layers are timed (CUDA) and layouts
  // chosen (CPU) then, and every Context builds these plans when it is created: no request
  // pays for them. A bad profile (an unknown input, a shape that contradicts the declared one)
  // fails the build.
  std::vector<std::map<std::string, std::vector<int64_t>>> shape_profiles;
  // With shape_profiles: refuse a run whose input shapes are none of them (an error naming
  // the shapes given and the profiles), instead of building a plan for it on first use (that
  // first run goes node by node, and on CUDA times its layers unless the timing cache holds
  // them; later runs of the shape are as fast as a profile's).
  bool only_profile_shapes = false;
  // Ranges of input shapes (kiln --shape-range NAME=MIN:OPT:MAX). Their opt shapes form one
  // more shape profile, built at load like the others (inputs without a range take their
  // declared shape there). A shape inside the ranges that no profile lists builds its plan on
  // first use, then is cached; with only_profile_shapes, shapes inside the ranges run and
  // others are refused. A bad range (min > opt, a rank or fixed dimension that contradicts
  // the model) fails the build.
  std::map<std::string, ShapeRange> shape_ranges;
  // The plans one Context keeps, one per input shape (and small inputs' values), the least
  // recently used dropped first; they share one activation arena sized for the largest. A
  // run of a cached shape builds, prepares and allocates nothing but its outputs. At least 1.
  int max_cached_plans = 8;
  // Run the graph optimizer (src/passes: constant folding, BatchNorm folding, epilogue
  // fusion...) before planning. Off gives the imported graph as is, e.g. to bisect a pass.
  bool optimize = true;
  // Plan each run's memory with reuse: values whose lives do not overlap share bytes of the one
  // arena, and a kernel may write its output over an input no later step reads. Off: every
  // value keeps bytes of its own for the whole run, as a framework without a memory plan
  // would hold them (kiln bench --ladder's rows before the memory plan). Results are the same.
  bool reuse_memory = true;

  // The compute precision (see Precision); tf32 and fp16 need a CUDA engine.
  Precision precision = Precision::kFp32;
  // Per-node precision (kiln --precision-overrides NODE=fp32,...): the named nodes of the
  // optimized graph compute in their own precision, with conversions inserted around them,
  // e.g. one layer kept in fp32 inside an fp16 engine. A fused group goes by its first node's
  // name (`kiln inspect --passes` lists the groups: "conv2 + add → Conv[+ residual]" is
  // conv2). A name that is no node of the optimized graph fails the build, naming the node it
  // was fused into. On the CPU fp32 and bf16 are accepted (bf16 where the CPU has it).
  std::map<std::string, Precision> precision_overrides;
  // Values kept in float32 in a tf32/fp16/bf16 engine (kiln keeps the fp16 range guard's findings
  // so unless --no-fp16-fallback): every node of the optimized graph that writes or reads one
  // computes in fp32, so the value is never stored in fp16 (an overflowing activation stays
  // finite, an underflowing one keeps its digits). Names are the model's values as the guard
  // (check_fp16_range) or `kiln inspect --graph` gives them; a value the optimizer fused into
  // a group keeps that group in fp32. precision_overrides win where both name a node.
  // EngineReport::fp32_kept lists the nodes; ignored in fp32 engines.
  std::vector<std::string> fp32_values;
  // CPU engines: the 3x3 conv algorithm and the activation layouts between oneDNN kernels.
  CpuConvAlgo cpu_conv_algo = CpuConvAlgo::kDirect;
  CpuLayout cpu_layout = CpuLayout::kAuto;

  // The image inputs' format (InputFormat) and, for 8-bit pixels, the per-channel mean and std
  // of the [0, 1] pixel values. Empty: the model's metadata (kiln.mean, kiln.std, comma
  // separated), else ImageNet's for 3 channels (mean 0.485,0.456,0.406, std 0.229,0.224,0.225)
  // and mean 0, std 1 otherwise.
  InputFormat input_format = InputFormat::kFloat32Nchw;
  std::vector<float> input_mean, input_std;

  // CUDA engines (device = kCuda):
  // Which GPU, as CUDA numbers them (after CUDA_VISIBLE_DEVICES): 0 to the count - 1. The
  // engine's weights, its contexts' streams and plans live there; every call made through
  // them selects it on the calling thread first.
  int device_index = 0;
  // The cuDNN API the convolutions may use, and the stem convs' space-to-depth rewrite.
  CudnnConvPath cudnn_conv_path = CudnnConvPath::kAuto;
  SpaceToDepth space_to_depth = SpaceToDepth::kAuto;
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
  // kFp32WorkspaceLimit in fp32, kWorkspaceLimit in tf32/fp16/bf16. Strict-fp32 convs need room
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
  return o.precision == Precision::kFp32 ? kFp32WorkspaceLimit : kWorkspaceLimit;
}

}  // namespace kiln
