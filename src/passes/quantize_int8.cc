// quantize_int8: an int8 or fp8 engine's graph, after every other pass. Each quantizable layer
// (Conv, Gemm, and MatMul of a rank-2 constant) reads its float32 input through
//
//   x → QuantizeLinear(scale amax / 127, zero point 0, int8) → DequantizeLinear → layer
//
// (uint8 codes with scale amax / 255 where x is never negative, a ReLU's output; one pair per
// value, shared by every layer reading it), and its weights rounded to int8 per
// output channel (symmetric: scale max|w_c| / 127), kept as the float values those codes
// stand for. That is the model an 8-bit kernel computes: it reads the int8 codes of both and
// scales the int32 sums. Until a layer has such a kernel, its float kernel computes the same
// products in float, so the engine gives the 8-bit engine's numbers.
//
// fp8 engines: the same pairs with float8 e4m3 codes (scale amax / 448; e4m3 is signed, so no
// unsigned variant), and weights rounded per output channel onto the e4m3 grid scaled to
// max|w_c| / 448.
#include <cmath>
#include <cstring>
#include <set>

#include "passes/pass.h"
#include "quant/weight_scales.h"

namespace kiln {

namespace {

// The weight's input index and the axis of its output channels, or -1 where the node is not a
// layer kiln quantizes.
struct WeightAxis {
  int input = -1;
  int axis = -1;
};

WeightAxis weight_axis(const Node& n) {
  const Value* w = n.input(1);
  const int axis = quant::output_channel_axis(n);
  if (!w || !w->has_shape || axis < 0) return {};
  const size_t rank = w->dims.size();
  return (n.op == OpKind::Conv ? rank >= 3 : rank == 2) ? WeightAxis{1, axis} : WeightAxis{};
}

bool quantizable_op(OpKind op) {
  return op == OpKind::Conv || op == OpKind::Gemm || op == OpKind::MatMul;
}

// The largest code of each format, which amax maps to.
float format_max(Precision format) { return format == Precision::kFp8 ? 448.f : 127.f; }

// `v` / scale rounded to the format's code (int8: half to even, as QuantizeLinear does; fp8:
// to the nearest e4m3 value), times the scale again.
float round_to_grid(float v, float scale, Precision format) {
  if (format == Precision::kFp8) return quant::round_e4m3(v / scale) * scale;
  return std::nearbyint(v / scale) * scale;
}

// `w` rounded per slice of `axis` onto the format's grid: int8, 127 levels each side of zero
// (every element becomes round(w / s) · s with s = max|w| of its slice / 127); fp8, the e4m3
// values scaled by max|w| of the slice / 448.
Tensor fake_quantized_weights(const Tensor& w, int axis, Precision format) {
  Tensor r(DataType::kFloat32, w.shape());
  const Shape& s = w.shape();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t channels = s[axis];
  const float* p = w.data<float>();
  float* q = r.data<float>();
  const std::vector<float> amax = quant::channel_absmax(w, axis);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c) {
      const float scale = amax[c] / format_max(format);
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = (o * channels + c) * inner + i;
        q[k] = scale > 0.f ? round_to_grid(p[k], scale, format) : 0.f;
      }
    }
  return r;
}

// Whether `x` is never negative by construction: the output of a Relu, of a layer whose
// epilogue ends in Relu or in a Clip from 0 or above (ReLU6), or a pooling of such a value.
bool never_negative(const Value* x) {
  const Node* p = x ? x->producer : nullptr;
  if (!p) return false;
  if (p->op == OpKind::Relu) return true;
  if (p->op == OpKind::Clip) {  // a standalone ReLU6: its min a constant ≥ 0
    const Value* lo = p->input(1);
    return lo && lo->is_constant() && lo->constant.numel() == 1 &&
           lo->constant.to_floats()[0] >= 0.f;
  }
  const Epilogue& e = p->epilogue;
  if (e.act == Activation::kRelu || (e.act == Activation::kClip && e.alpha >= 0.f)) return true;
  const bool pool = p->op == OpKind::MaxPool || p->op == OpKind::AveragePool ||
                    p->op == OpKind::GlobalAveragePool || p->op == OpKind::GlobalMaxPool;
  return pool && e.empty() && never_negative(p->input(0));
}

