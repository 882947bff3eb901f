#include "server/v2_json.h"

#include <cstring>
#include <nlohmann/json.hpp>

namespace kiln::server {

namespace {

using json = nlohmann::json;

const std::pair<const char*, DataType> kDatatypes[] = {
    {"BOOL", DataType::kBool},     {"UINT8", DataType::kUInt8},   {"UINT16", DataType::kUInt16},
    {"UINT32", DataType::kUInt32}, {"UINT64", DataType::kUInt64}, {"INT8", DataType::kInt8},
    {"INT16", DataType::kInt16},   {"INT32", DataType::kInt32},   {"INT64", DataType::kInt64},
    {"FP16", DataType::kFloat16},  {"FP32", DataType::kFloat32},  {"FP64", DataType::kFloat64},
    {"BF16", DataType::kBFloat16},
};

Status bad(const std::string& where, const std::string& what) {
  return invalid_argument(where + ": " + what);
}

// The elements of `data`, nested or flat, in row-major order.
Status flatten(const json& data, std::vector<const json*>& out, const std::string& where) {
  if (data.is_array()) {
    for (const json& d : data) KILN_RETURN_IF_ERROR(flatten(d, out, where));
    return Status::ok();
  }
  if (!data.is_number() && !data.is_boolean())
    return bad(where, std::string("data holds a ") + data.type_name() + ", not a number");
  out.push_back(&data);
  return Status::ok();
}

Status fill(Tensor& t, const std::vector<const json*>& elements, const std::string& where) {
  for (size_t i = 0; i < elements.size(); ++i) {
    const json& e = *elements[i];
    const auto k = static_cast<int64_t>(i);
    if (t.dtype() == DataType::kInt64 && e.is_number_integer())
      t.data<int64_t>()[k] = e.get<int64_t>();
    else if (t.dtype() == DataType::kUInt64 && e.is_number_unsigned())
      t.data<uint64_t>()[k] = e.get<uint64_t>();
    else if (e.is_boolean())
      t.set_double(k, e.get<bool>() ? 1 : 0);
    else if (t.dtype() == DataType::kBool || e.is_number_float() || e.is_number_integer())
      t.set_double(k, e.get<double>());
    else
      return bad(where, "element " + std::to_string(i) + " is not a number");
  }
  return Status::ok();
}

Result<Shape> shape_of(const json& input, const std::string& where) {
  if (!input.contains("shape") || !input["shape"].is_array())
    return bad(where, "'shape' is missing or not an array");
  Shape shape;
  for (const json& d : input["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      return bad(where, "'shape' holds " + d.dump() + ", not a dimension");
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

// One input: its JSON data, or its bytes from the binary part at *offset.
Result<Tensor> input_tensor(const json& input, const std::string& body, size_t* offset, size_t end,
                            std::string* name) {
  if (!input.is_object() || !input.contains("name") || !input["name"].is_string())
    return invalid_argument("an input without a 'name'");
  *name = input["name"].get<std::string>();
  const std::string where = "input '" + *name + "'";
  if (!input.contains("datatype") || !input["datatype"].is_string())
    return bad(where, "'datatype' is missing");
  auto dt = v2_datatype(input["datatype"].get<std::string>());
  if (!dt.is_ok()) return dt.status().with_context(where);
  KILN_ASSIGN_OR_RETURN(Shape shape, shape_of(input, where));
  KILN_ASSIGN_OR_RETURN(const int64_t count, element_count(shape, where));
  const size_t nbytes = static_cast<size_t>(count) * dtype_size(*dt);
  // Sizes are checked before the tensor is made: a shape never allocates more than its data.
  const json* params = input.contains("parameters") ? &input["parameters"] : nullptr;
  if (params && params->contains("binary_data_size")) {
    const json& size = (*params)["binary_data_size"];
    if (!size.is_number_unsigned()) return bad(where, "'binary_data_size' is not a byte count");
    const size_t n = size.get<size_t>();
    if (n != nbytes)
      return bad(where, "binary_data_size " + std::to_string(n) + " where shape " +
                            shape_str(shape) + " of " + input["datatype"].get<std::string>() +
                            " takes " + std::to_string(nbytes) + " bytes");
    if (n > end - *offset)
      return bad(where,
                 "the binary data ends " + std::to_string(n - (end - *offset)) + " bytes short");
    Tensor t(*dt, shape);
    if (n) std::memcpy(t.raw(), body.data() + *offset, n);
    *offset += n;
    return t;
  }
  if (!input.contains("data")) return bad(where, "neither 'data' nor 'binary_data_size'");
  std::vector<const json*> elements;
  KILN_RETURN_IF_ERROR(flatten(input["data"], elements, where));
  if (static_cast<int64_t>(elements.size()) != count)
    return bad(where, std::to_string(elements.size()) + " elements of data for shape " +
                          shape_str(shape) + " (" + std::to_string(count) + ")");
  Tensor t(*dt, shape);
  KILN_RETURN_IF_ERROR(fill(t, elements, where));
  return t;
}

// A BYTES input: its elements from the binary part at *offset (length-prefixed), or from its
// JSON data (strings).
Result<BytesInput> bytes_input(const json& input, const std::string& body, size_t* offset,
                               size_t end, const std::string& where) {
  BytesInput b;
  KILN_ASSIGN_OR_RETURN(b.shape, shape_of(input, where));
  KILN_ASSIGN_OR_RETURN(const int64_t count, element_count(b.shape, where));
  const json* params = input.contains("parameters") ? &input["parameters"] : nullptr;
  if (params && params->contains("binary_data_size")) {
    const json& size = (*params)["binary_data_size"];
    if (!size.is_number_unsigned()) return bad(where, "'binary_data_size' is not a byte count");
    const size_t n = size.get<size_t>();
    if (n > end - *offset)
      return bad(where,
                 "the binary data ends " + std::to_string(n - (end - *offset)) + " bytes short");
    KILN_ASSIGN_OR_RETURN(
        b.elements, split_bytes_elements(std::string_view(body).substr(*offset, n), count, where));
    *offset += n;
    return b;
  }
  if (!input.contains("data")) return bad(where, "neither 'data' nor 'binary_data_size'");
  std::vector<const json*> stack = {&input["data"]};
  std::vector<const json*> strings;
  while (!stack.empty()) {  // depth first, in order: row-major
    const json* d = stack.back();
    stack.pop_back();
    if (d->is_array()) {
      for (auto it = d->rbegin(); it != d->rend(); ++it) stack.push_back(&*it);
    } else if (d->is_string()) {
      if (static_cast<int64_t>(strings.size()) == count)
        return bad(where, "more strings of data than the shape's " + std::to_string(count));
      strings.push_back(d);
    } else {
      return bad(where, std::string("BYTES data holds a ") + d->type_name() + ", not a string");
    }
  }
  if (static_cast<int64_t>(strings.size()) != count)
    return bad(where, std::to_string(strings.size()) + " strings of data for shape " +
                          shape_str(b.shape) + " (" + std::to_string(count) + ")");
  for (const json* s : strings) b.elements.push_back(s->get<std::string>());
  return b;
}

Status read_parameters(const json& p, V2Request& r) {
  if (!p.is_object()) return invalid_argument("'parameters' is not an object");
  if (p.contains("binary_data_output"))
    r.binary_default = p["binary_data_output"].is_boolean() && p["binary_data_output"].get<bool>();
  if (p.contains("priority")) {
    if (!p["priority"].is_number_unsigned())
      return invalid_argument("parameter 'priority' is not a level");
    r.priority = p["priority"].get<uint32_t>();
  }
  if (p.contains("timeout")) {
    if (!p["timeout"].is_number_unsigned())
      return invalid_argument("parameter 'timeout' is not microseconds");
    r.timeout_us = p["timeout"].get<uint64_t>();
  }
  return Status::ok();
}

}  // namespace

Result<int64_t> element_count(const Shape& shape, const std::string& where) {
  constexpr int64_t kMax = int64_t{1} << 48;
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return bad(where, "shape " + shape_str(shape) + " has a negative dimension");
    if (d != 0 && count > kMax / d)
      return bad(where, "shape " + shape_str(shape) + " holds more elements than any request");
    count *= d;
  }
  return count;
}

Result<DataType> v2_datatype(const std::string& name) {
  for (const auto& [n, dt] : kDatatypes)
    if (name == n) return dt;
  return invalid_argument("datatype '" + name +
                          "' is not one kiln serves (BOOL, UINT8..UINT64, "
                          "INT8..INT64, FP16, FP32, FP64, BF16)");
}

const char* v2_datatype_name(DataType dt) {
  for (const auto& [n, d] : kDatatypes)
    if (d == dt) return n;
  return "BYTES";
}

Result<V2Request> parse_v2_request(const std::string& body, int64_t header_length) {
  if (header_length > static_cast<int64_t>(body.size()))
    return invalid_argument("Inference-Header-Content-Length " + std::to_string(header_length) +
                            " is past the body's " + std::to_string(body.size()) + " bytes");
  const size_t json_end = header_length >= 0 ? static_cast<size_t>(header_length) : body.size();
  json j = json::parse(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(json_end), nullptr,
                       /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return invalid_argument("the request is not a JSON object (malformed JSON)");
  V2Request r;
  if (j.contains("id") && j["id"].is_string()) r.id = j["id"].get<std::string>();
  if (j.contains("parameters")) KILN_RETURN_IF_ERROR(read_parameters(j["parameters"], r));
  if (!j.contains("inputs") || !j["inputs"].is_array() || j["inputs"].empty())
    return invalid_argument("the request has no 'inputs' array");
  size_t offset = json_end;
  for (const json& input : j["inputs"]) {
    std::string name;
    if (input.is_object() && input.value("datatype", json()) == "BYTES" && input.contains("name") &&
        input["name"].is_string()) {
      name = input["name"].get<std::string>();
      KILN_ASSIGN_OR_RETURN(BytesInput b,
                            bytes_input(input, body, &offset, body.size(), "input '" + name + "'"));
      if (r.inputs.count(name) || !r.bytes_inputs.emplace(name, std::move(b)).second)
        return invalid_argument("input '" + name + "' is given twice");
      continue;
    }
    KILN_ASSIGN_OR_RETURN(Tensor t, input_tensor(input, body, &offset, body.size(), &name));
    if (r.bytes_inputs.count(name) || !r.inputs.emplace(name, std::move(t)).second)
      return invalid_argument("input '" + name + "' is given twice");
  }
  if (offset != body.size())
    return invalid_argument(std::to_string(body.size() - offset) +
                            " bytes of binary data no input claims");
  if (j.contains("outputs")) {
    if (!j["outputs"].is_array()) return invalid_argument("'outputs' is not an array");
    for (const json& o : j["outputs"]) {
      if (!o.is_object() || !o.contains("name") || !o["name"].is_string())
        return invalid_argument("a requested output without a 'name'");
      const std::string name = o["name"].get<std::string>();
      r.outputs.push_back(name);
      bool binary = r.binary_default;
      if (o.contains("parameters") && o["parameters"].contains("binary_data"))
        binary = o["parameters"]["binary_data"].is_boolean() &&
                 o["parameters"]["binary_data"].get<bool>();
      r.binary[name] = binary;
    }
  }
  return r;
}

V2Response v2_response(const std::string& model, int64_t version, const V2Request& request,
                       const Outputs& outputs) {
  json j;
  j["model_name"] = model;
  j["model_version"] = std::to_string(version);
  if (!request.id.empty()) j["id"] = request.id;
  j["outputs"] = json::array();
  std::string binary;
  bool any_binary = false;
  for (const auto& [name, t] : outputs) {
    json o;
    o["name"] = name;
    o["datatype"] = v2_datatype_name(t.dtype());
    o["shape"] = t.shape();
    auto it = request.binary.find(name);
    const bool as_binary = it != request.binary.end() ? it->second : request.binary_default;
    if (as_binary) {
      any_binary = true;
      o["parameters"]["binary_data_size"] = t.nbytes();
      binary.append(static_cast<const char*>(t.raw()), t.nbytes());
    } else {
      json data = json::array();
      for (int64_t i = 0; i < t.numel(); ++i) {
        if (t.dtype() == DataType::kInt64)
          data.push_back(t.data<int64_t>()[i]);
        else if (t.dtype() == DataType::kUInt64)
          data.push_back(t.data<uint64_t>()[i]);
        else if (t.dtype() == DataType::kBool)
          data.push_back(t.data<uint8_t>()[i] != 0);
        else
          data.push_back(t.at_double(i));
      }
      o["data"] = std::move(data);
    }
    j["outputs"].push_back(std::move(o));
  }
  V2Response r;
  r.body = j.dump();
  if (any_binary) {
    r.header_length = static_cast<int64_t>(r.body.size());
    r.body += binary;
  }
  return r;
}

}  // namespace kiln::server
