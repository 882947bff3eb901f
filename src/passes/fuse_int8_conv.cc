// fuse_int8_conv: a Conv, Gemm or MatMul that reads its input through QuantizeLinear →
// DequantizeLinear and whose constant weights lie on a per-output-channel int8 grid becomes one
// int8 layer (Epilogue::input_scale and weight_scales), which an 8-bit kernel runs on the codes
// (oneDNN's convolution, or its inner product for Gemm and MatMul):
//
//   x → Q(s, z, int8|uint8) → DQ(s, z) → Conv(W, B)[epilogue]
//     ⇒ Conv(x, W, B)[int8 in(s, z), weights(s_w) → epilogue]
//
//   y[m] = Σ (q_x − z)·s · W[m] + B[m] = (Σ (q_x − z) · q_w[m]) · s · s_w[m] + B[m]
//
// with q_x = clamp(round(x / s) + z, lo, hi) ([-128, 127] for int8 codes, [0, 255] for uint8:
// ONNX Runtime's default for activations) and W[m] = q_w[m] · s_w[m], |q_w| ≤ 127 (symmetric
// per output channel: s_w[m] = max|W[m]| / 127, which quantize_int8 rounds the weights to).
// The rewrite changes no number: every kernel that takes the node applies the same rounding
// (the reference through run_node). The Q → DQ pair stays while anything else reads it.
//
// Matched: per-tensor float32 scalar scale > 0 and a scalar zero point on both Q and DQ (the
// same ones), int8 or uint8 codes; weights a float32 constant (a 2-D Conv's rank 4, a Gemm's or
// MatMul's rank 2, channels as weight_grid says), every element within 1e-6
// relative of its code times its channel's scale. Anything else is left as it is, in float with the
// Q → DQ rounding applied.
#include <cmath>
#include <optional>

#include "passes/pass.h"
#include "quant/weight_scales.h"

namespace kiln {

namespace {

// The scalar float32 constant of `v`, or 0 where it is not one (or not positive and finite).
float scalar_scale(const Value* v) {
  if (!v || !v->is_constant() || v->constant.dtype() != DataType::kFloat32 ||
      v->constant.numel() != 1)
    return 0.f;
  const float s = *v->constant.data<float>();
  return std::isfinite(s) && s > 0.f ? s : 0.f;
}

// The zero point `v` gives codes of type `codes` (int8 or uint8): 0 where omitted, the
// value of a scalar constant of that type; nothing otherwise.
std::optional<int> zero_point(const Value* v, DataType codes) {
  if (!v) return 0;
  if (!v->is_constant() || v->constant.dtype() != codes || v->constant.numel() != 1) return {};
  return codes == DataType::kUInt8 ? int{*v->constant.data<uint8_t>()}
                                   : int{*v->constant.data<int8_t>()};
}

// The 8-bit grid of `x`'s Q → DQ pair where `x` is the output of one (int8 or uint8 codes,
// one per-tensor scale and zero point, the same on both); nothing otherwise.
struct Grid {
  float scale;
  int zero_point;
  bool uint8;
};
std::optional<Grid> pair_grid(const Value* x) {
  const Node* dq = x ? x->producer : nullptr;
  if (!dq || dq->op != OpKind::DequantizeLinear) return {};
  const Value* codes = dq->input(0);
  const Node* q = codes ? codes->producer : nullptr;
  if (!q || q->op != OpKind::QuantizeLinear) return {};
  if (codes->dtype != DataType::kInt8 && codes->dtype != DataType::kUInt8) return {};
  const Value* src = q->input(0);
  if (!src || src->dtype != DataType::kFloat32) return {};
  const float s = scalar_scale(dq->input(1));
  if (s == 0.f || scalar_scale(q->input(1)) != s) return {};
  const auto zq = zero_point(q->input(2), codes->dtype);
  const auto zdq = zero_point(dq->input(2), codes->dtype);
  if (!zq || !zdq || *zq != *zdq) return {};
  return Grid{s, *zq, codes->dtype == DataType::kUInt8};
}

// The per-output-channel int8 grid of the layer's constant float32 weights (input 1: a 2-D
// Conv's rank 4, a Gemm's or MatMul's rank 2, channels on output_channel_axis); empty where the
// weights are not on such a grid.
std::vector<float> weight_grid(const Node& n) {
  const Value* w = n.input(1);
  if (!w || !w->is_constant() || w->constant.dtype() != DataType::kFloat32) return {};
  if (w->constant.rank() != (n.op == OpKind::Conv ? 4 : 2)) return {};
  return quant::grid_weight_scales(
      w->constant, 127.f, [](float v) { return std::nearbyint(v); }, quant::output_channel_axis(n));
}

bool fuse_one(Graph& g, Node* layer, QuantizationReport* report) {
  if (layer->epilogue.int8() || layer->epilogue.affine_input >= 0) return false;
  Value* x = layer->input(0);
  const std::optional<Grid> grid = pair_grid(x);
  if (!grid) return false;
  std::vector<float> ws = weight_grid(*layer);
  if (ws.empty()) return false;
  // Rewrite: read the pair's float input, with the rounding on the node.
  Value* src = x->producer->input(0)->producer->input(0);
  g.set_input(layer, 0, src);
  layer->epilogue.input_scale = grid->scale;
  layer->epilogue.input_zero_point = grid->zero_point;
  layer->epilogue.input_uint8 = grid->uint8;
  layer->epilogue.weight_scales = std::move(ws);
  if (report)
    for (auto& l : report->layers)
      if (l.node == layer->name) l.runs = "int8";
  return true;
}

}  // namespace

Result<bool> fuse_int8_conv(Graph& g, QuantizationReport* report) {
  bool changed = false;
  for (OpKind op : {OpKind::Conv, OpKind::Gemm, OpKind::MatMul}) {
    KILN_ASSIGN_OR_RETURN(const bool fused,
                          fuse_each(g, op, [&](Node* n) { return fuse_one(g, n, report); }));
    changed = changed || fused;
  }
  if (changed) KILN_RETURN_IF_ERROR(eliminate_dead_nodes(g).status());
  return changed;
}

}  // namespace kiln
