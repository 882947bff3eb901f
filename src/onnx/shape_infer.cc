#include "onnx/shape_infer.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <deque>
#include <unordered_set>

namespace kiln {

namespace {

// Initializers up to this size are handed to inference as data (shape-like inputs such as
// Reshape's shape); larger ones are weights, whose type is all inference needs.
constexpr int64_t kMaxDataElements = int64_t{1} << 16;

onnx::TypeProto type_of_tensor(const onnx::TensorProto& t) {
  onnx::TypeProto type;
  auto* tt = type.mutable_tensor_type();
  tt->set_elem_type(t.data_type());
  auto* shape = tt->mutable_shape();
  for (int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
  return type;
}

bool small_inline(const onnx::TensorProto& t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return false;
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && n > kMaxDataElements / d)) return false;
    n *= d;
  }
  return n <= kMaxDataElements;
}

class Inferrer {
 public:
  Inferrer(const onnx::GraphProto& g, int64_t opset) : graph_(g) {
    opsets_[""] = static_cast<int>(opset);
  }

  Result<TypeMap> run() {
    for (const auto& vi : graph_.value_info()) declared_[vi.name()] = &vi.type();
    for (const auto& vi : graph_.output()) declared_[vi.name()] = &vi.type();
    for (const auto& vi : graph_.input()) types_[vi.name()] = vi.type();
    for (const auto& t : graph_.initializer()) {
      types_[t.name()] = type_of_tensor(t);
      if (small_inline(t)) data_[t.name()] = &t;
    }
    for (const auto& n : graph_.node()) {
      KILN_RETURN_IF_ERROR(check_preconditions(n));
      if (safe_to_infer(n))
        infer(n);
      else
        keep_element_type(n);
      if (n.op_type() == "Constant" && n.output_size() == 1) record_constant(n);
    }
    // Declared types of values inference could not reach; an empty declared shape there
    // says only the dtype (see merge_declared).
    for (const auto& [name, type] : declared_) {
      if (types_.count(name)) continue;
      onnx::TypeProto t = *type;
      if (t.has_tensor_type() && t.tensor_type().has_shape() &&
          t.tensor_type().shape().dim_size() == 0)
        t.mutable_tensor_type()->clear_shape();
      types_[name] = std::move(t);
    }
    return std::move(types_);
  }

 private:
  int rank_of(const std::string& name) const {
    auto it = types_.find(name);
    if (it == types_.end() || !it->second.has_tensor_type() ||
        !it->second.tensor_type().has_shape())
      return -1;
    return it->second.tensor_type().shape().dim_size();
  }

  // The inference functions of these ops read input shapes they never checked for (a
  // ConvTranspose weight without a shape crashed it); run them only with every rank known.
  bool safe_to_infer(const onnx::NodeProto& n) const {
    static const std::unordered_set<std::string> kFragile = {
        "Conv", "ConvTranspose", "MaxPool", "AveragePool", "Gemm", "MatMul"};
    if (!kFragile.count(n.op_type())) return true;
    for (const auto& in : n.input())
      if (!in.empty() && rank_of(in) < 0) return false;
    return true;
  }

  // A fragile op skipped for an input of unknown rank still has a known output dtype: its
  // outputs are of input 0's (MaxPool's Indices: int64). Without it everything downstream of a
  // Reshape to a computed shape (ShuffleNet's channel shuffle) would be left untyped.
  void keep_element_type(const onnx::NodeProto& n) {
    if (n.input_size() == 0 || n.input(0).empty()) return;
    auto it = types_.find(n.input(0));
    if (it == types_.end() || !it->second.has_tensor_type() ||
        !it->second.tensor_type().has_elem_type())
      return;
    for (int i = 0; i < n.output_size(); ++i) {
      if (n.output(i).empty() || types_.count(n.output(i))) continue;
      onnx::TypeProto t;
      t.mutable_tensor_type()->set_elem_type(i == 1 && n.op_type() == "MaxPool"
                                                 ? onnx::TensorProto::INT64
                                                 : it->second.tensor_type().elem_type());
      merge_declared(n.output(i), t);
      types_[n.output(i)] = std::move(t);
    }
  }

