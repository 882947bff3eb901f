#include "onnx/expand_quantized.h"

#include <algorithm>
#include <cfloat>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "onnx/tensor_proto.h"

namespace kiln {

namespace {

bool is_default(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// The opset of `domain` in `m` (-1 when not imported).
int64_t opset_of(const onnx::ModelProto& m, bool microsoft) {
  for (const auto& imp : m.opset_import())
    if (microsoft ? imp.domain() == "com.microsoft" : is_default(imp.domain()))
      return imp.version();
  return -1;
}

// (q − z) · s element by element, with s and z one value, or one per slice of `axis`.
Result<Tensor> dequantize(const Tensor& q, const std::optional<Tensor>& s,
                          const std::optional<Tensor>& z, int64_t axis, const std::string& what) {
  const Shape& shape = q.shape();
  if (axis < 0) axis += static_cast<int64_t>(shape.size());
  const int64_t channels = axis >= 0 && axis < static_cast<int64_t>(shape.size()) ? shape[axis] : 1;
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  const std::vector<int64_t> codes = q.to_int64s();
  const std::vector<float> scale = s ? s->to_floats() : std::vector<float>{1.f};
  const std::vector<int64_t> zero = z ? z->to_int64s() : std::vector<int64_t>{0};
  for (const size_t n : {scale.size(), zero.size()})
    if (n != 1 && static_cast<int64_t>(n) != channels)
      return invalid_argument(what + ": " + std::to_string(n) +
                              " scales or zero points for a dimension of " +
                              std::to_string(channels));
  std::vector<float> r(codes.size());
  for (size_t i = 0; i < codes.size(); ++i) {
    const size_t c = static_cast<size_t>((static_cast<int64_t>(i) / inner) % channels);
    const float sc = scale[scale.size() == 1 ? 0 : c];
    const int64_t zp = zero[zero.size() == 1 ? 0 : c];
    r[i] = static_cast<float>(codes[i] - zp) * sc;
  }
  return Tensor::from_floats(shape, r);
}

class Expander {
 public:
  Expander(onnx::ModelProto& m, const std::string& base_dir)
      : g_(*m.mutable_graph()), opset_(opset_of(m, false)), base_dir_(base_dir) {
    for (const auto& v : g_.input()) names_.insert(v.name());
    for (const auto& v : g_.output()) names_.insert(v.name());
    for (const auto& t : g_.initializer()) names_.insert(t.name()), consts_[t.name()] = &t;
    for (const auto& n : g_.node()) {
      names_.insert(n.name());
      for (const auto& o : n.output()) names_.insert(o);
      if (n.op_type() == "Constant" && is_default(n.domain()) && n.output_size() == 1)
        for (const auto& a : n.attribute())
          if (a.name() == "value" && a.has_t()) consts_[n.output(0)] = &a.t();
    }
  }

  Status run(bool* changed) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    nodes.Swap(g_.mutable_node());
    for (const auto& n : nodes) {
      const auto rule = rule_for(n);
      if (!rule) {
        *g_.add_node() = n;
        continue;
      }
      node_ = &n;
      what_ = "node '" + (n.name().empty() ? n.output(0) : n.name()) + "' (" + n.op_type() + ")";
      Status s = (this->*rule)();
      if (!s.is_ok()) {
        g_.mutable_node()->Swap(&nodes);  // leave the model as it was
        return s;
      }
      *changed = true;
    }
    for (auto& t : inits_) *g_.add_initializer() = std::move(t);
    return Status::ok();
  }

 private:
  using Rule = Status (Expander::*)();

  Rule rule_for(const onnx::NodeProto& n) const {
    static const std::map<std::string, Rule> standard = {
        {"QLinearConv", &Expander::qlinear_conv},
        {"QLinearMatMul", &Expander::qlinear_matmul},
        {"ConvInteger", &Expander::conv_integer},
        {"MatMulInteger", &Expander::matmul_integer},
        {"DynamicQuantizeLinear", &Expander::dynamic_quantize}};
    static const std::map<std::string, Rule> microsoft = {
        {"QLinearAdd", &Expander::qlinear_binary},
        {"QLinearMul", &Expander::qlinear_binary},
        {"QLinearSigmoid", &Expander::qlinear_unary},
        {"QLinearLeakyRelu", &Expander::qlinear_unary},
        {"QLinearGlobalAveragePool", &Expander::qlinear_unary},
        {"QLinearAveragePool", &Expander::qlinear_unary},
        {"QLinearConcat", &Expander::qlinear_concat},
        {"QuantizeLinear", &Expander::to_default_domain},
        {"DequantizeLinear", &Expander::to_default_domain}};
    const auto& table = is_default(n.domain()) ? standard : microsoft;
    if (!is_default(n.domain()) && n.domain() != "com.microsoft") return nullptr;
    auto it = table.find(n.op_type());
    return it == table.end() ? nullptr : it->second;
  }

  // Input `i` of the node, "" where absent.
  std::string in(int i) const { return i < node_->input_size() ? node_->input(i) : ""; }

  std::string fresh(const std::string& hint) {
    std::string name = hint;
    for (int i = 1; names_.count(name); ++i) name = hint + "_" + std::to_string(i);
    names_.insert(name);
    return name;
  }

  // The constant named `name`, or nothing where it is not one (or absent).
  Result<std::optional<Tensor>> constant(const std::string& name) const {
    auto it = consts_.find(name);
    if (name.empty() || it == consts_.end()) return std::optional<Tensor>();
    KILN_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(*it->second, base_dir_));
    return std::optional<Tensor>(std::move(t));
  }

