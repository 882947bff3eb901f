// fuse_fp8_conv: on CUDA fp8 engines, a Conv that reads its input through DequantizeLinear of
// float8 e4m3 codes and whose weights lie on a per-channel e4m3 grid reads the codes
// themselves, for an fp8 tensor-core kernel:
//
//   x → Q(s, e4m3) → codes → DQ(s) → Conv(W, B)[epilogue]
//     ⇒ x → Q(s, e4m3) → codes → Conv(W, B)[fp8 in(s), weights(s_w) → epilogue]
//
//   y[m] = Σ e4m3(codes)·s · W[m] + B[m] = (Σ e4m3(codes) · e4m3(W[m] / s_w[m])) · s · s_w[m] +
//   B[m]
//
// with s_w[m] = max|W[m]| / 448, the grid quantize_int8 rounds an fp8 engine's weights to.
// The Q stays: it writes the codes the kernel reads (one byte per value where the DQ wrote two).
// Changes no number: the reference (run_node) dequantizes the codes the same way.
//
// Matched: a per-tensor float32 scalar scale > 0 on the DQ, a float8 zero point of 0 or none;
// weights a float32 rank-4 constant whose every element divided by its channel's scale is an
// e4m3 value. Anything else is left as it is.
#include <cmath>

#include "passes/pass.h"
#include "quant/weight_scales.h"

namespace kiln {

namespace {

// The DQ's scale where `x` is the float output of a per-tensor DequantizeLinear of e4m3 codes
// with no zero point other than 0; 0 otherwise.
float codes_scale(const Value* x) {
  const Node* dq = x ? x->producer : nullptr;
  if (!dq || dq->op != OpKind::DequantizeLinear) return 0.f;
  const Value* codes = dq->input(0);
  if (!codes || codes->dtype != DataType::kFloat8E4M3) return 0.f;
  const Value* s = dq->input(1);
  if (!s || !s->is_constant() || s->constant.dtype() != DataType::kFloat32 ||
      s->constant.numel() != 1)
    return 0.f;
  const Value* z = dq->input(2);
  if (z &&
      (!z->is_constant() || z->constant.numel() != 1 || (z->constant.data<uint8_t>()[0] & 0x7f)))
    return 0.f;
  const float v = *s->constant.data<float>();
  return std::isfinite(v) && v > 0.f ? v : 0.f;
}

bool fuse_one(Graph& g, Node* conv, QuantizationReport* report) {
  if (conv->epilogue.int8() || conv->epilogue.affine_input >= 0) return false;
  Value* x = conv->input(0);
  const float s = codes_scale(x);
  const Value* w = conv->input(1);
  if (s == 0.f || !w || !w->is_constant()) return false;
  if (w->constant.rank() != 4) return false;
  std::vector<float> ws = quant::grid_weight_scales(w->constant, 448.f, quant::round_e4m3);
  if (ws.empty()) return false;
  g.set_input(conv, 0, x->producer->input(0));  // the codes
  conv->epilogue.input_scale = s;
  conv->epilogue.weight_scales = std::move(ws);
  if (report)
    for (auto& layer : report->layers)
      if (layer.node == conv->name) layer.runs = "fp8";
  return true;
}

}  // namespace

Result<bool> fuse_fp8_conv(Graph& g, QuantizationReport* report) {
  KILN_ASSIGN_OR_RETURN(const bool changed, fuse_each(g, OpKind::Conv, [&](Node* n) {
                          return fuse_one(g, n, report);
                        }));
  if (changed) KILN_RETURN_IF_ERROR(eliminate_dead_nodes(g).status());
  return changed;
}

}  // namespace kiln