  // What libonnx's inference functions for kiln's ops assume without checking.
  Status check_preconditions(const onnx::NodeProto& n) const {
    const std::string& op = n.op_type();
    std::string where = "node '" + (n.name().empty() ? op : n.name()) + "' (" + op + ")";
    auto input_rank = [&](int i) { return i < n.input_size() ? rank_of(n.input(i)) : -1; };
    if (op == "Conv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool") {
      int rank = input_rank(0);
      bool has_weight = op == "Conv" || op == "ConvTranspose";
      int w_rank = has_weight ? input_rank(1) : -1;
      if (rank >= 0 && rank < 3)
        return invalid_argument(where + ": input rank " + std::to_string(rank) + ", need ≥ 3");
      if (w_rank >= 0 && w_rank < 3)
        return invalid_argument(where + ": weight rank " + std::to_string(w_rank) + ", need ≥ 3");
      if (rank >= 0 && w_rank >= 0 && rank != w_rank)
        return invalid_argument(where + ": input rank " + std::to_string(rank) +
                                " differs from weight rank " + std::to_string(w_rank));
      if (rank < 0) rank = w_rank;
      const int spatial = rank >= 0 ? rank - 2 : -1;
      for (const auto& a : n.attribute()) {
        const std::string& name = a.name();
        bool positive = name == "kernel_shape" || name == "strides" || name == "dilations";
        for (int64_t v : a.ints())
          if ((positive && v <= 0) || v < 0)
            return invalid_argument(where + ": attribute '" + name + "' has value " +
                                    std::to_string(v));
        if (spatial < 0) continue;
        int size = a.ints_size();
        bool per_axis = positive || name == "output_padding";
        if ((per_axis && size != spatial) || (name == "pads" && size != 2 * spatial) ||
            (name == "output_shape" && size != spatial && size != rank))
          return invalid_argument(where + ": attribute '" + name + "' has " + std::to_string(size) +
                                  " values for " + std::to_string(spatial) + " spatial dimensions");
        if (name == "group" && a.i() <= 0)
          return invalid_argument(where + ": group " + std::to_string(a.i()) + " must be positive");
      }
    } else if (op == "Gemm") {
      for (int i = 0; i < 2; ++i)
        if (int r = input_rank(i); r >= 0 && r != 2)
          return invalid_argument(where + ": input " + std::to_string(i) + " has rank " +
                                  std::to_string(r) + ", Gemm needs 2");
    } else if (op == "MatMul") {
      for (int i = 0; i < 2; ++i)
        if (input_rank(i) == 0)
          return invalid_argument(where + ": input " + std::to_string(i) + " is a scalar");
    }
    return Status::ok();
  }

  // Infers the outputs of `n` alone, in a one-node graph holding its inputs' types and
  // small constant data. Skipped when an input's type is unknown: libonnx's functions may
  // dereference a missing input type.
  void infer(const onnx::NodeProto& n) {
    onnx::GraphProto mini;
    *mini.add_node() = n;
    std::unordered_set<std::string> seen;
    std::unordered_set<std::string> input_params;
    for (const auto& in : n.input()) {
      if (in.empty() || !seen.insert(in).second) continue;
      auto d = data_.find(in);
      if (d != data_.end()) {
        *mini.add_initializer() = *d->second;
        continue;
      }
      auto t = types_.find(in);
      if (t == types_.end()) return;
      auto* vi = mini.add_input();
      vi->set_name(in);
      *vi->mutable_type() = t->second;
      if (t->second.has_tensor_type())
        for (const auto& dim : t->second.tensor_type().shape().dim())
          if (dim.has_dim_param()) input_params.insert(dim.dim_param());
    }
    try {
      onnx::shape_inference::InferShapes(&mini, opsets_, onnx::OpSchemaRegistry::Instance(),
                                         onnx::ShapeInferenceOptions(false, 0, false));
    } catch (const std::exception&) {
      return;  // shapes stay unknown
    }
    for (const auto& vi : mini.value_info()) {
      onnx::TypeProto type = vi.type();
      rename_fresh_symbols(type, input_params);
      merge_declared(vi.name(), type);
      types_[vi.name()] = std::move(type);
    }
  }

