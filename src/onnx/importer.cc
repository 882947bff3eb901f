// ONNX ModelProto → kiln Graph: parse, pre-check what kiln supports (opset, domains, ops),
// run the ONNX checker and shape inference (shape_infer.cc), then build Values and Nodes,
// normalizing older opset forms through the per-family normalizers (import_<family>.cc).
//
// libonnx reports problems by throwing (checker::ValidationError, InferenceError, and
// std::exception from protobuf helpers); every such call is wrapped so nothing escapes.

#include "onnx/importer.h"

#include <fcntl.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "onnx/expand_quantized.h"
#include "onnx/import_context.h"
#include "onnx/shape_infer.h"
#include "onnx/tensor_proto.h"
#include "onnx/topological_sort.h"

namespace kiln {

namespace {

constexpr int64_t kMaxOpset = 17;

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// A node kiln imports from its domain: the default ONNX domain, or TensorRT's plugin node
// EfficientNMS_TRT of domain "TRT" (where place_plugin_nodes puts it when written without one).
bool importable_domain(const onnx::NodeProto& n) {
  return is_default_domain(n.domain()) ||
         (n.domain() == "TRT" && n.op_type() == "EfficientNMS_TRT");
}

// Runs `f`, turning any exception into a Status with `what` as context.
template <class F>
Status guarded(const std::string& what, F&& f) {
  try {
    f();
    return Status::ok();
  } catch (const std::exception& e) {
    return invalid_argument(what + ": " + e.what());
  } catch (...) {
    return internal_error(what + ": unknown exception");
  }
}

// EfficientNMS_TRT nodes written without a domain (graph tools' default) into domain "TRT",
// where TensorRT's plugins live: ONNX's checker knows no such op in the default domain.
// `moved` says whether any was.
void place_plugin_nodes(onnx::ModelProto& m, bool* moved) {
  for (auto& n : *m.mutable_graph()->mutable_node())
    if (is_default_domain(n.domain()) && n.op_type() == "EfficientNMS_TRT") {
      n.set_domain("TRT");
      *moved = true;
    }
  if (!*moved) return;
  for (const auto& imp : m.opset_import())
    if (imp.domain() == "TRT") return;
  auto* imp = m.add_opset_import();
  imp->set_domain("TRT");
  imp->set_version(1);
}

// Checks what kiln itself supports before libonnx sees the model, so errors name the real
// cause ("opset 18") instead of a checker message about it.
Result<int64_t> precheck(const onnx::ModelProto& m, const std::string& what) {
  int64_t opset = -1;
  for (const auto& imp : m.opset_import())
    if (is_default_domain(imp.domain())) opset = imp.version();
  if (opset < 0) {
    // IR version 1/2 models may omit opset_import: ONNX then means opset 1.
    if (m.opset_import_size() == 0 && m.ir_version() < 3)
      opset = 1;
    else
      return invalid_argument(what + ": no opset import for the default ONNX domain");
  }
  if (opset > kMaxOpset)
    return unsupported(what + ": opset " + std::to_string(opset) +
                       " is newer than kiln supports (≤ " + std::to_string(kMaxOpset) + ")");
  const auto& nodes = m.graph().node();
  for (int i = 0; i < nodes.size(); ++i) {
    const auto& n = nodes[i];
    std::string name = n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name();
    if (!importable_domain(n))
      return unsupported(what + ": node '" + name + "': op '" + n.op_type() + "' of domain '" +
                         n.domain() +
                         "' is not supported by kiln (only the default ONNX domain, and "
                         "EfficientNMS_TRT of domain TRT)");
    // Checked before libonnx runs too: its shape inference of ops kiln never runs (function
    // ops such as LayerNormalization) is where corrupted models have crashed it.
    if (!onnx_op_importable(n.op_type()))
      return unsupported(what + ": node '" + name + "': op '" + n.op_type() +
                         "' is not supported by kiln");
  }
  return opset;
}

Status set_type(Value& v, const onnx::TypeProto& type) {
  if (type.value_case() != onnx::TypeProto::kTensorType) {
    const char* kind = type.value_case() == onnx::TypeProto::kSequenceType       ? "a sequence"
                       : type.value_case() == onnx::TypeProto::kOptionalType     ? "an optional"
                       : type.value_case() == onnx::TypeProto::kMapType          ? "a map"
                       : type.value_case() == onnx::TypeProto::kSparseTensorType ? "a sparse tensor"
                                                                                 : "a non-tensor";
    return unsupported("value '" + v.name + "' has " + kind + " type; kiln supports tensors only");
  }
  const auto& tt = type.tensor_type();
  if (tt.has_elem_type()) v.dtype = static_cast<DataType>(tt.elem_type());
  if (tt.has_shape()) {
    v.has_shape = true;
    v.dims.clear();
    for (const auto& d : tt.shape().dim()) {
      Dim dim;
      if (d.has_dim_value() && d.dim_value() >= 0)
        dim.value = d.dim_value();
      else if (d.has_dim_param())
        dim.param = d.dim_param();
      v.dims.push_back(dim);
    }
  }
  return Status::ok();
}

Result<AttrValue> convert_attribute(const onnx::AttributeProto& a, const std::string& base_dir) {
  using A = onnx::AttributeProto;
  auto type = a.type();
  if (type == A::UNDEFINED) {  // very old models leave the type out; infer from the field set
    if (a.has_f())
      type = A::FLOAT;
    else if (a.has_i())
      type = A::INT;
    else if (a.has_s())
      type = A::STRING;
    else if (a.has_t())
      type = A::TENSOR;
    else if (a.has_g())
      type = A::GRAPH;
    else if (a.floats_size())
      type = A::FLOATS;
    else if (a.ints_size())
      type = A::INTS;
    else if (a.strings_size())
      type = A::STRINGS;
  }
  switch (type) {
    case A::FLOAT: return AttrValue(a.f());
    case A::INT: return AttrValue(static_cast<int64_t>(a.i()));
    case A::STRING: return AttrValue(a.s());
    case A::FLOATS: return AttrValue(std::vector<float>(a.floats().begin(), a.floats().end()));
    case A::INTS: return AttrValue(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case A::STRINGS:
      return AttrValue(std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case A::TENSOR: {
      KILN_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(a.t(), base_dir));
      return AttrValue(std::move(t));
    }
    case A::GRAPH:
    case A::GRAPHS: return unsupported("is a graph; kiln does not support subgraphs");
    case A::SPARSE_TENSOR:
    case A::SPARSE_TENSORS: return unsupported("is a sparse tensor; kiln does not support those");
    default: return unsupported("has unsupported type " + std::to_string(static_cast<int>(type)));
  }
}

class OnnxImporter {
 public:
  // `g` is consumed: initializers' raw bytes are moved into the graph's constants.
  OnnxImporter(onnx::GraphProto& g, int64_t opset, std::string base_dir, TypeMap types)
      : proto_(g),
        graph_(std::make_unique<Graph>()),
        ctx_(*graph_, opset),
        base_dir_(std::move(base_dir)),
        types_(std::move(types)) {
    graph_->opset = opset;
    graph_->name = g.name();
  }

  Result<std::unique_ptr<Graph>> run() {
    KILN_RETURN_IF_ERROR(add_values());
    for (int i = 0; i < proto_.node_size(); ++i) KILN_RETURN_IF_ERROR(add_node(i));
    for (const auto& o : proto_.output()) {
      Value* v = find(o.name());
      if (!v) return invalid_argument("graph output '" + o.name() + "' is never produced");
      graph_->outputs().push_back(v);
    }
    graph_->remove_unused_values();
    KILN_RETURN_IF_ERROR(graph_->topo_sort());
    KILN_RETURN_IF_ERROR(verify_graph(*graph_));
    return std::move(graph_);
  }

 private:
  Value* find(const std::string& name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
  }

  // Creates every named Value up front (initializers, inputs, node outputs) so the
  // original names are kept; values the normalizers add later get suffixed names.
  Status add_values() {
    for (auto& init : *proto_.mutable_initializer()) {
      if (find(init.name()))
        return invalid_argument("initializer '" + init.name() + "' appears twice");
      std::string* raw = init.has_raw_data() ? init.mutable_raw_data() : nullptr;
      KILN_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(init, base_dir_, raw));
      by_name_[init.name()] = graph_->add_constant(init.name(), std::move(t));
    }
    if (proto_.sparse_initializer_size() > 0)
      return unsupported("sparse initializers are not supported");
    // IR < 4 lists initializers among the inputs too; those stay constants.
    for (const auto& in : proto_.input()) {
      if (find(in.name())) continue;
      Value* v = graph_->add_value(in.name());
      KILN_RETURN_IF_ERROR(set_type(*v, in.type()).with_context("graph input"));
      by_name_[in.name()] = v;
      graph_->inputs().push_back(v);
    }
    for (const auto& n : proto_.node()) {
      for (const auto& out : n.output()) {
        if (out.empty()) continue;
        if (find(out)) return invalid_argument("value '" + out + "' is produced twice");
        Value* v = graph_->add_value(out);
        by_name_[out] = v;
        auto it = types_.find(out);
        if (it != types_.end()) KILN_RETURN_IF_ERROR(set_type(*v, it->second));
      }
    }
    return Status::ok();
  }

  Status add_node(int index) {
    const onnx::NodeProto& n = proto_.node(index);
    NodeImport ni;
    ni.op_type = n.op_type();
    ni.name = ctx_.unique_node_name(n.name().empty() ? n.op_type() + "_" + std::to_string(index)
                                                     : n.name());
    const std::string where = "node '" + ni.name + "'";
    NormalizeFn normalize = find_normalizer(ni.op_type);
    const auto kind = op_from_name(ni.op_type);
    if ((!kind || !is_onnx_op(*kind)) && !normalize)
      return unsupported(where + ": op '" + ni.op_type + "' is not supported by kiln");

    for (const auto& in : n.input()) {
      if (in.empty()) {
        ni.inputs.push_back(nullptr);
        continue;
      }
      Value* v = find(in);
      if (!v) return invalid_argument(where + ": input '" + in + "' is never produced");
      ni.inputs.push_back(v);
    }
    for (const auto& out : n.output()) ni.outputs.push_back(out.empty() ? nullptr : find(out));
    for (const auto& a : n.attribute()) {
      auto v = convert_attribute(a, base_dir_);
      if (!v.is_ok()) return v.status().with_context(where + ": attribute '" + a.name() + "'");
      ni.attrs.set(a.name(), std::move(v).value());
    }
    // A pre-opset-6 memory hint, meaningless for inference.
    ni.attrs.erase("consumed_inputs");

    if (normalize) KILN_RETURN_IF_ERROR(normalize(ctx_, ni));
    if (ni.emitted) return Status::ok();
    auto op = op_from_name(ni.op_type);
    if (!op || !is_onnx_op(*op))
      return unsupported(where + ": op '" + ni.op_type + "' is not supported by kiln");
    while (!ni.inputs.empty() && !ni.inputs.back()) ni.inputs.pop_back();
    while (!ni.outputs.empty() && !ni.outputs.back()) ni.outputs.pop_back();
    ctx_.add_node(*op, ni.name, std::move(ni.inputs), std::move(ni.outputs), std::move(ni.attrs));
    return Status::ok();
  }

  onnx::GraphProto& proto_;
  std::unique_ptr<Graph> graph_;
  ImportContext ctx_;
  std::string base_dir_;
  TypeMap types_;
  std::unordered_map<std::string, Value*> by_name_;
};

// Parses, checks and imports. `path` is set for files (the checker then resolves external
// data itself), empty for bytes.
Result<std::unique_ptr<Graph>> import_model(std::string_view bytes, const std::string& base_dir,
                                            const std::string& what, const std::string& path) {
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    return invalid_argument(what + " is " + std::to_string(bytes.size()) +
                            " bytes; protobuf parses at most 2 GiB (use external data)");
  onnx::ModelProto model;
  bool parsed = false;
  KILN_RETURN_IF_ERROR(guarded(
      what, [&] { parsed = model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())); }));
  if (!parsed)
    return invalid_argument(what + " is not a valid ONNX model (truncated or corrupted?)");
  // The operator forms of quantized models (QLinearConv, ConvInteger, ONNX Runtime's
  // com.microsoft QLinearAdd…) become Q/DQ around float ops first (expand_quantized.h).
  bool expanded = false;
  KILN_RETURN_IF_ERROR_CTX(expand_quantized_operators(model, base_dir, &expanded), what);
  place_plugin_nodes(model, &expanded);
  KILN_ASSIGN_OR_RETURN(int64_t opset, precheck(model, what));
  // Nodes out of order are sorted, not refused (topological_sort.h); the checker then sees
  // the sorted graph, so it must check the model in memory, not re-read the file.
  bool reordered = false;
  KILN_RETURN_IF_ERROR_CTX(sort_nodes_topologically(*model.mutable_graph(), &reordered), what);

