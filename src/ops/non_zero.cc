// NonZero: the indices of the nonzero elements of X, as an int64 [rank(X), count] tensor whose
// column j is the multi-index of the j-th nonzero element in row-major order (numpy's
// nonzero, stacked). A scalar X gives [0, count] (no index axes). The count follows X's
// values, so the shape rule needs X's contents (OpDef::shape_follows_data).

#include "ops/elementwise.h"

namespace kiln {

namespace {

// Whether element i of x is nonzero (NaN is nonzero, as in numpy).
bool element_nonzero(const Tensor& x, int64_t i) { return x.at_double(i) != 0.0; }

Result<int64_t> count_nonzero(const TensorDesc& x) {
  if (!x.value)
    return unsupported("its output shape follows the values of input 0, computed at run time");
  int64_t n = 0;
  for (int64_t i = 0; i < x.value->numel(); ++i) n += element_nonzero(*x.value, i);
  return n;
}

Status infer_non_zero(const Node&, const std::vector<TensorDesc>& in,
                      std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  KILN_RETURN_IF_ERROR(expect_dtype(in, 0, kNumericTypes));
  KILN_ASSIGN_OR_RETURN(int64_t n, count_nonzero(in[0]));
  out[0] = {DataType::kInt64, {static_cast<int64_t>(in[0].shape.size()), n}};
  return Status::ok();
}

// At most every element is nonzero: [rank(X), numel(X)].
Status bound_non_zero(const Node&, const std::vector<TensorDesc>& in,
                      std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  KILN_RETURN_IF_ERROR(expect_dtype(in, 0, kNumericTypes));
  out[0] = {DataType::kInt64, {static_cast<int64_t>(in[0].shape.size()), in[0].numel()}};
  return Status::ok();
}

Status run_non_zero(const Node&, const std::vector<const Tensor*>& in,
                    const std::vector<Tensor*>& out) {
  const Tensor& x = *in[0];
  const Shape& shape = x.shape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t count = out[0]->shape()[1];
  int64_t* y = out[0]->data<int64_t>();
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t j = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (element_nonzero(x, i)) {
      if (j >= count) return internal_error("NonZero: more nonzero elements than planned");
      for (int64_t d = 0; d < rank; ++d) y[d * count + j] = idx[d];
      ++j;
    }
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  if (j != count) return internal_error("NonZero: fewer nonzero elements than planned");
  return Status::ok();
}

}  // namespace

KILN_REGISTER_BOUNDED_OP(NonZero, infer_non_zero, run_non_zero, bound_non_zero, 1);

}  // namespace kiln