  // libonnx names unknown output dims "unk__0", "unk__1"... per inference call; one-node
  // calls would reuse those names for unrelated dims, so each gets a name unique here.
  void rename_fresh_symbols(onnx::TypeProto& type, const std::unordered_set<std::string>& keep) {
    // Only a shape that exists: mutable_shape() would add an empty one, a rank-0 shape
    // where inference left the rank unknown (the output of a Reshape to a computed shape).
    if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return;
    for (auto& dim : *type.mutable_tensor_type()->mutable_shape()->mutable_dim())
      if (dim.has_dim_param() && !keep.count(dim.dim_param()))
        dim.set_dim_param("unk_" + std::to_string(next_symbol_++));
  }

  // A declared dim fills one inference left unknown; on a rank conflict the declaration
  // wins (the model says so; kernels compute the real shape at run time). Except an empty
  // declared shape: exporters and converters write `shape {}` in value_info where they mean
  // "rank unknown" (PyTorch does for a Reshape to a computed shape; ONNX Runtime, too,
  // keeps its inferred shape there). Taken as a scalar it would refuse a MatMul the model
  // runs fine, or make a Reshape's output rank 0 and leave everything after it untyped.
  void merge_declared(const std::string& name, onnx::TypeProto& type) const {
    auto it = declared_.find(name);
    if (it == declared_.end() || !it->second->has_tensor_type()) return;
    const auto& want = it->second->tensor_type();
    if (!want.has_shape()) return;
    auto* tt = type.mutable_tensor_type();
    if (!tt->has_elem_type() || tt->elem_type() == 0) tt->set_elem_type(want.elem_type());
    if (want.shape().dim_size() == 0) return;  // "rank unknown" as converters write it
    if (!tt->has_shape() || tt->shape().dim_size() != want.shape().dim_size()) {
      *tt->mutable_shape() = want.shape();
      return;
    }
    for (int i = 0; i < want.shape().dim_size(); ++i) {
      auto* dim = tt->mutable_shape()->mutable_dim(i);
      const auto& d = want.shape().dim(i);
      if (d.has_dim_value() || (d.has_dim_param() && !dim->has_dim_value())) *dim = d;
    }
  }

  void record_constant(const onnx::NodeProto& n) {
    for (const auto& a : n.attribute()) {
      onnx::TensorProto t;
      if (a.name() == "value" && a.has_t()) {
        t = a.t();
      } else if (a.name() == "value_int" || a.name() == "value_ints") {
        t.set_data_type(onnx::TensorProto::INT64);
        if (a.name() == "value_int")
          t.add_int64_data(a.i());
        else {
          t.add_dims(a.ints_size());
          for (int64_t v : a.ints()) t.add_int64_data(v);
        }
      } else if (a.name() == "value_float" || a.name() == "value_floats") {
        t.set_data_type(onnx::TensorProto::FLOAT);
        if (a.name() == "value_float")
          t.add_float_data(a.f());
        else {
          t.add_dims(a.floats_size());
          for (float v : a.floats()) t.add_float_data(v);
        }
      } else {
        continue;
      }
      if (!small_inline(t)) return;
      t.set_name(n.output(0));
      owned_.push_back(std::move(t));
      data_[n.output(0)] = &owned_.back();
      return;
    }
  }

  const onnx::GraphProto& graph_;
  std::unordered_map<std::string, int> opsets_;
  TypeMap types_;
  std::unordered_map<std::string, const onnx::TypeProto*> declared_;
  std::unordered_map<std::string, const onnx::TensorProto*> data_;
  std::deque<onnx::TensorProto> owned_;  // Constant-node data (stable addresses)
  int next_symbol_ = 0;
};

}  // namespace

Result<TypeMap> infer_value_types(const onnx::GraphProto& graph, int64_t opset) {
  return Inferrer(graph, opset).run();
}

}  // namespace kiln
