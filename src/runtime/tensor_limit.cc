#include "runtime/tensor_limit.h"

#include <string>

namespace kiln {

Status check_tensor_size(DataType dtype, const Shape& shape, int64_t max_bytes) {
  int64_t bytes = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t dim : shape)
    if (dim == 0) return Status::ok();
  for (int64_t dim : shape)
    if (dim < 0) return invalid_argument("shape " + shape_str(shape) + " has a negative dimension");
  for (int64_t dim : shape)
    if (__builtin_mul_overflow(bytes, dim, &bytes) || bytes > max_bytes)
      return Status(StatusCode::kResourceExhausted,
                    "shape " + shape_str(shape) + " of " + dtype_name(dtype) +
                        " exceeds the per-tensor limit of " + std::to_string(max_bytes) +
                        " bytes (EngineOptions::max_tensor_bytes)");
  return Status::ok();
}

Status check_declared_sizes(const Graph& g, int64_t max_bytes) {
  for (const auto& v : g.values()) {
    if (!v->has_shape || v->dtype == DataType::kUndefined) continue;
    Shape shape;
    bool known = true;
    for (const Dim& d : v->dims) {
      known &= d.known();
      shape.push_back(d.value);
    }
    if (!known) continue;
    Status s = check_tensor_size(v->dtype, shape, max_bytes);
    if (s.is_ok()) continue;
    const std::string what = "value '" + v->name + "'";
    return s.with_context(v->producer ? v->producer->describe() + ": output " + what : what);
  }
  return Status::ok();
}

}  // namespace kiln
