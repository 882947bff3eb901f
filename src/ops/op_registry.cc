#include "ops/op_registry.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/check.h"
#include "core/half.h"
#include "quant/weight_scales.h"

namespace kiln {

namespace {
std::array<OpDef, static_cast<size_t>(OpKind::kCount)>& table() {
  static std::array<OpDef, static_cast<size_t>(OpKind::kCount)> t{};
  return t;
}
}  // namespace

bool OpRegistry::add(OpKind op, OpDef def) {
  KILN_CHECK(op != OpKind::kCount && def.infer && def.run);
  KILN_CHECK(table()[static_cast<size_t>(op)].infer == nullptr);  // registered twice
  table()[static_cast<size_t>(op)] = def;
  return true;
}

const OpDef* OpRegistry::find(OpKind op) {
  if (op == OpKind::kCount) return nullptr;
  const OpDef& d = table()[static_cast<size_t>(op)];
  return d.infer ? &d : nullptr;
}

namespace {

// The op's own inputs: `in` without the epilogue's (residual, channel affine, bias).
template <class T>
std::vector<T> without_epilogue_inputs(const Node& node, const std::vector<T>& in) {
  std::vector<T> r = in;
  const std::vector<int> ks = node.epilogue.inputs();
  for (auto it = ks.rbegin(); it != ks.rend(); ++it)
    if (*it < static_cast<int>(r.size())) r.erase(r.begin() + *it);
  return r;
}

// `x` (float32) on the 8-bit grid of `e` (Epilogue::input_scale, input_zero_point,
// input_uint8): (clamp(round_half_even(x / s) + z, lo, hi) − z) · s, what QuantizeLinear →
// DequantizeLinear give.
Tensor int8_rounded(const Tensor& x, const Epilogue& e) {
  Tensor r(DataType::kFloat32, x.shape());
  const float* p = x.data<float>();
  float* q = r.data<float>();
  const float lo = e.input_uint8 ? 0.f : -128.f, hi = e.input_uint8 ? 255.f : 127.f;
  const float z = static_cast<float>(e.input_zero_point), s = e.input_scale;
  for (int64_t i = 0; i < x.numel(); ++i)
    q[i] = (std::min(hi, std::max(lo, std::nearbyint(p[i] / s) + z)) - z) * s;
  return r;
}

// fp8 codes `x` as the float32 values they stand for: code · scale.
Tensor fp8_dequantized(const Tensor& x, float scale) {
  Tensor r(DataType::kFloat32, x.shape());
  load_floats(x.raw(), static_cast<size_t>(x.numel()), DataType::kFloat8E4M3, r.data<float>());
  float* q = r.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) q[i] *= scale;
  return r;
}

}  // namespace

Status infer_node(const OpDef& def, const Node& node, const std::vector<TensorDesc>& in,
                  std::vector<TensorDesc>& out) {
  if (node.epilogue.empty()) return def.infer(node, in, out);
  const Epilogue& e = node.epilogue;
  for (int k : e.inputs())
    if (k >= static_cast<int>(in.size()) || !in[k].present())
      return invalid_argument("epilogue input " + std::to_string(k) + " is missing");
  std::vector<TensorDesc> own = without_epilogue_inputs(node, in);
  // fp8 codes in (fuse_fp8_conv): the op sees the float values they stand for.
  const bool codes = e.int8() && !own.empty() && own[0].dtype == DataType::kFloat8E4M3;
  if (codes) own[0].dtype = DataType::kFloat32;
  KILN_RETURN_IF_ERROR(def.infer(node, own, out));
  if (out.empty() || !dtype_is_float(out[0].dtype))
    return unsupported("a fused epilogue needs a float output");
  const int k = e.residual_input;
  if (k >= 0 && (in[k].shape != out[0].shape || in[k].dtype != out[0].dtype))
    return invalid_argument("epilogue residual " + std::string(dtype_name(in[k].dtype)) +
                            shape_str(in[k].shape) + " does not match the output " +
                            dtype_name(out[0].dtype) + shape_str(out[0].shape));
  if (e.affine_input >= 0) {
    // Only fuse_concat_affine makes a channel affine, on Concat: a kernel of another op
    // would not know to apply it.
    if (node.op != OpKind::Concat)
      return internal_error("a channel-affine epilogue on " + std::string(op_name(node.op)) +
                            " (only Concat carries one)");
    if (out[0].shape.size() < 2)
      return invalid_argument("a channel-affine epilogue needs an output of rank ≥ 2");
    const Shape want{out[0].shape[1]};
    for (int j : {e.affine_input, e.affine_input + 1})
      if (in[j].dtype != DataType::kFloat32 || in[j].shape != want)
        return invalid_argument("epilogue " + std::string(j == e.affine_input ? "scale" : "shift") +
                                " " + dtype_name(in[j].dtype) + shape_str(in[j].shape) +
                                ": expected float32" + shape_str(want));
  }
  if (e.int8()) {
    // Only fuse_int8_conv and fuse_fp8_conv make 8-bit operands, on Conv, Gemm and MatMul:
    // another op's kernel would not round.
    const int axis = quant::output_channel_axis(node);  // the weights' output channels
    if (axis < 0)
      return internal_error("8-bit operands on " + std::string(op_name(node.op)) +
                            " (only Conv, Gemm and MatMul carry them)");
    const bool rank_ok = in.size() >= 2 &&
                         (node.op == OpKind::Conv ? !in[1].shape.empty() : in[1].shape.size() == 2);
    if ((in[0].dtype != DataType::kFloat32 && !codes) || !rank_ok ||
        in[1].shape[axis] != static_cast<int64_t>(e.weight_scales.size()))
      return invalid_argument("8-bit operands: a float32 input (or fp8 codes) and " +
                              std::to_string(e.weight_scales.size()) +
                              " weight scales for weights " +
                              (in.size() >= 2 ? shape_str(in[1].shape) : std::string("(none)")));
  }
  if (e.bias_input >= 0) {
    // Only fuse_epilogue makes a bias, on MatMul: another op's kernel would not apply it.
    if (node.op != OpKind::MatMul)
      return internal_error("a bias epilogue on " + std::string(op_name(node.op)) +
                            " (only MatMul carries one)");
    const TensorDesc& b = in[e.bias_input];
    if (out[0].shape.empty() || b.dtype != DataType::kFloat32 ||
        b.shape != Shape{out[0].shape.back()})
      return invalid_argument("epilogue bias " + std::string(dtype_name(b.dtype)) +
                              shape_str(b.shape) + " does not match the last axis of the output " +
                              shape_str(out[0].shape));
  }
  return Status::ok();
}

