// ScatterND: a copy of `data` with slices replaced (or combined, `reduction` add/mul/max/min)
// by `updates` at the positions `indices` names. indices [..., k] (int64) addresses the
// first k dims of data; updates has shape indices.shape[:-1] + data.shape[k:]. Negative
// indices count from the end; an index out of range is an error naming it.

#include <cstring>
#include <string>

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status infer_scatter_nd(const Node& node, const std::vector<TensorDesc>& in,
                        std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 3, 3));
  KILN_RETURN_IF_ERROR(expect_dtype(in, 0, kNumericTypes));
  if (in[1].dtype != DataType::kInt64)
    return invalid_argument(std::string("input 1 (indices): expected int64, got ") +
                            dtype_name(in[1].dtype));
  KILN_RETURN_IF_ERROR(expect_same_dtype(in, 2, 0));
  const std::string reduction = node.attrs.get_string("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min")
    return invalid_argument("attribute 'reduction' is '" + reduction +
                            "' (none, add, mul, max or min)");
  const Shape& d = in[0].shape;
  const Shape& idx = in[1].shape;
  if (idx.empty()) return invalid_argument("input 1 (indices) must have rank >= 1");
  const int64_t k = idx.back();
  if (k < 1 || k > static_cast<int64_t>(d.size()))
    return invalid_argument("indices address " + std::to_string(k) + " dims of a rank-" +
                            std::to_string(d.size()) + " data tensor");
  Shape want(idx.begin(), idx.end() - 1);
  want.insert(want.end(), d.begin() + k, d.end());
  if (in[2].shape != want)
    return invalid_argument("input 2 (updates) has shape " + shape_str(in[2].shape) +
                            ", expected " + shape_str(want));
  out[0] = {in[0].dtype, d};
  return Status::ok();
}

Status run_scatter_nd(const Node& node, const std::vector<const Tensor*>& in,
                      const std::vector<Tensor*>& out) {
  const Tensor& data = *in[0];
  const Tensor& indices = *in[1];
  const Tensor& updates = *in[2];
  Tensor& y = *out[0];
  std::memcpy(y.raw(), data.raw(), data.nbytes());
  const Shape& d = data.shape();
  const int64_t k = indices.shape().back();
  int64_t slice = 1;
  for (size_t i = static_cast<size_t>(k); i < d.size(); ++i) slice *= d[i];
  const int64_t n = indices.numel() / k;
  const int64_t* ix = indices.data<int64_t>();
  const std::string reduction = node.attrs.get_string("reduction", "none");
  return dispatch_numeric(data.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    using C = ComputeT<T>;
    T* py = y.data<T>();
    const T* pu = updates.data<T>();
    for (int64_t j = 0; j < n; ++j) {
      int64_t offset = 0;
      for (int64_t a = 0; a < k; ++a) {
        int64_t v = ix[j * k + a];
        if (v < 0) v += d[a];
        if (v < 0 || v >= d[a])
          return invalid_argument("indices[" + std::to_string(j) + "] has " +
                                  std::to_string(ix[j * k + a]) + " for dim " + std::to_string(a) +
                                  " of size " + std::to_string(d[a]));
        offset = offset * d[a] + v;
      }
      T* dst = py + offset * slice;
      const T* src = pu + j * slice;
      for (int64_t e = 0; e < slice; ++e) {
        if (reduction == "none") {
          dst[e] = src[e];
        } else {
          const C a = static_cast<C>(dst[e]), b = static_cast<C>(src[e]);
          C r;
          if (reduction == "add")
            r = static_cast<C>(a + b);
          else if (reduction == "mul")
            r = static_cast<C>(a * b);
          else if (reduction == "max")
            r = a < b ? b : a;
          else
            r = b < a ? b : a;
          dst[e] = T(r);
        }
      }
    }
    return Status::ok();
  });
}

}  // namespace

KILN_REGISTER_OP(ScatterND, infer_scatter_nd, run_scatter_nd);

}  // namespace kiln
