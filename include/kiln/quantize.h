// Writing a quantized model that other runtimes run: the int8 engine's quantization as
// QuantizeLinear / DequantizeLinear in the ONNX file.
//
//   auto int8 = kiln::Engine::load("model.onnx", options);     // precision int8, calibrated
//   auto r = kiln::write_qdq_model("model.onnx", int8_input_amax(**int8), "model.qdq.onnx");
//
// Each Conv, Gemm and MatMul with constant float32 weights whose input has a magnitude
// (amax) gets, as the int8 engine computes it:
//   - its input through QuantizeLinear → DequantizeLinear, int8, zero point 0, scale amax / 127
//     (one pair per value, shared by every layer reading it);
//   - its weights as int8 codes with one scale per output channel, max|w_c| / 127, through a
//     DequantizeLinear along that axis (Conv: 0; Gemm: 0 with transB, else 1; MatMul: 1).
// ONNX Runtime, TensorRT and kiln itself run the file. Per-channel DequantizeLinear needs
// opset 13: an older model is refused, as is anything that is not a model kiln imports.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "kiln/engine.h"
#include "kiln/status.h"

namespace kiln {

struct QdqModelReport {
  std::vector<std::string> quantized;  // the layers written with Q/DQ, by node name
  std::vector<std::string> skipped;    // "<node> (<op>): <why>", the layers left in float
};

// The magnitude of every quantized layer's input in an int8 engine (its report), by value
// name.
std::map<std::string, double> int8_input_amax(const Engine& int8_engine);

// Writes `model_path` to `out_path` with the Q/DQ above, for the inputs `amax` names. Layers
// named in `keep` stay in float.
Result<QdqModelReport> write_qdq_model(const std::string& model_path,
                                       const std::map<std::string, double>& amax,
                                       const std::string& out_path,
                                       const std::set<std::string>& keep = {});

}  // namespace kiln
