#include "server/grpc_infer.h"
namespace kiln::server {

namespace {

using Input = inference::ModelInferRequest::InferInputTensor;

Status bad(const std::string& name, const std::string& what) {
  return invalid_argument("input '" + name + "': " + what);
}

// Calls f(list) with the typed list of `c` that carries `dt`; false where none does (FP16 and
// BF16 travel as raw bytes only).
template <typename F>
bool with_list(const inference::InferTensorContents& c, DataType dt, F&& f) {
  switch (dt) {
    case DataType::kBool: f(c.bool_contents()); return true;
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32: f(c.int_contents()); return true;
    case DataType::kInt64: f(c.int64_contents()); return true;
    case DataType::kUInt8:
    case DataType::kUInt16:
    case DataType::kUInt32: f(c.uint_contents()); return true;
    case DataType::kUInt64: f(c.uint64_contents()); return true;
    case DataType::kFloat32: f(c.fp32_contents()); return true;
    case DataType::kFloat64: f(c.fp64_contents()); return true;
    default: return false;
  }
}

// `list`'s values into `t` (of the same count).
template <typename List>
void copy_values(const List& list, Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    const auto v = list[static_cast<int>(i)];
    if (t.dtype() == DataType::kInt64)
      t.data<int64_t>()[i] = static_cast<int64_t>(v);
    else if (t.dtype() == DataType::kUInt64)
      t.data<uint64_t>()[i] = static_cast<uint64_t>(v);
    else
      t.set_double(i, static_cast<double>(v));
  }
}

// With raw contents, they move into the tensor: no copy.
Result<Tensor> input_tensor(const Input& in, std::string* raw) {
  auto dt = v2_datatype(in.datatype());
  if (!dt.is_ok()) return dt.status().with_context("input '" + in.name() + "'");
  Shape shape(in.shape().begin(), in.shape().end());
  KILN_ASSIGN_OR_RETURN(const int64_t count, element_count(shape, "input '" + in.name() + "'"));
  // Sizes are checked before the tensor is made: a shape never allocates more than its data.
  if (raw) {
    const size_t nbytes = static_cast<size_t>(count) * dtype_size(*dt);
    if (raw->size() != nbytes)
      return bad(in.name(), std::to_string(raw->size()) +
                                " bytes of raw_input_contents where shape " + shape_str(shape) +
                                " of " + in.datatype() + " takes " + std::to_string(nbytes));
    return Tensor::from_bytes(*dt, shape, std::move(*raw));
  }
  int64_t given = 0;
  if (!with_list(in.contents(), *dt, [&](const auto& list) { given = list.size(); }))
    return bad(in.name(),
               std::string(v2_datatype_name(*dt)) + " travels only as raw_input_contents");
  if (given != count)
    return bad(in.name(), std::to_string(given) + " values in contents for shape " +
                              shape_str(shape) + " (" + std::to_string(count) + ")");
  Tensor t(*dt, shape);
  with_list(in.contents(), *dt, [&](const auto& list) { copy_values(list, t); });
  return t;
}

// A BYTES input: length-prefixed elements in raw_input_contents, or bytes_contents.
Result<BytesInput> bytes_input(const Input& in, const std::string* raw) {
  const std::string where = "input '" + in.name() + "'";
  BytesInput b;
  b.shape.assign(in.shape().begin(), in.shape().end());
  KILN_ASSIGN_OR_RETURN(const int64_t count, element_count(b.shape, where));
  if (raw) {
    KILN_ASSIGN_OR_RETURN(b.elements, split_bytes_elements(*raw, count, where));
    return b;
  }
  const auto& list = in.contents().bytes_contents();
  if (list.size() != count)
    return bad(in.name(), std::to_string(list.size()) + " bytes_contents for shape " +
                              shape_str(b.shape) + " (" + std::to_string(count) + ")");
  b.elements.assign(list.begin(), list.end());
  return b;
}

// A parameter's unsigned value (int64_param, uint64_param), or an error naming it.
Result<uint64_t> unsigned_param(const inference::InferParameter& p, const std::string& name) {
  if (p.has_uint64_param()) return p.uint64_param();
  if (p.has_int64_param() && p.int64_param() >= 0) return static_cast<uint64_t>(p.int64_param());
  return invalid_argument("parameter '" + name + "' is not a non-negative integer");
}

}  // namespace

Result<V2Request> from_grpc(inference::ModelInferRequest& request) {
  V2Request r;
  r.id = request.id();
  const auto& params = request.parameters();
  if (auto it = params.find("priority"); it != params.end()) {
    KILN_ASSIGN_OR_RETURN(uint64_t level, unsigned_param(it->second, "priority"));
    r.priority = static_cast<uint32_t>(level);
  }
  if (auto it = params.find("timeout"); it != params.end()) {
    KILN_ASSIGN_OR_RETURN(r.timeout_us, unsigned_param(it->second, "timeout"));
  }
  if (request.inputs().empty()) return invalid_argument("the request has no inputs");
  const int raw = request.raw_input_contents_size();
  if (raw != 0 && raw != request.inputs_size())
    return invalid_argument(std::to_string(raw) + " raw_input_contents for " +
                            std::to_string(request.inputs_size()) +
                            " inputs: give every input's raw contents, or none");
  for (int i = 0; i < request.inputs_size(); ++i) {
    const Input& in = request.inputs(i);
    if (in.datatype() == "BYTES") {
      KILN_ASSIGN_OR_RETURN(BytesInput b,
                            bytes_input(in, raw ? &request.raw_input_contents(i) : nullptr));
      if (r.inputs.count(in.name()) || !r.bytes_inputs.emplace(in.name(), std::move(b)).second)
        return invalid_argument("input '" + in.name() + "' is given twice");
      continue;
    }
    KILN_ASSIGN_OR_RETURN(Tensor t,
                          input_tensor(in, raw ? request.mutable_raw_input_contents(i) : nullptr));
    if (r.bytes_inputs.count(in.name()) || !r.inputs.emplace(in.name(), std::move(t)).second)
      return invalid_argument("input '" + in.name() + "' is given twice");
  }
  for (const auto& o : request.outputs()) r.outputs.push_back(o.name());
  return r;
}

void to_grpc(const std::string& model, int64_t version, const inference::ModelInferRequest& request,
             const Outputs& outputs, inference::ModelInferResponse* response) {
  response->set_model_name(model);
  response->set_model_version(std::to_string(version));
  response->set_id(request.id());
  for (const auto& [name, t] : outputs) {
    auto* o = response->add_outputs();
    o->set_name(name);
    o->set_datatype(v2_datatype_name(t.dtype()));
    for (int64_t d : t.shape()) o->add_shape(d);
    response->add_raw_output_contents(static_cast<const char*>(t.raw()), t.nbytes());
  }
}

}  // namespace kiln::server