  std::string add_constant(const std::string& hint, const Tensor& t) {
    onnx::TensorProto p;
    p.set_name(fresh(hint));
    p.set_data_type(static_cast<int>(t.dtype()));
    for (int64_t d : t.shape()) p.add_dims(d);
    p.set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
    inits_.push_back(std::move(p));
    return inits_.back().name();
  }
  std::string add_scalar(const std::string& hint, float v) {
    return add_constant(hint, Tensor::from_floats({}, {v}));
  }

  onnx::NodeProto& emit(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs) {
    auto* n = g_.add_node();
    n->set_op_type(op);
    n->set_name(fresh((node_->name().empty() ? node_->output(0) : node_->name()) + "/" + op));
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }
  // A new value computed by `op` from `inputs`.
  std::string emit_value(const std::string& op, const std::vector<std::string>& inputs,
                         const std::string& hint) {
    const std::string v = fresh(node_->output(0) + "/" + hint);
    emit(op, inputs, {v});
    return v;
  }
  void copy_attributes(onnx::NodeProto& to, const std::vector<std::string>& except = {}) const {
    for (const auto& a : node_->attribute())
      if (std::find(except.begin(), except.end(), a.name()) == except.end())
        *to.add_attribute() = a;
  }

  // DQ(x, s, z): the float of an activation, per tensor.
  std::string dequantize_value(const std::string& x, const std::string& s, const std::string& z) {
    std::vector<std::string> args = {x, s};
    if (!z.empty()) args.push_back(z);
    return emit_value("DequantizeLinear", args, "dequantized");
  }
  // Q(y, s, z) into the node's output `out`.
  void quantize_into(const std::string& y, const std::string& s, const std::string& z,
                     const std::string& out) {
    std::vector<std::string> args = {y, s};
    if (!z.empty()) args.push_back(z);
    emit("QuantizeLinear", args, {out});
  }

  // The float weights (w − z) · s, per slice of `axis`: a float initializer where all three
  // are constants, else a DequantizeLinear (per tensor, or per axis from opset 13).
  Result<std::string> weights(const std::string& w, const std::string& s, const std::string& z,
                              int64_t axis) {
    KILN_ASSIGN_OR_RETURN(auto wc, constant(w));
    KILN_ASSIGN_OR_RETURN(auto sc, constant(s));
    KILN_ASSIGN_OR_RETURN(auto zc, constant(z));
    const bool folded = wc && (s.empty() || sc) && (z.empty() || zc);
    if (folded) {
      KILN_ASSIGN_OR_RETURN(Tensor f, dequantize(*wc, sc, zc, axis, what_));
      return add_constant(w + "/dequantized", f);
    }
    const bool per_tensor =
        (s.empty() || (sc && sc->numel() == 1)) && (z.empty() || (zc && zc->numel() == 1));
    if (!per_tensor && opset_ < 13)
      return unsupported(what_ + ": non-constant weights '" + w +
                         "' with per-channel scales need opset 13 (DequantizeLinear's axis); "
                         "this model imports opset " +
                         std::to_string(opset_));
    std::vector<std::string> args = {w, s.empty() ? add_scalar(w + "/one", 1.f) : s};
    if (!z.empty()) args.push_back(z);
    const std::string v = fresh(w + "/dequantized");
    auto& n = emit("DequantizeLinear", args, {v});
    if (!per_tensor) {
      auto* a = n.add_attribute();
      a->set_name("axis");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(axis);
    }
    return v;
  }

  // A per-tensor activation scale or zero point must be one value where it is a constant.
  Status per_tensor(const std::string& name, const char* role) {
    KILN_ASSIGN_OR_RETURN(auto c, constant(name));
    if (c && c->numel() != 1)
      return unsupported(what_ + ": " + role + " '" + name + "' has " + std::to_string(c->numel()) +
                         " values; kiln supports one per tensor for activations");
    return Status::ok();
  }

