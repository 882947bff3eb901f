// The operator forms of quantized ONNX models, rewritten on import into the standard
// QuantizeLinear / DequantizeLinear around float ops, which kiln runs (and, where the pattern
// allows, runs in 8 bits: passes/fuse_int8_conv.cc):
//
//   QLinearConv(x, xs, xz, w, ws, wz, ys, yz, B)  → Q(Conv(DQ(x), W, b), ys, yz)
//   QLinearMatMul(a, as, az, b, bs, bz, ys, yz)   → Q(MatMul(DQ(a), B), ys, yz)
//   ConvInteger(x, w, xz, wz)                     → Cast<int32>(Conv(DQ(x, 1, xz), W))
//   MatMulInteger(a, b, az, bz)                   → Cast<int32>(MatMul(DQ(a, 1, az), B))
//   DynamicQuantizeLinear(x) → y, ys, yz          → the ReduceMax / Clip / Q steps of its
//                                                   definition (ys = (max(x,0) − min(x,0)) / 255)
//   com.microsoft QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
//   QLinearGlobalAveragePool, QLinearAveragePool, QLinearConcat
//                                                 → Q(op(DQ(inputs)…), ys, yz)
//   com.microsoft QuantizeLinear, DequantizeLinear → the default domain's
//
// Constant weights are dequantized here, once, into float initializers (W = (w − wz) · ws,
// per output channel or column; the int32 bias as B · xs · ws), so per-channel scales need no
// DequantizeLinear `axis` (opset 13) in older models. The rewrite computes what the integer
// operators define up to float rounding: a sum of products in float32 instead of int32, and
// a requantization that divides instead of multiplying by xs·ws/ys — a result may differ from
// ONNX Runtime's by one quantization step where it falls near a rounding boundary.
//
// Forms not covered (per-row activation scales, a non-constant per-channel weight in an
// opset < 13 model, channels_last pooling) are refused, naming the node and what is missing.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "kiln/status.h"

namespace kiln {

// Rewrites `model`'s main graph in place. `base_dir` resolves external data of constants.
// `changed` says whether any node was rewritten.
Status expand_quantized_operators(onnx::ModelProto& model, const std::string& base_dir,
                                  bool* changed);

}  // namespace kiln
