#include "ops/elementwise.h"

#include <algorithm>
#include <string>

namespace kiln {

Status expect_dtype(const std::vector<TensorDesc>& in, size_t index,
                    std::span<const DataType> allowed) {
  const DataType dt = in[index].dtype;
  if (std::find(allowed.begin(), allowed.end(), dt) != allowed.end()) return Status::ok();
  std::string names;
  for (DataType a : allowed) names += (names.empty() ? "" : ", ") + std::string(dtype_name(a));
  return invalid_argument("input " + std::to_string(index) + ": expected one of " + names +
                          "; got " + dtype_name(dt));
}

Status expect_same_dtype(const std::vector<TensorDesc>& in, size_t index, size_t like) {
  if (in[index].dtype == in[like].dtype) return Status::ok();
  return invalid_argument("input " + std::to_string(index) + ": expected " +
                          dtype_name(in[like].dtype) + " (the dtype of input " +
                          std::to_string(like) + "), got " + dtype_name(in[index].dtype));
}

Status infer_unary_float(const Node& node, const std::vector<TensorDesc>& in,
                         std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  KILN_RETURN_IF_ERROR(expect_dtype(in, 0, kFloatTypes));
  out[0] = {in[0].dtype, in[0].shape};
  return Status::ok();
}

Status infer_unary_signed(const Node& node, const std::vector<TensorDesc>& in,
                          std::vector<TensorDesc>& out) {
  static constexpr DataType kSigned[] = {
      DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
      DataType::kInt8,    DataType::kInt16,   DataType::kInt32,   DataType::kInt64};
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  KILN_RETURN_IF_ERROR(expect_dtype(in, 0, kSigned));
  out[0] = {in[0].dtype, in[0].shape};
  return Status::ok();
}

Status infer_binary_broadcast(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                              std::span<const DataType> allowed, DataType out_dtype,
                              bool same_dtype) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 2, 2));
  KILN_RETURN_IF_ERROR(expect_dtype(in, 0, allowed));
  if (same_dtype) KILN_RETURN_IF_ERROR(expect_same_dtype(in, 1, 0));
  KILN_ASSIGN_OR_RETURN(Shape shape, broadcast_shapes({in[0].shape, in[1].shape}));
  out[0] = {out_dtype == DataType::kUndefined ? in[0].dtype : out_dtype, std::move(shape)};
  return Status::ok();
}

}  // namespace kiln