  // The path-based checker re-reads the file but resolves external data; use it only when
  // the model has external data (parsing a 100 MB model twice costs about a second).
  bool has_external = false;
  for (const auto& t : model.graph().initializer())
    has_external |= t.data_location() == onnx::TensorProto::EXTERNAL;
  Status checked = guarded(what + ": ONNX checker", [&] {
    if (has_external && !path.empty() && !reordered && !expanded)
      onnx::checker::check_model(path);
    else
      onnx::checker::check_model(model);
  });
  KILN_RETURN_IF_ERROR(checked);

  // Shape inference failing on a valid model only means some shapes stay unknown.
  // Types of every value: declared, or inferred node by node (see shape_infer.h).
  auto types = infer_value_types(model.graph(), opset);
  if (!types.is_ok()) return types.status().with_context(what);

  // Building touches protobuf and file helpers that may throw (e.g. a malformed external
  // data offset); keep the no-exception promise here too.
  try {
    OnnxImporter importer(*model.mutable_graph(), opset, base_dir, std::move(types).value());
    auto graph = importer.run().with_context(what);
    if (graph.is_ok())
      for (const auto& p : model.metadata_props()) (*graph)->metadata[p.key()] = p.value();
    return graph;
  } catch (const std::exception& e) {
    return invalid_argument(what + ": " + e.what());
  }
}

}  // namespace

