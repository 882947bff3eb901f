// ArgMax (opsets 1-13): the int64 index of the largest element of X along `axis` (default 0),
// that axis kept with extent 1 (keepdims, default 1) or dropped. Equal maxima give the lowest
// index, or the highest with select_last_index = 1 (opset 12). NaN counts as larger than every
// number, as in PyTorch and NumPy: the first NaN (or the last, with select_last_index) wins.

#include <cmath>

#include "ops/elementwise.h"

namespace kiln {

namespace {

struct ArgMaxAttrs {
  int64_t axis = 0;
  bool keepdims = true;
  bool select_last_index = false;
};

ArgMaxAttrs arg_max_attrs(const Node& n) {
  ArgMaxAttrs a;
  a.axis = n.attrs.get_int("axis", a.axis);
  a.keepdims = n.attrs.get_int("keepdims", 1) != 0;
  a.select_last_index = n.attrs.get_int("select_last_index", 0) != 0;
  return a;
}

Status infer_arg_max(const Node& node, const std::vector<TensorDesc>& in,
                     std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  KILN_RETURN_IF_ERROR(expect_dtype(in, 0, kArithmeticTypes));
  const ArgMaxAttrs a = arg_max_attrs(node);
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  if (rank == 0) return invalid_argument("input 0 is a scalar; ArgMax needs an axis");
  KILN_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a.axis, rank));
  if (in[0].shape[axis] == 0)
    return invalid_argument("axis " + std::to_string(axis) + " of " + shape_str(in[0].shape) +
                            " is empty: it has no largest element");
  Shape s = in[0].shape;
  if (a.keepdims)
    s[axis] = 1;
  else
    s.erase(s.begin() + axis);
  out[0] = {DataType::kInt64, s};
  return Status::ok();
}

// v (at a later index) replaces the best so far b: larger, NaN beyond every number; an equal
// value only when the last index is asked for.
bool replaces(double v, double b, bool last) {
  const bool vn = std::isnan(v), bn = std::isnan(b);
  if (vn || bn) return vn && (!bn || last);
  return v > b || (last && v == b);
}

Status run_arg_max(const Node& node, const std::vector<const Tensor*>& in,
                   const std::vector<Tensor*>& out) {
  const ArgMaxAttrs a = arg_max_attrs(node);
  const Tensor& x = *in[0];
  const Shape& xs = x.shape();
  const int64_t rank = static_cast<int64_t>(xs.size());
  KILN_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a.axis, rank));
  const int64_t n = xs[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= xs[d];
  int64_t* py = out[0]->data<int64_t>();
  return dispatch_numeric(x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* p = px + o * n * inner + i;
        int64_t best = 0;
        double b = static_cast<double>(ComputeT<T>(p[0]));
        for (int64_t j = 1; j < n; ++j) {
          const double v = static_cast<double>(ComputeT<T>(p[j * inner]));
          if (replaces(v, b, a.select_last_index)) best = j, b = v;
        }
        py[o * inner + i] = best;
      }
    return Status::ok();
  });
}

}  // namespace

KILN_REGISTER_OP(ArgMax, infer_arg_max, run_arg_max);

}  // namespace kiln
