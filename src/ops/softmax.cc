// Softmax (opset-13 semantics): y = exp(x - max) / sum(exp(x - max)) along one axis
// (default -1). Subtracting the max keeps exp from overflowing; the result is the same.

#include "ops/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "ops/op_util.h"

namespace kiln {

namespace {

Status infer_softmax(const Node& node, const std::vector<TensorDesc>& in,
                     std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  if (!dtype_is_float(in[0].dtype))
    return unsupported(std::string("input 0: element type ") + dtype_name(in[0].dtype) +
                       " (Softmax takes float types)");
  KILN_RETURN_IF_ERROR(
      normalize_axis(softmax_attrs(node).axis, in[0].shape.size(), "axis").status());
  out[0] = {in[0].dtype, in[0].shape};
  return Status::ok();
}

Status run_softmax(const Node& node, const std::vector<const Tensor*>& in,
                   const std::vector<Tensor*>& out) {
  const Tensor& x = *in[0];
  KILN_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(softmax_attrs(node).axis, x.rank()));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dim(i);
  for (int64_t i = axis + 1; i < x.rank(); ++i) inner *= x.dim(i);
  const int64_t n = x.dim(axis);
  return dispatch_float(x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* xd = x.data<T>();
    T* yd = out[0]->data<T>();
    std::vector<C> e(n);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * n * inner + i;
        C mx = -std::numeric_limits<C>::infinity();
        for (int64_t k = 0; k < n; ++k) mx = std::max(mx, static_cast<C>(xd[base + k * inner]));
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) {
          e[k] = std::exp(static_cast<C>(xd[base + k * inner]) - mx);
          sum += e[k];
        }
        for (int64_t k = 0; k < n; ++k) yd[base + k * inner] = T(static_cast<C>(e[k] / sum));
      }
    }
    return Status::ok();
  });
}

}  // namespace

KILN_REGISTER_OP(Softmax, infer_softmax, run_softmax);

}  // namespace kiln