Status run_node(const OpDef& def, const Node& node, const std::vector<const Tensor*>& in,
                const std::vector<Tensor*>& out) {
  if (node.epilogue.empty()) return def.run(node, in, out);
  const Epilogue& e = node.epilogue;
  std::vector<const Tensor*> own = without_epilogue_inputs(node, in);
  Tensor rounded;
  if (e.int8()) {
    rounded = in[0]->dtype() == DataType::kFloat8E4M3 ? fp8_dequantized(*in[0], e.input_scale)
                                                      : int8_rounded(*in[0], e);
    own[0] = &rounded;
  }
  KILN_RETURN_IF_ERROR(def.run(node, own, out));
  Tensor& y = *out[0];
  const Tensor* r = e.residual_input >= 0 ? in[e.residual_input] : nullptr;
  const float* scale = e.affine_input >= 0 ? in[e.affine_input]->data<float>() : nullptr;
  const float* shift = e.affine_input >= 0 ? in[e.affine_input + 1]->data<float>() : nullptr;
  const float* bias = e.bias_input >= 0 ? in[e.bias_input]->data<float>() : nullptr;
  const int64_t last = y.shape().empty() ? 1 : y.shape().back();
  // The channel of element i: (i / inner) % C over [N, C, inner...].
  const int64_t c = y.shape().size() >= 2 ? y.shape()[1] : 1;
  const int64_t inner = c > 0 && y.numel() > 0 ? y.numel() / (y.shape()[0] * c) : 1;
  for (int64_t i = 0; i < y.numel(); ++i) {
    // y = act(y·scale[c] + shift[c] + bias[n] + residual), computed in float (double for float64
    // would differ from every backend's float epilogue only below float precision).
    float v = static_cast<float>(y.at_double(i));
    if (scale) {
      const int64_t ch = (i / inner) % c;
      v = v * scale[ch] + shift[ch];
    }
    if (bias) v += bias[i % last];
    if (r) v += static_cast<float>(r->at_double(i));
    v = apply_activation(e.act, e.alpha, e.beta, v);
    switch (y.dtype()) {
      case DataType::kFloat32: y.data<float>()[i] = v; break;
      case DataType::kFloat64: y.data<double>()[i] = v; break;
      case DataType::kFloat16: y.data<uint16_t>()[i] = float_to_half_bits(v); break;
      case DataType::kBFloat16: y.data<uint16_t>()[i] = float_to_bf16_bits(v); break;
      default: return unsupported("a fused epilogue needs a float output");
    }
  }
  return Status::ok();
}

Status run_reference(const Node& node, const std::vector<const Tensor*>& in,
                     std::vector<Tensor>& out) {
  const OpDef* def = OpRegistry::find(node.op);
  if (!def) return unsupported(node.describe() + ": no reference kernel for " + op_name(node.op));
  std::vector<TensorDesc> descs(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i]) continue;
    descs[i] = {in[i]->dtype(), in[i]->shape(), in[i]};
  }
  std::vector<TensorDesc> out_descs(node.outputs.size());
  KILN_RETURN_IF_ERROR_CTX(infer_node(*def, node, descs, out_descs), node.describe());
  out.assign(node.outputs.size(), Tensor());
  std::vector<Tensor*> out_ptrs(node.outputs.size(), nullptr);
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (!node.outputs[i]) continue;
    if (!out_descs[i].present())
      return internal_error(node.describe() + ": shape rule gave no type for output " +
                            std::to_string(i));
    for (int64_t d : out_descs[i].shape)
      if (d < 0)
        return internal_error(node.describe() + ": shape rule gave a negative dimension " +
                              shape_str(out_descs[i].shape));
    out[i] = Tensor(out_descs[i].dtype, out_descs[i].shape);
    out_ptrs[i] = &out[i];
  }
  return run_node(*def, node, in, out_ptrs).with_context(node.describe());
}

}  // namespace kiln