  // QLinearConv(x, xs, xz, w, ws, wz, ys, yz, B).
  Status qlinear_conv() {
    KILN_RETURN_IF_ERROR(per_tensor(in(1), "x_scale"));
    KILN_RETURN_IF_ERROR(per_tensor(in(2), "x_zero_point"));
    const std::string x = dequantize_value(in(0), in(1), in(2));
    KILN_ASSIGN_OR_RETURN(std::string w, weights(in(3), in(4), in(5), 0));
    std::vector<std::string> args = {x, w};
    if (!in(8).empty()) {
      KILN_ASSIGN_OR_RETURN(std::string b, conv_bias());
      args.push_back(b);
    }
    auto& conv = emit("Conv", args, {fresh(node_->output(0) + "/float")});
    copy_attributes(conv);
    quantize_into(conv.output(0), in(6), in(7), node_->output(0));
    return Status::ok();
  }

  // QLinearConv's int32 bias in float: B[m] · xs · ws[m] (constants only).
  Result<std::string> conv_bias() {
    KILN_ASSIGN_OR_RETURN(auto b, constant(in(8)));
    KILN_ASSIGN_OR_RETURN(auto xs, constant(in(1)));
    KILN_ASSIGN_OR_RETURN(auto ws, constant(in(4)));
    if (!b || !xs || !ws)
      return unsupported(what_ + ": the bias '" + in(8) +
                         "' and the scales x_scale, w_scale must be constants");
    const float s = xs->to_floats()[0];
    std::vector<float> per = ws->to_floats();
    for (float& v : per) v *= s;
    const Tensor scales = Tensor::from_floats({static_cast<int64_t>(per.size())}, per);
    KILN_ASSIGN_OR_RETURN(Tensor f, dequantize(*b, scales, std::nullopt, 0, what_));
    return add_constant(in(8) + "/dequantized", f);
  }

  // QLinearMatMul(a, as, az, b, bs, bz, ys, yz): b's scales per column (its last axis).
  Status qlinear_matmul() {
    KILN_RETURN_IF_ERROR(per_tensor(in(1), "a_scale"));
    KILN_RETURN_IF_ERROR(per_tensor(in(2), "a_zero_point"));
    const std::string a = dequantize_value(in(0), in(1), in(2));
    KILN_ASSIGN_OR_RETURN(std::string b, weights(in(3), in(4), in(5), -1));
    const std::string y = emit_value("MatMul", {a, b}, "float");
    quantize_into(y, in(6), in(7), node_->output(0));
    return Status::ok();
  }

  // ConvInteger(x, w, xz, wz) / MatMulInteger(a, b, az, bz): the exact int32 sums.
  Status integer_op(const char* op, int64_t weight_axis) {
    KILN_RETURN_IF_ERROR(per_tensor(in(2), "zero point of input 0"));
    const std::string x = dequantize_value(in(0), add_scalar(in(0) + "/one", 1.f), in(2));
    KILN_ASSIGN_OR_RETURN(std::string w, weights(in(1), "", in(3), weight_axis));
    auto& n = emit(op, {x, w}, {fresh(node_->output(0) + "/float")});
    copy_attributes(n);
    auto& cast = emit("Cast", {n.output(0)}, {node_->output(0)});
    auto* to = cast.add_attribute();
    to->set_name("to");
    to->set_type(onnx::AttributeProto::INT);
    to->set_i(onnx::TensorProto::INT32);
    return Status::ok();
  }
  Status conv_integer() { return integer_op("Conv", 0); }
  Status matmul_integer() { return integer_op("MatMul", -1); }