// The dequantized copy of `x` (QuantizeLinear → DequantizeLinear, zero point 0). int8: uint8
// codes over [0, amax] (scale amax / 255) where `x` is never negative, int8 over ±amax (scale
// amax / 127) otherwise — the same magnitude, one more bit where half the int8 grid would
// stay unused. fp8: e4m3 codes, scale amax / 448.
Value* quantized_copy(Graph& g, Value* x, double amax, Precision format) {
  const bool fp8 = format == Precision::kFp8;
  const bool u8 = !fp8 && never_negative(x);
  const DataType dt = fp8 ? DataType::kFloat8E4M3 : u8 ? DataType::kUInt8 : DataType::kInt8;
  const std::string tag = fp8 ? "/fp8" : "/int8";
  const double top = fp8 ? 448.0 : u8 ? 255.0 : 127.0;
  Value* scale = g.add_constant(x->name + tag + "_scale",
                                Tensor::from_floats({}, {static_cast<float>(amax / top)}));
  Tensor zp(dt, {});
  std::memset(zp.raw(), 0, 1);
  Value* zero = g.add_constant(x->name + tag + "_zero_point", std::move(zp));
  Value* codes = g.add_value(x->name + tag);
  codes->dtype = dt;
  codes->has_shape = x->has_shape;
  codes->dims = x->dims;
  Value* back = g.add_value(x->name + tag + "_dequantized");
  back->dtype = DataType::kFloat32;
  back->has_shape = x->has_shape;
  back->dims = x->dims;
  g.add_node(OpKind::QuantizeLinear, x->name + "/quantize", {x, scale, zero}, {codes});
  g.add_node(OpKind::DequantizeLinear, x->name + "/dequantize", {codes, scale, zero}, {back});
  return back;
}

// Why `n` stays in float, or "" where it is quantized (`amax` null: where it would be, given a
// scale for its input).
std::string float_reason(const Node& n, const std::map<std::string, double>* amax) {
  const Value* x = n.input(0);
  const WeightAxis wa = weight_axis(n);
  if (!x || x->dtype != DataType::kFloat32) return "its input is not float32";
  if (wa.input < 0) return "its weights are not of a shape kiln quantizes";
  const Value* w = n.input(wa.input);
  if (!w->is_constant() || w->dtype != DataType::kFloat32)
    return "its weights are not a float32 constant";
  if (x->is_constant()) return "its input is a constant";
  if (!amax) return "";
  auto it = amax->find(x->name);
  if (it == amax->end()) return "the calibration has no scale for its input '" + x->name + "'";
  if (!std::isfinite(it->second) || it->second <= 0)
    return "its input '" + x->name + "' was all zeros (or not finite) in calibration";
  return "";
}

}  // namespace

std::vector<std::string> int8_calibration_values(const Graph& g) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto& n : g.nodes()) {
    if (!quantizable_op(n->op) || !float_reason(*n, nullptr).empty()) continue;
    if (seen.insert(n->input(0)->name).second) names.push_back(n->input(0)->name);
  }
  return names;
}

Result<bool> quantize_int8(Graph& g, const std::map<std::string, double>& amax,
                           QuantizationReport* report, const PrecisionMap* keep, Precision format) {
  if (!precision_is_8bit(format))
    return internal_error(std::string("quantize_int8 for precision ") + precision_name(format));
  const std::string fmt = precision_name(format);
  std::vector<Node*> layers;
  for (const auto& n : g.nodes())
    if (quantizable_op(n->op)) layers.push_back(n.get());
  std::map<const Value*, Value*> dequantized;  // per input value, its Q → DQ copy
  bool changed = false;
  for (Node* n : layers) {
    std::string why = float_reason(*n, &amax);
    if (why.empty() && keep && keep->count(n->name))
      why =
          std::string("kept in ") + precision_name(keep->at(n->name)) + " by a precision override";
    if (!why.empty()) {
      if (report) report->float_layers.push_back(n->describe() + ": " + why);
      continue;
    }
    Value* x = n->input(0);
    const double a = amax.at(x->name);
    Value*& copy = dequantized[x];
    if (!copy) copy = quantized_copy(g, x, a, format);
    g.set_input(n, 0, copy);
    const WeightAxis wa = weight_axis(*n);
    Value* w = n->input(wa.input);
    Value* rounded = g.add_constant(w->name + "/" + fmt + "_rounded",
                                    fake_quantized_weights(w->constant, wa.axis, format));
    g.set_input(n, wa.input, rounded);
    if (report) report->layers.push_back({n->name, op_name(n->op), x->name, a, fmt + " simulated"});
    changed = true;
  }
  if (changed) {
    KILN_RETURN_IF_ERROR(g.topo_sort());
    g.remove_unused_values();
  }
  return changed;
}

}  // namespace kiln
