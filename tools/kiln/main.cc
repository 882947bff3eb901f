// `kiln`: run, inspect and benchmark ONNX models; `kiln demo` classifies Fashion-MNIST.
//
// Global options (--device, --threads, -v) may come before or after the subcommand: the
// subcommands fall through to the root for options they do not define. Every failure
// prints one line "kiln: error: ..." to stderr; exit codes are in cli_common.h.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdio>
#include <deque>
#include <exception>
#include <vector>

#include "cli_common.h"
#include "kiln/precision_report.h"

namespace {

using namespace kiln::cli;

// One flag of options.def (option_list()): what the command line gave it, set on the engine
// options once parsing succeeded.
struct OptionFlag {
  const kiln::OptionInfo* info = nullptr;
  CLI::Option* option = nullptr;
  std::string text;                // a single-valued option's text
  std::vector<std::string> texts;  // a list option's
  bool on = false;                 // a bool option's
  bool given = false;              // a bool option's flag appeared
};

// The CLI's own additions to two options' help.
std::string flag_help(const kiln::OptionInfo& info) {
  if (info.name == "input_format")
    return info.help +
           ", or jpeg (kiln bench: JPEGs decoded into uint8-nhwc, from --images DIR "
           "or synthetic)";
  if (info.name == "input_mean" || info.name == "input_std")
    return info.help + "; in --input-scale's units";
  if (info.name == "precision")
    return info.help +
           "; or best (kiln build): 8-bit (fp8 on CUDA, int8 on the CPU) with each layer "
           "whose measured error on --calib samples exceeds --max-layer-error kept in a higher "
           "precision";
  return info.help;
}

// Adds one flag per option of options.def that has one: a bool option gets --flag and
// --no-flag, an enum its choices as the type, a list option may be repeated.
void add_option_flags(CLI::App& app, std::deque<OptionFlag>& flags) {
  for (const kiln::OptionInfo& info : kiln::option_list()) {
    if (info.flag.empty()) continue;
    OptionFlag& f = flags.emplace_back();
    f.info = &info;
    const std::string flag = "--" + info.flag;
    const std::string help = flag_help(info);
    if (info.type == "bool") {
      const bool on_by_default = info.default_text == "1";
      auto set = [&f](bool on) {
        return [&f, on](int64_t) {
          f.on = on;
          f.given = true;
        };
      };
      f.option =
          app.add_flag_function(flag, set(true), help + (on_by_default ? " (the default)" : ""));
      app.add_flag_function("--no-" + info.flag, set(false),
                            on_by_default ? "turn --" + info.flag + " off" : "(the default)");
      continue;
    }
    if (info.list) {
      f.option = app.add_option(flag, f.texts, help)->type_name("SPEC");
    } else {
      f.option = app.add_option(flag, f.text, help);
      if (!info.default_text.empty()) f.option->default_str(info.default_text);
      f.option->type_name(info.type == "int"      ? "INT"
                          : info.type == "bytes"  ? "BYTES"
                          : info.type == "floats" ? "X[,X...]"
                                                  : "TEXT");
    }
    if (!info.choices.empty()) {
      std::string type = "{";
      for (const std::string& c : info.choices) type += (type.size() > 1 ? "," : "") + c;
      f.option->type_name(type + (info.name == "input_format" ? ",jpeg}"
                                  : info.name == "precision"  ? ",best}"
                                                              : "}"));
    }
  }
}

// The given flags on global.engine: --input-format jpeg is uint8-nhwc (and jpeg_input), and
// --input-mean/--input-std are scaled to [0, 1] pixels by --input-scale.
kiln::Status set_option_flags(const std::deque<OptionFlag>& flags, double input_scale,
                              GlobalOptions& global) {
  bool mean_or_std = false;
  for (const OptionFlag& f : flags) {
    if (f.info->type == "bool" ? !f.given : f.option->count() == 0) continue;
    const std::string& name = f.info->name;
    std::vector<std::string> texts = f.info->type == "bool"
                                         ? std::vector<std::string>{f.on ? "1" : "0"}
                                     : f.info->list ? f.texts
                                                    : std::vector<std::string>{f.text};
    if (name == "input_format" && texts[0] == "jpeg") {
      global.jpeg_input = true;
      texts[0] = "uint8-nhwc";
    }
    if (name == "precision" && texts[0] == "best") {
      global.best_precision = true;
      continue;  // the format follows the device, set below
    }
    mean_or_std = mean_or_std || name == "input_mean" || name == "input_std";
    global.calibration_method_given |= name == "calibration_method";
    KILN_RETURN_IF_ERROR(kiln::set_option(global.engine, name, texts, "--" + f.info->flag));
  }
  kiln::EngineOptions& e = global.engine;
  if (global.best_precision)
    e.precision = e.device == kiln::Device::kCuda ? kiln::Precision::kFp8 : kiln::Precision::kInt8;
  if (e.input_format == kiln::InputFormat::kFloat32Nchw && (mean_or_std || input_scale != 1))
    return kiln::invalid_argument(
        "--input-mean, --input-std and --input-scale are for 8-bit or jpeg input "
        "(--input-format uint8-nchw, uint8-nhwc or jpeg); a float32 input is the model's own");
  if (!(input_scale > 0) || !std::isfinite(input_scale))
    return kiln::invalid_argument("--input-scale must be a positive number, not " +
                                  std::to_string(input_scale));
  for (float& v : e.input_mean) v = static_cast<float>(v / input_scale);
  for (float& v : e.input_std) v = static_cast<float>(v / input_scale);
  return kiln::validate_options(e);
}

// --keep NODE[,NODE...]: the named layers of a reduced-precision engine at the next higher
// precision (higher_precision: fp32, or fp16 in a CUDA int8/fp8 engine), as precision
// overrides. A node the overrides already name keeps its own.
kiln::Status keep_layers(const std::vector<std::string>& names, kiln::EngineOptions& e) {
  if (names.empty()) return kiln::Status::ok();
  const kiln::Precision p = e.precision;
  if (p == kiln::Precision::kFp32 || p == kiln::Precision::kTf32)
    return kiln::invalid_argument(std::string("--keep keeps layers of a reduced-precision engine "
                                              "(fp16, bf16, int8 or fp8), not ") +
                                  kiln::precision_name(p));
  const kiln::Precision up = kiln::higher_precision(e);
  for (const std::string& list : names) {
    size_t start = 0;
    while (start <= list.size()) {
      const size_t comma = std::min(list.find(',', start), list.size());
      const std::string node = list.substr(start, comma - start);
      if (node.empty())
        return kiln::invalid_argument("--keep: an empty node name in '" + list + "'");
      e.precision_overrides.emplace(node, up);
      start = comma + 1;
    }
  }
  return kiln::validate_options(e);
}

int run_main(int argc, char** argv) {
  GlobalOptions global;
  for (int i = 0; i < argc; ++i)
    global.command_line += (i ? " " : "") + std::string(i ? argv[i] : "kiln");
  CLI::App app{"kiln: an ONNX inference engine for vision models", "kiln"};
  app.set_version_flag("--version", std::string("kiln ") + KILN_VERSION);
  app.fallthrough();
  app.require_subcommand(1);
  app.add_flag("-v,--verbose", global.verbose, "log more (-vv, -vvv for even more)");
  std::deque<OptionFlag> flags;
  add_option_flags(app, flags);
  app.add_flag("--no-fp16-fallback", global.no_fp16_fallback,
               "CUDA fp16: run in fp16 the layers whose values the fp16 range guard finds "
               "outside fp16's range (by default they are kept in fp32)");
  std::vector<std::string> keep;
  app.add_option("--keep", keep,
                 "NODE[,NODE...]: keep these layers of a reduced-precision engine at the next "
                 "higher precision (fp32; fp16 in a CUDA int8/fp8 engine), as "
                 "--precision-overrides would")
      ->type_name("NODES");
  double input_scale = 1;
  app.add_option("--input-scale", input_scale,
                 "8-bit and jpeg input: the value pixel 255 stands for in --input-mean and "
                 "--input-std's units: 1 ([0,1] pixels) or 255 (raw pixel values)")
      ->capture_default_str();

  std::vector<Command> commands = {
      add_run_command(app, global),   add_inspect_command(app, global),
      add_bench_command(app, global), add_demo_command(app, global),
      add_build_command(app, global), add_quantize_command(app, global),
      add_serve_command(app, global), add_perf_command(app, global),
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

  if (kiln::Status st = set_option_flags(flags, input_scale, global); !st.is_ok())
    return usage_error(st.message());
  if (kiln::Status st = keep_layers(keep, global.engine); !st.is_ok())
    return usage_error(st.message());
  // Flags one subcommand owns.
  for (const Command& c : commands) {
    if (!c.app->parsed()) continue;
    const std::string name = c.app->get_name();
    if (global.best_precision && name != "build")
      return usage_error(
          "--precision best is kiln build's: it measures each layer's error on --calib "
          "samples and writes the precisions it picks into a plan file, which kiln " +
          name + " then takes");
    if (global.jpeg_input && name != "bench")
      return usage_error(
          "--input-format jpeg is kiln bench's (JPEGs decoded into the engine's uint8-nhwc "
          "input); kiln " +
          name + " takes uint8-nhwc, or image files as they are (kiln run)");
  }

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
