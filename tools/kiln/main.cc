// `kiln`: run, inspect and benchmark ONNX models; `kiln demo` classifies Fashion-MNIST.
//
// Global options (--device, --threads, -v) may come before or after the subcommand: the
// subcommands fall through to the root for options they do not define. Every failure
// prints one line "kiln: error: ..." to stderr; exit codes are in cli_common.h.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <vector>

#include "cli_common.h"

namespace {

using namespace kiln::cli;

// An enum's CLI spellings: name → value for its first `count` enumerators.
template <typename E>
std::map<std::string, E> names_of(const char* (*name)(E), int count) {
  std::map<std::string, E> m;
  for (int i = 0; i < count; ++i) m[name(static_cast<E>(i))] = static_cast<E>(i);
  return m;
}

// Its spellings as the help's type: "{fp32,tf32,fp16}" (CLI11's own description of the map
// would print the enum values as characters).
template <typename E>
std::string choices_of(const char* (*name)(E), int count) {
  std::string s = "{";
  for (int i = 0; i < count; ++i) s += std::string(i ? "," : "") + name(static_cast<E>(i));
  return s + "}";
}

// An option taking one of an enum's spellings, with its choices in the help.
template <typename E>
CLI::Option* add_enum(CLI::App& app, const std::string& flag, E& value, const std::string& help,
                      const char* (*name)(E), int count, const char* default_value) {
  return app.add_option(flag, value, help)
      ->transform(CLI::CheckedTransformer(names_of(name, count)).description(""))
      ->type_name(choices_of(name, count))
      ->default_str(default_value);
}

// --input-format, --input-mean, --input-std and --input-scale into `global`: the mean and
// std in [0, 1] pixel units (a value v given at scale S is v / S there).
kiln::Status image_input_options(const std::string& format, const std::string& mean,
                                 const std::string& stdev, double scale, GlobalOptions& global) {
  KILN_ASSIGN_OR_RETURN(global.input_format,
                        kiln::parse_input_format(format == "jpeg" ? "uint8-nhwc" : format));
  const bool eight_bit = global.input_format != kiln::InputFormat::kFloat32Nchw;
  if (!eight_bit && (!mean.empty() || !stdev.empty() || scale != 1))
    return kiln::invalid_argument(
        "--input-mean, --input-std and --input-scale are for 8-bit or jpeg input "
        "(--input-format uint8-nchw, uint8-nhwc or jpeg); a float32 input is the model's own");
  if (!(scale > 0) || !std::isfinite(scale))
    return kiln::invalid_argument("--input-scale must be a positive number, not " +
                                  std::to_string(scale));
  if (!mean.empty()) {
    KILN_ASSIGN_OR_RETURN(global.input_mean, parse_floats(mean, "--input-mean"));
    for (float& v : global.input_mean) v = static_cast<float>(v / scale);
  }
  if (!stdev.empty()) {
    KILN_ASSIGN_OR_RETURN(global.input_std, parse_floats(stdev, "--input-std"));
    for (float& v : global.input_std) {
      if (!(v != 0.f) || !std::isfinite(v))
        return kiln::invalid_argument("--input-std '" + stdev + "': every value must be nonzero");
      v = static_cast<float>(v / scale);
    }
  }
  return kiln::Status::ok();
}

int run_main(int argc, char** argv) {
  GlobalOptions global;
  for (int i = 0; i < argc; ++i)
    global.command_line += (i ? " " : "") + std::string(i ? argv[i] : "kiln");
  CLI::App app{"kiln: an ONNX inference engine for vision models", "kiln"};
  app.set_version_flag("--version", std::string("kiln ") + KILN_VERSION);
  app.fallthrough();
  app.require_subcommand(1);
  app.add_option("--device", global.device, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--threads", global.threads, "CPU threads (0: all cores)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("-v,--verbose", global.verbose, "log more (-vv, -vvv for even more)");
  add_enum(app, "--precision", global.precision, "fp32 or bf16 (CPU and CUDA), tf32 or fp16 (CUDA)",
           kiln::precision_name, 4, "fp32");
  app.add_option("--precision-overrides", global.precision_overrides,
                 "CUDA: NODE=PRECISION[,...]: nodes computed in their own precision, e.g. one "
                 "layer in fp32 in an fp16 engine; a fused group by its first node (kiln "
                 "inspect --passes)")
      ->type_name("NODE=fp32,...");
  app.add_flag("--no-fp16-fallback", global.no_fp16_fallback,
               "CUDA fp16: run in fp16 the layers whose values the fp16 range guard finds "
               "outside fp16's range (by default they are kept in fp32)");
  add_enum(app, "--cpu-conv-algo", global.cpu_conv_algo,
           "CPU 3x3 convs: direct (exact fp32 rounding), auto (time Winograd too) or "
           "winograd",
           kiln::cpu_conv_algo_name, 3, "direct");
  add_enum(app, "--cpu-layout", global.cpu_layout,
           "CPU activation layouts between oneDNN kernels: auto (timed per group), nhwc, "
           "blocked, value (timed per value) or alternate (for tests)",
           kiln::cpu_layout_name, 5, "auto");
  std::string input_format = "float32-nchw", input_mean, input_std;
  double input_scale = 1;
  app.add_option("--input-format", input_format,
                 "image inputs as float32-nchw (as the model declares them), 8-bit pixels "
                 "(uint8-nchw, uint8-nhwc) normalized on the engine's device, or jpeg (kiln "
                 "bench: JPEGs decoded into uint8-nhwc, from --images DIR or synthetic)")
      ->check(CLI::IsMember({"float32-nchw", "uint8-nchw", "uint8-nhwc", "jpeg"}))
      ->capture_default_str();
  app.add_option("--input-mean", input_mean,
                 "8-bit and jpeg input: per-channel mean, one value or C comma-separated "
                 "(default: the model's kiln.mean metadata, else ImageNet's for 3 channels)");
  app.add_option("--input-std", input_std,
                 "8-bit and jpeg input: per-channel std (default: kiln.std, else ImageNet's)");
  app.add_option("--input-scale", input_scale,
                 "8-bit and jpeg input: the value pixel 255 stands for in --input-mean and "
                 "--input-std's units: 1 ([0,1] pixels) or 255 (raw pixel values)")
      ->capture_default_str();
  add_enum(app, "--cudnn-conv-path", global.cudnn_conv_path,
           "CUDA convs: auto (time both cuDNN APIs), legacy or graph", kiln::cudnn_conv_path_name,
           3, "auto");
  add_enum(app, "--space-to-depth", global.space_to_depth,
           "CUDA stride-2 stem convs as space-to-depth: auto (timed), on or off",
           kiln::space_to_depth_name, 3, "auto");
  app.add_option("--shapes", global.shapes,
                 "NAME=DIMS[,DIMS...]: the input shapes to build for (shape profiles), timed and "
                 "planned at load; one per input, the k-th DIMS of each forming profile k")
      ->type_name("NAME=1x3x224x224,8x3x224x224");
  app.add_option("--shape-range", global.shape_ranges,
                 "NAME=MIN:OPT:MAX: the shapes an input may take (as TensorRT's optimization "
                 "profiles); OPT is planned and timed at load, the others on first use")
      ->type_name("NAME=1x3x224x224:8x3x224x224:32x3x224x224");
  app.add_flag("--only-shapes", global.only_shapes,
               "with --shapes or --shape-range: refuse inputs outside them instead of planning "
               "them on first use");
  app.add_option("--gpu", global.gpu, "CUDA: which GPU (0, 1...; after CUDA_VISIBLE_DEVICES)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--cuda-graph", global.cuda_graph,
               "CUDA: capture each run in a CUDA graph once and replay it");
  app.add_flag("--no-tactics", global.no_tactics,
               "CUDA: take the libraries' first choice instead of timing each layer's options");
  app.add_option("--max-tactics", global.max_tactics,
                 "CUDA: time at most N candidates per layer and library path, in heuristic "
                 "order (0: all; a faster build)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--timing-cache", global.timing_cache,
                 "CUDA: file that keeps layer timings across builds");
  app.add_option(
         "--workspace-mib", global.workspace_mib,
         "CUDA: scratch memory limit per layer (default 1024 in fp32, 256 in tf32/fp16/bf16)")
      ->check(CLI::NonNegativeNumber);

  std::vector<Command> commands = {
      add_run_command(app, global),   add_inspect_command(app, global),
      add_bench_command(app, global), add_demo_command(app, global),
      add_build_command(app, global),
  };

  for (const Command& c : commands)
    c.app->footer(
        "Global options (--device, --threads, --precision, --cuda-graph, -v...) may also "
        "follow the subcommand; "
        "see kiln --help.");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    // CLI11 reports "kiln frobnicate" as a missing subcommand; name the word instead.
    if (app.get_subcommands().empty() && !app.remaining().empty())
      message = "unknown subcommand '" + app.remaining().front() + "'";
    return usage_error(message + " (see kiln --help)");
  }

  if (kiln::Status st =
          image_input_options(input_format, input_mean, input_std, input_scale, global);
      !st.is_ok())
    return usage_error(st.message());
  global.jpeg_input = input_format == "jpeg";
  for (const Command& c : commands)
    if (c.app->parsed() && global.jpeg_input && c.app->get_name() != "bench")
      return usage_error(
          "--input-format jpeg is kiln bench's (JPEGs decoded into the engine's uint8-nhwc "
          "input); kiln " +
          c.app->get_name() + " takes uint8-nhwc, or image files as they are (kiln run)");

  auto logger = spdlog::stderr_color_mt("kiln");
  logger->set_pattern("kiln: %l: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(global.verbose >= 3   ? spdlog::level::trace
                    : global.verbose == 2 ? spdlog::level::debug
                    : global.verbose == 1 ? spdlog::level::info
                                          : spdlog::level::warn);

  for (const Command& c : commands)
    if (c.app->parsed()) return c.run();
  return usage_error("no subcommand (see kiln --help)");
}

}  // namespace

int main(int argc, char** argv) {
  // Nothing may escape as a crash: a library exception becomes one error line.
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    print_error(std::string("internal error: ") + e.what());
  } catch (...) {
    print_error("internal error: unknown exception");
  }
  return kExitBadInput;
}
