// `kiln quantize MODEL.onnx --calib DIR|FILE.npy -o MODEL.qdq.onnx`: calibrate as an int8 build
// does (--calib-method, --calib-samples, --calib-cache, --precision-overrides to keep layers
// in float) and write the model with the int8 engine's quantization as QuantizeLinear /
// DequantizeLinear (kiln/quantize.h), a file ONNX Runtime, TensorRT and kiln run.
#include <cstdio>

#include "cli_common.h"
#include "kiln/quantize.h"

namespace kiln::cli {

namespace {

struct QuantizeOptions {
  std::string model;
  std::string output;
};

int run(const QuantizeOptions& o, const GlobalOptions& global) {
  if (is_plan_file(o.model))
    return usage_error("kiln quantize reads an ONNX model, not a plan file: " + o.model);
  if (global.engine.precision == Precision::kFp8)
    return usage_error(
        "kiln quantize writes int8 Q/DQ models: ONNX's float8 types (opset 19) are newer than "
        "the ONNX library kiln reads and writes models with (build an fp8 engine with kiln "
        "build --precision fp8 instead)");
  GlobalOptions g = global;
  g.engine.precision = Precision::kInt8;
  if (g.engine.calibration_data.empty() && g.engine.calibration_cache.empty())
    return usage_error(
        "kiln quantize needs calibration samples (--calib DIR|FILE.npy) or a "
        "calibration cache (--calib-cache FILE)");
  auto engine = load_engine(o.model, g, {});
  if (!engine.is_ok()) return fail(engine.status());
  std::set<std::string> keep;
  for (const auto& [node, precision] : g.engine.precision_overrides) keep.insert(node);
  auto r = write_qdq_model(o.model, int8_input_amax(**engine), o.output, keep);
  if (!r.is_ok()) return fail(r.status());
  for (const std::string& line : r->skipped)
    std::fprintf(stderr, "kiln: in float: %s\n", line.c_str());
  std::printf(
      "wrote %s: %zu layers quantized to int8 (inputs per tensor, weights per output "
      "channel), %zu left in float\n",
      o.output.c_str(), r->quantized.size(), r->skipped.size());
  return kExitOk;
}

}  // namespace

Command add_quantize_command(CLI::App& root, const GlobalOptions& global) {
  auto o = std::make_shared<QuantizeOptions>();
  CLI::App* app = root.add_subcommand(
      "quantize", "calibrate and write the model with int8 QuantizeLinear/DequantizeLinear");
  app->add_option("model", o->model, "the .onnx model")->required();
  app->add_option("-o,--output", o->output, "the Q/DQ .onnx model to write")->required();
  return {app, [o, &global] { return run(*o, global); }};
}

}  // namespace kiln::cli