  // DynamicQuantizeLinear(x) → y (uint8), ys, yz, as its definition: ys = (max(0, max x) −
  // min(0, min x)) / 255, yz = saturate(round(−min(0, min x) / ys)), y = saturate(round(x / ys)
  // + yz). An all-zero x (ys = 0) gets the smallest normal float as ys, so that y = yz = 0.
  Status dynamic_quantize() {
    const std::string zero = add_scalar(node_->output(0) + "/zero", 0.f);
    const std::string x = in(0);
    const std::string neg = emit_value("Mul", {x, add_scalar(x + "/minus_one", -1.f)}, "negated");
    const std::string hi = emit_value("Clip", {max_of(x, "max"), zero}, "hi");
    const std::string lo = emit_value("Clip", {max_of(neg, "minus_min"), zero}, "minus_lo");
    const std::string range = emit_value("Add", {hi, lo}, "range");
    const std::string s = emit_value("Div", {range, add_scalar(x + "/255", 255.f)}, "scale");
    const std::string ys = node_->output_size() > 1 && !node_->output(1).empty()
                               ? node_->output(1)
                               : fresh(node_->output(0) + "/y_scale");
    emit("Clip", {s, add_scalar(x + "/smallest", FLT_MIN)}, {ys});
    const std::string yz = node_->output_size() > 2 && !node_->output(2).empty()
                               ? node_->output(2)
                               : fresh(node_->output(0) + "/y_zero_point");
    Tensor u8(DataType::kUInt8, {});
    *u8.data<uint8_t>() = 0;
    emit("QuantizeLinear", {lo, ys, add_constant(x + "/zero_u8", u8)}, {yz});
    emit("QuantizeLinear", {x, ys, yz}, {node_->output(0)});
    return Status::ok();
  }
  std::string max_of(const std::string& x, const std::string& hint) {
    auto& n = emit("ReduceMax", {x}, {fresh(node_->output(0) + "/" + hint)});
    auto* k = n.add_attribute();
    k->set_name("keepdims");
    k->set_type(onnx::AttributeProto::INT);
    k->set_i(0);
    return n.output(0);
  }

  // com.microsoft QLinearAdd / QLinearMul(A, As, Az, B, Bs, Bz, Cs, Cz).
  Status qlinear_binary() {
    for (int i : {1, 2, 4, 5}) KILN_RETURN_IF_ERROR(per_tensor(in(i), "scale or zero point"));
    const std::string a = dequantize_value(in(0), in(1), in(2));
    const std::string b = dequantize_value(in(3), in(4), in(5));
    const std::string y =
        emit_value(node_->op_type() == "QLinearAdd" ? "Add" : "Mul", {a, b}, "float");
    quantize_into(y, in(6), in(7), node_->output(0));
    return Status::ok();
  }

  // com.microsoft QLinearSigmoid / QLinearLeakyRelu / QLinear(Global)AveragePool(X, Xs, Xz,
  // Ys, Yz), each the float op between.
  Status qlinear_unary() {
    for (const auto& a : node_->attribute())
      if (a.name() == "channels_last" && a.i() != 0)
        return unsupported(what_ + ": channels_last=1 (NHWC) is not supported");
    for (int i : {1, 2}) KILN_RETURN_IF_ERROR(per_tensor(in(i), "scale or zero point"));
    const std::string x = dequantize_value(in(0), in(1), in(2));
    const std::string op = node_->op_type().substr(std::string("QLinear").size());
    auto& n = emit(op, {x}, {fresh(node_->output(0) + "/float")});
    copy_attributes(n, {"channels_last"});
    quantize_into(n.output(0), in(3), in(4), node_->output(0));
    return Status::ok();
  }

  // com.microsoft QLinearConcat(Ys, Yz, X0, X0s, X0z, X1, …).
  Status qlinear_concat() {
    if (node_->input_size() < 5 || (node_->input_size() - 2) % 3 != 0)
      return invalid_argument(what_ +
                              ": expects Y_scale, Y_zero_point, then (X, scale, zero "
                              "point) triples; got " +
                              std::to_string(node_->input_size()) + " inputs");
    std::vector<std::string> floats;
    for (int i = 2; i < node_->input_size(); i += 3) {
      for (int j : {i + 1, i + 2}) KILN_RETURN_IF_ERROR(per_tensor(in(j), "scale or zero point"));
      floats.push_back(dequantize_value(in(i), in(i + 1), in(i + 2)));
    }
    auto& n = emit("Concat", floats, {fresh(node_->output(0) + "/float")});
    copy_attributes(n);
    quantize_into(n.output(0), in(0), in(1), node_->output(0));
    return Status::ok();
  }

  // com.microsoft QuantizeLinear / DequantizeLinear: the standard ops' semantics.
  Status to_default_domain() {
    if (opset_ < 13)
      for (const auto& a : node_->attribute())
        if (a.name() == "axis")
          return unsupported(what_ +
                             ": per-axis quantization needs opset 13; this model "
                             "imports opset " +
                             std::to_string(opset_));
    auto* n = g_.add_node();
    *n = *node_;
    n->clear_domain();
    return Status::ok();
  }

  onnx::GraphProto& g_;
  int64_t opset_;
  std::string base_dir_;
  std::unordered_set<std::string> names_;
  std::unordered_map<std::string, const onnx::TensorProto*> consts_;
  std::vector<onnx::TensorProto> inits_;
  const onnx::NodeProto* node_ = nullptr;
  std::string what_;
};

}  // namespace

Status expand_quantized_operators(onnx::ModelProto& model, const std::string& base_dir,
                                  bool* changed) {
  *changed = false;
  return Expander(model, base_dir).run(changed);
}

}  // namespace kiln