std::string ImportContext::unique_node_name(const std::string& hint) {
  std::string name = hint;
  for (int i = 1; node_names_.count(name); ++i) name = hint + "__" + std::to_string(i);
  node_names_.insert(name);
  return name;
}

Node* ImportContext::add_node(OpKind op, const std::string& name, std::vector<Value*> inputs,
                              std::vector<Value*> outputs, Attributes attrs) {
  // Names from NodeImport are already reserved; only fresh names need a suffix.
  std::string unique = node_names_.count(name) ? name : unique_node_name(name);
  return graph_.add_node(op, unique, std::move(inputs), std::move(outputs), std::move(attrs));
}

const Tensor* ImportContext::known_value(const Value* v) const {
  if (!v) return nullptr;
  if (v->is_constant()) return &v->constant;
  if (v->producer && v->producer->op == OpKind::Constant)
    return v->producer->attrs.get_tensor("value");
  return nullptr;
}

bool onnx_op_importable(std::string_view op_type) {
  const auto op = op_from_name(op_type);
  return (op && is_onnx_op(*op)) || find_normalizer(op_type) != nullptr;
}

Result<std::unique_ptr<Graph>> import_onnx_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return not_found("model file '" + path + "' not found");
  // The file is mapped, not read: a read into a buffer first zero-fills it and then copies
  // the whole file through the kernel, and every page of that fresh buffer faults. Mapped
  // with MAP_POPULATE, the page cache's pages are wired in one go.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return not_found("model file '" + path + "' not found");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return not_found("cannot read model file '" + path + "'");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = nullptr;
  if (size > 0) {
    map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (map == MAP_FAILED) {
      ::close(fd);
      return not_found("cannot map model file '" + path + "'");
    }
  }
  ::close(fd);
  std::unique_ptr<void, std::function<void(void*)>> unmap(map, [size](void* p) {
    if (p) ::munmap(p, size);
  });
  std::string dir = std::filesystem::path(path).parent_path().string();
  return import_model(std::string_view(static_cast<const char*>(map), size),
                      dir.empty() ? "." : dir, "'" + path + "'", path);
}

Result<std::unique_ptr<Graph>> import_onnx_bytes(const std::string& bytes,
                                                 const std::string& base_dir,
                                                 const std::string& what) {
  return import_model(bytes, base_dir, what, "");
}

}  // namespace kiln
