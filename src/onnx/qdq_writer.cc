// write_qdq_model (kiln/quantize.h): the int8 engine's quantization written into the ONNX
// file as QuantizeLinear / DequantizeLinear, on the protobuf, so that everything else in the
// model stays as it was.
#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "kiln/quantize.h"
#include "onnx/tensor_proto.h"
#include "onnx/topological_sort.h"
#include "quant/weight_scales.h"

namespace kiln {

namespace {

bool is_default(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// The axis of a layer's output channels in its weights of rank `rank`, or -1.
int channel_axis(const onnx::NodeProto& n, int rank) {
  if (n.op_type() == "Conv") return rank >= 3 ? 0 : -1;
  if (n.op_type() == "MatMul") return rank == 2 ? 1 : -1;
  if (n.op_type() != "Gemm" || rank != 2) return -1;
  for (const auto& a : n.attribute())
    if (a.name() == "transB" && a.i() != 0) return 0;
  return 1;
}

class Writer {
 public:
  Writer(onnx::ModelProto& m, std::string base_dir) : g_(*m.mutable_graph()), dir_(base_dir) {
    for (int i = 0; i < g_.initializer_size(); ++i) inits_[g_.initializer(i).name()] = i;
    for (const auto& v : g_.input()) names_.insert(v.name());
    for (int i = 0; i < g_.node_size(); ++i)
      for (const auto& o : g_.node(i).output()) names_.insert(o), producer_[o] = i;
    for (const auto& t : g_.initializer()) names_.insert(t.name());
  }

  Status run(const std::map<std::string, double>& amax, const std::set<std::string>& keep,
             QdqModelReport& report) {
    const int count = g_.node_size();
    for (int i = 0; i < count; ++i) {
      onnx::NodeProto& n = *g_.mutable_node(i);
      if (!is_default(n.domain()) || n.input_size() < 2) continue;
      if (n.op_type() != "Conv" && n.op_type() != "Gemm" && n.op_type() != "MatMul") continue;
      const std::string label = (n.name().empty() ? n.output(0) : n.name());
      std::string why = float_reason(n, amax, keep);
      if (!why.empty()) {
        report.skipped.push_back(label + " (" + n.op_type() + "): " + why);
        continue;
      }
      n.set_input(0, input_pair(n.input(0), amax.at(n.input(0))));
      KILN_ASSIGN_OR_RETURN(std::string w, weight_codes(n));
      n.set_input(1, w);
      report.quantized.push_back(label);
    }
    drop_unused_initializers();
    bool moved = false;
    return sort_nodes_topologically(g_, &moved);
  }

 private:
  std::string float_reason(const onnx::NodeProto& n, const std::map<std::string, double>& amax,
                           const std::set<std::string>& keep) const {
    auto w = inits_.find(n.input(1));
    if (w == inits_.end()) return "its weights are not a constant";
    const onnx::TensorProto& t = g_.initializer(w->second);
    if (t.data_type() != onnx::TensorProto::FLOAT) return "its weights are not float32";
    if (channel_axis(n, t.dims_size()) < 0) return "its weights are not of a shape kiln quantizes";
    if (keep.count(n.name())) return "kept in float";
    auto a = amax.find(n.input(0));
    if (a == amax.end() || !std::isfinite(a->second) || a->second <= 0)
      return "no calibrated magnitude for its input '" + n.input(0) + "'";
    return "";
  }

  std::string fresh(const std::string& hint) {
    std::string name = hint;
    for (int i = 1; names_.count(name); ++i) name = hint + "_" + std::to_string(i);
    names_.insert(name);
    return name;
  }

  std::string add_initializer(const std::string& hint, int dtype, const std::vector<int64_t>& dims,
                              std::string raw) {
    auto* t = g_.add_initializer();
    t->set_name(fresh(hint));
    t->set_data_type(dtype);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::move(raw));
    return t->name();
  }

  onnx::NodeProto& add_node(const std::string& op, const std::vector<std::string>& in,
                            const std::string& out) {
    auto* n = g_.add_node();
    n->set_op_type(op);
    n->set_name(fresh(out));
    for (const auto& i : in) n->add_input(i);
    n->add_output(out);
    return *n;
  }

  // The scalar float constant `name` (an initializer), or NaN.
  float scalar(const std::string& name) const {
    auto it = inits_.find(name);
    if (it == inits_.end()) return NAN;
    auto v = tensor_from_proto(g_.initializer(it->second), dir_);
    return v.is_ok() && v->numel() == 1 ? v->to_floats()[0] : NAN;
  }

  // Whether value `x` is never negative by construction, as the int8 engine decides it
  // (quantize_int8.cc): a Relu's output, a Clip's from a min ≥ 0, or a pooling of one.
  bool never_negative(const std::string& x) const {
    auto it = producer_.find(x);
    if (it == producer_.end()) return false;
    const onnx::NodeProto& p = g_.node(it->second);
    if (!is_default(p.domain()) || p.input_size() < 1) return false;
    const std::string& op = p.op_type();
    if (op == "Relu") return true;
    if (op == "Clip") {
      for (const auto& a : p.attribute())  // opset < 11
        if (a.name() == "min") return a.f() >= 0.f;
      return p.input_size() > 1 && scalar(p.input(1)) >= 0.f;
    }
    const bool pool = op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" ||
                      op == "GlobalMaxPool";
    return pool && never_negative(p.input(0));
  }

  // x → Q → DQ, once per value: the dequantized value's name. uint8 codes over [0, amax]
  // where x is never negative, int8 over ±amax otherwise (the int8 engine's choice).
  std::string input_pair(const std::string& x, double amax) {
    std::string& dq = pairs_[x];
    if (!dq.empty()) return dq;
    const bool u8 = never_negative(x);
    const float scale = static_cast<float>(amax / (u8 ? 255.0 : 127.0));
    const std::string s = add_initializer(x + "/scale", onnx::TensorProto::FLOAT, {},
                                          std::string(reinterpret_cast<const char*>(&scale), 4));
    const std::string z =
        add_initializer(x + "/zero_point", u8 ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8,
                        {}, std::string(1, '\0'));
    const std::string q = fresh(x + "/quantized");
    add_node("QuantizeLinear", {x, s, z}, q);
    dq = fresh(x + "/dequantized");
    add_node("DequantizeLinear", {q, s, z}, dq);
    return dq;
  }

  // The layer's weights as int8 codes per output channel behind a DequantizeLinear (once per
  // weight tensor): the dequantized value's name.
  Result<std::string> weight_codes(const onnx::NodeProto& n) {
    const onnx::TensorProto& t = g_.initializer(inits_.at(n.input(1)));
    const int axis = channel_axis(n, t.dims_size());
    const std::string key = n.input(1) + "@" + std::to_string(axis);
    if (auto it = weights_.find(key); it != weights_.end()) return it->second;
    KILN_ASSIGN_OR_RETURN(Tensor w, tensor_from_proto(t, dir_));
    const Shape& shape = w.shape();
    const int64_t channels = shape[axis];
    int64_t inner = 1;
    for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
    const float* p = w.data<float>();
    std::vector<float> scale = quant::channel_absmax(w, axis);
    for (float& s : scale) s = s > 0.f ? s / 127.f : 1.f;  // an all-zero channel: codes 0
    std::string codes(static_cast<size_t>(w.numel()), '\0');
    for (int64_t i = 0; i < w.numel(); ++i)
      codes[static_cast<size_t>(i)] = static_cast<char>(static_cast<int8_t>(
          std::nearbyint(p[i] / scale[static_cast<size_t>((i / inner) % channels)])));
    const std::string name = n.input(1);
    const std::string c = add_initializer(name + "/int8", onnx::TensorProto::INT8,
                                          {shape.begin(), shape.end()}, std::move(codes));
    const std::string s =
        add_initializer(name + "/scale", onnx::TensorProto::FLOAT, {channels},
                        std::string(reinterpret_cast<const char*>(scale.data()), scale.size() * 4));
    const std::string z = add_initializer(name + "/zero_point", onnx::TensorProto::INT8, {channels},
                                          std::string(scale.size(), '\0'));
    const std::string dq = fresh(name + "/dequantized");
    auto* a = add_node("DequantizeLinear", {c, s, z}, dq).add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(axis);
    weights_[key] = dq;
    return dq;
  }

  // The float weights replaced everywhere go (an initializer still read, or also a graph
  // input or output, stays).
  void drop_unused_initializers() {
    std::unordered_set<std::string> used;
    for (const auto& n : g_.node())
      for (const auto& i : n.input()) used.insert(i);
    for (const auto& v : g_.input()) used.insert(v.name());
    for (const auto& v : g_.output()) used.insert(v.name());
    google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
    for (auto& t : *g_.mutable_initializer())
      if (used.count(t.name())) *kept.Add() = std::move(t);
    g_.mutable_initializer()->Swap(&kept);
  }

  onnx::GraphProto& g_;
  std::string dir_;
  std::map<std::string, int> inits_, producer_;
  std::unordered_set<std::string> names_;
  std::map<std::string, std::string> pairs_, weights_;
};

}  // namespace

std::map<std::string, double> int8_input_amax(const Engine& int8_engine) {
  std::map<std::string, double> r;
  for (const auto& l : int8_engine.report().quantization.layers) r[l.input] = l.amax;
  return r;
}

Result<QdqModelReport> write_qdq_model(const std::string& model_path,
                                       const std::map<std::string, double>& amax,
                                       const std::string& out_path,
                                       const std::set<std::string>& keep) {
  std::ifstream f(model_path, std::ios::binary);
  if (!f) return not_found("model file '" + model_path + "' not found");
  std::stringstream bytes;
  bytes << f.rdbuf();
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes.str()))
    return invalid_argument(model_path + " is not a valid ONNX model (truncated or corrupted?)");
  int64_t opset = -1;
  for (const auto& imp : m.opset_import())
    if (is_default(imp.domain())) opset = imp.version();
  if (opset < 13)
    return unsupported(model_path + ": imports opset " + std::to_string(opset) +
                       "; a Q/DQ model with per-channel weight scales needs opset 13 or newer");
  QdqModelReport report;
  Writer w(m, std::filesystem::path(model_path).parent_path().string());
  KILN_RETURN_IF_ERROR_CTX(w.run(amax, keep, report), model_path);
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  if (!out || !m.SerializeToOstream(&out) || !out.flush())
    return invalid_argument("cannot write '" + out_path + "'");
  return report;
}

}  // namespace kiln
