// The normalizer registry and small helpers shared by the import_<family>.cc files.

#include "onnx/import_context.h"

#include <map>

#include "core/check.h"
#include "core/half.h"

namespace kiln {

namespace {

std::map<std::string, NormalizeFn, std::less<>>& registry() {
  static std::map<std::string, NormalizeFn, std::less<>> r;
  return r;
}

template <class T>
void fill(Tensor& t, const std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = static_cast<T>(values[i]);
}

}  // namespace

bool register_normalizer(const char* op_type, NormalizeFn fn) {
  bool inserted = registry().emplace(op_type, fn).second;
  KILN_CHECK(inserted);  // two normalizers for one op type is a build mistake
  return inserted;
}

NormalizeFn find_normalizer(std::string_view op_type) {
  auto it = registry().find(op_type);
  return it == registry().end() ? nullptr : it->second;
}

Tensor make_tensor_of(DataType dtype, const Shape& shape, const std::vector<double>& values) {
  switch (dtype) {
    case DataType::kFloat64:
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kInt32:
    case DataType::kUInt32:
    case DataType::kInt64:
    case DataType::kUInt64:
    case DataType::kFloat32: break;
    default: dtype = DataType::kFloat32;
  }
  Tensor t(dtype, shape);
  KILN_CHECK(t.numel() == static_cast<int64_t>(values.size()));
  switch (dtype) {
    case DataType::kFloat64: fill<double>(t, values); break;
    case DataType::kFloat16: fill<Half>(t, values); break;
    case DataType::kBFloat16: fill<BFloat16>(t, values); break;
    case DataType::kInt8: fill<int8_t>(t, values); break;
    case DataType::kUInt8: fill<uint8_t>(t, values); break;
    case DataType::kInt16: fill<int16_t>(t, values); break;
    case DataType::kUInt16: fill<uint16_t>(t, values); break;
    case DataType::kInt32: fill<int32_t>(t, values); break;
    case DataType::kUInt32: fill<uint32_t>(t, values); break;
    case DataType::kInt64: fill<int64_t>(t, values); break;
    case DataType::kUInt64: fill<uint64_t>(t, values); break;
    default: fill<float>(t, values); break;
  }
  return t;
}

void ints_attr_to_input(ImportContext& ctx, NodeImport& node, const std::string& attr,
                        size_t index) {
  if (!node.attrs.has(attr)) return;
  std::vector<int64_t> v = node.attrs.get_ints(attr);
  node.attrs.erase(attr);
  Tensor t = Tensor::from_int64s({static_cast<int64_t>(v.size())}, v);
  node.set_input(index, ctx.constant(node.name + "/" + attr, std::move(t)));
}

}  // namespace kiln
