#include "ops/op_util.h"

namespace kiln {

Status check_input_count(const std::vector<TensorDesc>& in, size_t min, size_t max) {
  if (in.size() < min || in.size() > max)
    return invalid_argument("expected " + std::to_string(min) +
                            (min == max ? "" : "-" + std::to_string(max)) + " inputs, got " +
                            std::to_string(in.size()));
  for (size_t i = 0; i < min; ++i)
    if (!in[i].present())
      return invalid_argument("required input " + std::to_string(i) + " is missing");
  return Status::ok();
}

Status check_same_dtypes(const std::vector<TensorDesc>& in) {
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].present() && in[i].dtype != in[0].dtype)
      return invalid_argument("input " + std::to_string(i) + ": expected " +
                              dtype_name(in[0].dtype) + ", got " + dtype_name(in[i].dtype));
  return Status::ok();
}

Result<int64_t> normalize_axis(int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank)
    return invalid_argument(std::string(what) + " " + std::to_string(axis) +
                            " out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

Result<Shape> broadcast_shapes(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t d = s[i];
      int64_t& o = out[off + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string all;
      for (const Shape& t : shapes) all += (all.empty() ? "" : " and ") + shape_str(t);
      return invalid_argument("shapes " + all + " do not broadcast");
    }
  }
  return out;
}

std::vector<int64_t> broadcast_strides(const Shape& from, const Shape& to) {
  std::vector<int64_t> s(to.size(), 0);
  std::vector<int64_t> fs = strides_of(from);
  size_t off = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) s[off + i] = from[i] == 1 ? 0 : fs[i];
  return s;
}

Result<std::vector<int64_t>> known_int64s(const TensorDesc& d, const char* what) {
  if (!d.value)
    return unsupported(std::string(what) + " must be a constant (it is computed at run time)");
  if (d.dtype != DataType::kInt64 && d.dtype != DataType::kInt32)
    return invalid_argument(std::string(what) + " must be int64, got " + dtype_name(d.dtype));
  return d.value->to_int64s();
}

}  // namespace kiln
