// Range: the 1-D sequence start, start + delta, ... up to (excluding) limit; three scalar
// inputs of one dtype (float32, float64, int16, int32, int64), known when the shape rule runs.
// Length max(ceil((limit - start) / delta), 0); a zero delta is an error.

#include <cmath>

#include "ops/elementwise.h"

namespace kiln {

namespace {

constexpr DataType kRangeTypes[] = {DataType::kFloat32, DataType::kFloat64, DataType::kInt16,
                                    DataType::kInt32, DataType::kInt64};

Result<int64_t> range_length(const std::vector<TensorDesc>& in) {
  for (int i = 0; i < 3; ++i) {
    if (!in[i].shape.empty() && shape_numel(in[i].shape) != 1)
      return invalid_argument("input " + std::to_string(i) + " must be a scalar, got " +
                              shape_str(in[i].shape));
    if (!in[i].value)
      return unsupported("input " + std::to_string(i) +
                         " must be a constant (it is computed at run time)");
  }
  const double start = in[0].value->at_double(0), limit = in[1].value->at_double(0),
               delta = in[2].value->at_double(0);
  if (delta == 0) return invalid_argument("delta (input 2) is 0");
  if (!std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
    return invalid_argument("start, limit and delta must be finite");
  const double n = std::ceil((limit - start) / delta);
  if (n > static_cast<double>(int64_t{1} << 40))
    return invalid_argument("Range of " + std::to_string(n) + " elements");
  return n > 0 ? static_cast<int64_t>(n) : int64_t{0};
}

Status infer_range(const Node& node, const std::vector<TensorDesc>& in,
                   std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 3, 3));
  KILN_RETURN_IF_ERROR(expect_dtype(in, 0, kRangeTypes));
  KILN_RETURN_IF_ERROR(expect_same_dtype(in, 1, 0));
  KILN_RETURN_IF_ERROR(expect_same_dtype(in, 2, 0));
  KILN_ASSIGN_OR_RETURN(int64_t n, range_length(in));
  out[0] = {in[0].dtype, {n}};
  return Status::ok();
}

Status run_range(const Node& node, const std::vector<const Tensor*>& in,
                 const std::vector<Tensor*>& out) {
  return dispatch_numeric(in[0]->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (kIsFloatType<T> || kIsIntType<T>) {
      // The spec's formula: start + i·delta, in the dtype itself.
      using C = ComputeT<T>;
      const C start = static_cast<C>(in[0]->data<T>()[0]);
      const C delta = static_cast<C>(in[2]->data<T>()[0]);
      T* y = out[0]->data<T>();
      for (int64_t i = 0; i < out[0]->numel(); ++i)
        y[i] = T(static_cast<C>(start + static_cast<C>(i) * delta));
      return Status::ok();
    } else {
      return unsupported("Range of bool");
    }
  });
}

}  // namespace

KILN_REGISTER_OP(Range, infer_range, run_range);

}  // namespace kiln
