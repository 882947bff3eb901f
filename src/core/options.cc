// The names of the EngineOptions switches (kiln/options.h), as the CLI and plan files spell them.
#include "kiln/options.h"

#include <string>

namespace kiln {

namespace {

template <typename E, size_t N>
const char* name_of(E e, const char* const (&names)[N]) {
  const size_t i = static_cast<size_t>(e);
  return i < N ? names[i] : "?";
}

// The enumerator whose name is `s` (names in enumerator order), else an error naming `what`
// and the accepted names.
template <typename E, size_t N>
Result<E> parse_name(const std::string& s, const char* what, const char* const (&names)[N]) {
  std::string accepted;
  for (size_t i = 0; i < N; ++i) {
    if (s == names[i]) return static_cast<E>(i);
    accepted += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(names[i]);
  }
  return invalid_argument(std::string(what) + " '" + s + "': expected " + accepted);
}

const char* const kPrecisions[] = {"fp32", "tf32", "fp16", "bf16"};
const char* const kConvPaths[] = {"auto", "legacy", "graph"};
const char* const kSpaceToDepth[] = {"auto", "on", "off"};
const char* const kCpuConvAlgos[] = {"direct", "auto", "winograd"};
const char* const kCpuLayouts[] = {"auto", "nhwc", "blocked", "value", "alternate"};
const char* const kInputFormats[] = {"float32-nchw", "uint8-nchw", "uint8-nhwc"};

}  // namespace

const char* precision_name(Precision p) { return name_of(p, kPrecisions); }
Result<Precision> parse_precision(const std::string& s) {
  return parse_name<Precision>(s, "precision", kPrecisions);
}
const char* cudnn_conv_path_name(CudnnConvPath p) { return name_of(p, kConvPaths); }
Result<CudnnConvPath> parse_cudnn_conv_path(const std::string& s) {
  return parse_name<CudnnConvPath>(s, "cuDNN conv path", kConvPaths);
}
const char* space_to_depth_name(SpaceToDepth m) { return name_of(m, kSpaceToDepth); }
Result<SpaceToDepth> parse_space_to_depth(const std::string& s) {
  return parse_name<SpaceToDepth>(s, "space-to-depth mode", kSpaceToDepth);
}
const char* cpu_conv_algo_name(CpuConvAlgo a) { return name_of(a, kCpuConvAlgos); }
Result<CpuConvAlgo> parse_cpu_conv_algo(const std::string& s) {
  return parse_name<CpuConvAlgo>(s, "CPU conv algorithm", kCpuConvAlgos);
}
const char* cpu_layout_name(CpuLayout l) { return name_of(l, kCpuLayouts); }
Result<CpuLayout> parse_cpu_layout(const std::string& s) {
  return parse_name<CpuLayout>(s, "CPU layout", kCpuLayouts);
}
const char* input_format_name(InputFormat f) { return name_of(f, kInputFormats); }
Result<InputFormat> parse_input_format(const std::string& s) {
  return parse_name<InputFormat>(s, "input format", kInputFormats);
}

}  // namespace kiln
