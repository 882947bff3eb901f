#include "onnx/tensor_proto.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kiln {

namespace {

template <class Dst, class Src>
void copy_field(Tensor& t, const google::protobuf::RepeatedField<Src>& field) {
  Dst* d = t.data<Dst>();
  for (int i = 0; i < field.size(); ++i) d[i] = static_cast<Dst>(field.Get(i));
}

// Reads external data: location/offset/length keys, path relative to the model's folder.
Status read_external(const onnx::TensorProto& p, const std::string& base_dir, Tensor& t) {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = std::stoll(kv.value());
    else if (kv.key() == "length")
      length = std::stoll(kv.value());
  }
  if (location.empty()) return invalid_argument("external data without a location");
  std::filesystem::path rel(location);
  if (rel.is_absolute() || rel.lexically_normal().string().rfind("..", 0) == 0)
    return invalid_argument("external data location '" + location +
                            "' must be a relative path inside the model's folder");
  std::filesystem::path full = std::filesystem::path(base_dir) / rel;
  std::ifstream f(full, std::ios::binary);
  if (!f) return not_found("external data file '" + full.string() + "' not found");
  f.seekg(0, std::ios::end);
  int64_t size = f.tellg();
  int64_t want = static_cast<int64_t>(t.nbytes());
  if (length >= 0 && length != want)
    return invalid_argument("external data length " + std::to_string(length) +
                            " != " + std::to_string(want) + " bytes the tensor needs");
  if (offset < 0 || offset + want > size)
    return invalid_argument("external data file '" + full.string() + "' is too short (" +
                            std::to_string(size) + " bytes, need " + std::to_string(offset + want) +
                            ")");
  f.seekg(offset);
  f.read(static_cast<char*>(t.raw()), want);
  if (!f) return internal_error("reading '" + full.string() + "' failed");
  return Status::ok();
}

}  // namespace

Result<Tensor> tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir,
                                 std::string* take_raw) {
  std::string what = "tensor '" + p.name() + "'";
  auto dt = static_cast<DataType>(p.data_type());
  if (dt == DataType::kString) return unsupported(what + ": string tensors are not supported");
  if (dtype_size(dt) == 0)
    return unsupported(what + ": unsupported element type " + std::to_string(p.data_type()));
  Shape shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape)
    if (d < 0) return invalid_argument(what + ": negative dimension in " + shape_str(shape));
  // Guard against absurd sizes from corrupted files before allocating.
  constexpr int64_t kMaxElements = int64_t{1} << 34;
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d != 0 && numel > kMaxElements / d)
      return invalid_argument(what + ": shape " + shape_str(shape) + " is too large");
    numel *= d;
  }
  const size_t bytes = static_cast<size_t>(numel) * dtype_size(dt);
  if (p.data_location() != onnx::TensorProto::EXTERNAL && p.has_raw_data()) {
    if (p.raw_data().size() != bytes)
      return invalid_argument(what + ": raw_data holds " + std::to_string(p.raw_data().size()) +
                              " bytes, shape " + shape_str(shape) + " of " + dtype_name(dt) +
                              " needs " + std::to_string(bytes));
    if (take_raw && take_raw == &p.raw_data() && bytes > 0)
      return Tensor::from_bytes(dt, shape, std::move(*take_raw));
  }
  Tensor t(dt, shape);
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    KILN_RETURN_IF_ERROR_CTX(read_external(p, base_dir, t), what);
    return t;
  }
  if (p.has_raw_data()) {
    if (bytes) std::memcpy(t.raw(), p.raw_data().data(), bytes);
    return t;
  }
  auto count_error = [&](int got) {
    return invalid_argument(what + ": holds " + std::to_string(got) + " values, shape " +
                            shape_str(shape) + " needs " + std::to_string(numel));
  };
  switch (dt) {
    case DataType::kFloat32:
      if (p.float_data_size() != numel) return count_error(p.float_data_size());
      copy_field<float>(t, p.float_data());
      break;
    case DataType::kFloat64:
      if (p.double_data_size() != numel) return count_error(p.double_data_size());
      copy_field<double>(t, p.double_data());
      break;
    case DataType::kInt64:
      if (p.int64_data_size() != numel) return count_error(p.int64_data_size());
      copy_field<int64_t>(t, p.int64_data());
      break;
    case DataType::kUInt32:
    case DataType::kUInt64:
      if (p.uint64_data_size() != numel) return count_error(p.uint64_data_size());
      if (dt == DataType::kUInt32)
        copy_field<uint32_t>(t, p.uint64_data());
      else
        copy_field<uint64_t>(t, p.uint64_data());
      break;
    default:  // int32_data carries int32, int16, int8, uint16, uint8, bool, float16, bfloat16
      if (p.int32_data_size() != numel) return count_error(p.int32_data_size());
      switch (dt) {
        case DataType::kInt32: copy_field<int32_t>(t, p.int32_data()); break;
        case DataType::kInt16: copy_field<int16_t>(t, p.int32_data()); break;
        case DataType::kInt8: copy_field<int8_t>(t, p.int32_data()); break;
        case DataType::kUInt16:
        case DataType::kFloat16:
        case DataType::kBFloat16: copy_field<uint16_t>(t, p.int32_data()); break;
        case DataType::kUInt8:
        case DataType::kBool: copy_field<uint8_t>(t, p.int32_data()); break;
        default: return unsupported(what + ": element type " + dtype_name(dt));
      }
  }
  return t;
}

Result<Tensor> read_tensor_pb(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found("tensor file '" + path + "' not found");
  std::stringstream ss;
  ss << f.rdbuf();
  onnx::TensorProto p;
  if (!p.ParseFromString(ss.str()))
    return invalid_argument("'" + path + "' is not a serialized ONNX TensorProto");
  auto dir = std::filesystem::path(path).parent_path().string();
  return tensor_from_proto(p, dir.empty() ? "." : dir).with_context(path);
}

}  // namespace kiln
