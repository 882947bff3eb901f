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
// tf32 and fp16, and bf16 where the CPU lacks it. int8: the inputs of convolutions and matrix
// products quantized to int8 with scales from calibration (EngineOptions::calibration_*), the
// weights per output channel; the other layers in fp16 (CUDA) or fp32 (CPU). Until kiln has
// 8-bit kernels for a layer, it runs in float with the 8-bit rounding applied (quantize, then
// dequantize), which gives the 8-bit engine's numbers; EngineReport::quantization says which.
// fp8: as int8, with float8 e4m3 codes (scale amax / 448, from min-max or percentile
// calibration; weights per output channel) in place of int8 ones; on the CPU every layer runs
// in float with the fp8 rounding applied. int8 and fp8 are an engine's precision only, never a
// node's (precision_overrides).
enum class Precision : uint8_t { kFp32, kTf32, kFp16, kBf16, kInt8, kFp8 };
inline bool precision_is_8bit(Precision p) { return p == Precision::kInt8 || p == Precision::kFp8; }

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

// Which CPU kernels an engine uses (EngineOptions::backend): oneDNN where it supports the node,
// else the reference kernels (kAuto), or only the reference kernels (kReference).
enum class KernelChoice : uint8_t { kAuto, kReference };
const char* kernel_choice_name(KernelChoice k);  // "auto", "reference"
Result<KernelChoice> parse_kernel_choice(const std::string& s);

// Default per-layer CUDA workspace limits (EngineOptions::workspace_limit).
inline constexpr int64_t kWorkspaceLimit = int64_t{256} << 20;
inline constexpr int64_t kFp32WorkspaceLimit = int64_t{1} << 30;
const char* device_name(Device d);  // "cpu", "cuda"
Result<Device> parse_device(const std::string& s);

// The shapes one input may take, as TensorRT's optimization profiles give them: every
// dimension between min and max, and opt the shape the engine is planned (and on CUDA timed)
// for at build (EngineOptions::shape_ranges).
struct ShapeRange {
  std::vector<int64_t> min, opt, max;
  bool operator==(const ShapeRange&) const = default;
};

// The types of options.def's options besides scalars, enums and strings.
using ShapeProfiles = std::vector<std::map<std::string, std::vector<int64_t>>>;  // input → shape
using ShapeRanges = std::map<std::string, ShapeRange>;                           // input → range
using PrecisionMap = std::map<std::string, Precision>;  // node → precision
using Names = std::vector<std::string>;
using Floats = std::vector<float>;

// Every field, its default and its meaning: options.def, the one list of options.
struct EngineOptions {
#define KILN_OPTION(Type, name, default_value, flag, kind, check, requirement, help) \
  Type name = default_value;
#include "kiln/options.def"
#undef KILN_OPTION
};

// What options.def says of one option, for the CLI, bindings and tools: they build their flags
// and keyword arguments from this list rather than a copy of it.
struct OptionInfo {
  enum class Kind : uint8_t {
    kPlan,  // shapes the plans: recorded in plan files, taken from them on load
    kRun,   // the caller's, at every load
  };
  std::string name;  // the EngineOptions field, and the name set_option takes
  std::string type;  // its text form's kind: "int", "bool", "bytes", "precision"...
  std::string flag;  // the `kiln` flag without "--" (empty: none)
  Kind kind = Kind::kRun;
  std::string default_text;  // the default, as option_texts gives it (one text, or none)
  std::string help;
  std::vector<std::string> choices;  // an enum's names, else empty
  // A list: its value is made of several texts (a repeated flag, several plan-file lines);
  // otherwise exactly one text.
  bool list = false;
};
const std::vector<OptionInfo>& option_list();
// The option named `name` (an EngineOptions field), or nullptr.
const OptionInfo* find_option(const std::string& name);

// Sets option `name` of `o` from its text form: exactly one text, or for a list option every
// item of its value (replacing it). Each type's text is described by its OptionInfo help;
// integers of bytes take KiB/MiB/GiB suffixes, bools 1/0, true/false, on/off. An error names
// `what` (default "option NAME") and what is accepted; `o` is unchanged then.
Status set_option(EngineOptions& o, const std::string& name, const std::vector<std::string>& texts,
                  const std::string& what = "");
// The texts that set_option reads back to option `name`'s value in `o` (none for an empty list).
Result<std::vector<std::string>> option_texts(const EngineOptions& o, const std::string& name);
// Every option's check in options.def (ranges, counts, enumerators); an error names the option
// and what it must be.
Status validate_options(const EngineOptions& o);

// The per-layer workspace limit `o` asks for: workspace_limit itself when it is set (>= 0),
// else the default for its precision.
inline int64_t effective_workspace_limit(const EngineOptions& o) {
  if (o.workspace_limit >= 0) return o.workspace_limit;
  return o.precision == Precision::kFp32 ? kFp32WorkspaceLimit : kWorkspaceLimit;
}

}  // namespace kiln
