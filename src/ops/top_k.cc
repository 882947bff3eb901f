// TopK: the k largest (or smallest) elements of X along `axis`, and their int64 indices.
// Outputs are X's shape with that axis k long, ordered best first; equal values keep their
// order along the axis (the lower index first), as ONNX asks. NaN counts as larger than every
// number (so it leads the largest and trails the smallest), as in PyTorch. k is input 1, an
// int64 tensor of one element; when the graph computes it, the output shapes follow the data
// (OpDef::shape_follows_data).

#include "ops/top_k.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/elementwise.h"

namespace kiln {

namespace {

Result<int64_t> k_of(const TensorDesc& k, int64_t extent) {
  if (k.dtype != DataType::kInt64)
    return invalid_argument(std::string("input 1 (k): expected int64, got ") + dtype_name(k.dtype));
  if (shape_numel(k.shape) != 1 || k.shape.size() > 1)
    return invalid_argument("input 1 (k) must hold one value, got shape " + shape_str(k.shape));
  if (!k.value) return unsupported("its output shapes follow input 1 (k), computed at run time");
  const int64_t v = k.value->data<int64_t>()[0];
  if (v < 0 || v > extent)
    return invalid_argument("k = " + std::to_string(v) + " is outside 0 to " +
                            std::to_string(extent) + " (the axis' extent)");
  return v;
}

Status infer_top_k(const Node& node, const std::vector<TensorDesc>& in,
                   std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 2, 2));
  KILN_RETURN_IF_ERROR(expect_dtype(in, 0, kArithmeticTypes));
  const TopKAttrs a = top_k_attrs(node);
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  if (rank == 0) return invalid_argument("input 0 is a scalar; TopK needs an axis");
  KILN_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a.axis, rank));
  KILN_ASSIGN_OR_RETURN(int64_t k, k_of(in[1], in[0].shape[axis]));
  Shape s = in[0].shape;
  s[axis] = k;
  out[0] = {in[0].dtype, s};
  if (out.size() > 1) out[1] = {DataType::kInt64, s};
  return Status::ok();
}

// a before b in the answer: larger first (or smaller when !largest), NaN the largest.
bool better(double a, double b, bool largest) {
  const bool an = std::isnan(a), bn = std::isnan(b);
  if (an || bn) return largest ? an && !bn : bn && !an;
  return largest ? a > b : a < b;
}

Status run_top_k(const Node& node, const std::vector<const Tensor*>& in,
                 const std::vector<Tensor*>& out) {
  const TopKAttrs a = top_k_attrs(node);
  const Tensor& x = *in[0];
  const Shape& xs = x.shape();
  const int64_t rank = static_cast<int64_t>(xs.size());
  KILN_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a.axis, rank));
  const int64_t n = xs[axis];
  const int64_t k = out[0]->shape()[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= xs[d];
  return dispatch_numeric(x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* pv = out[0]->data<T>();
    int64_t* pi = out.size() > 1 && out[1] ? out[1]->data<int64_t>() : nullptr;
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * n * inner + i;
        auto at = [&](int64_t j) { return static_cast<double>(ComputeT<T>(px[base + j * inner])); };
        std::iota(order.begin(), order.end(), int64_t{0});
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t p, int64_t q) { return better(at(p), at(q), a.largest); });
        const int64_t obase = o * k * inner + i;
        for (int64_t j = 0; j < k; ++j) {
          pv[obase + j * inner] = px[base + order[j] * inner];
          if (pi) pi[obase + j * inner] = order[j];
        }
      }
    return Status::ok();
  });
}

}  // namespace

KILN_REGISTER_DATA_SHAPED_OP(TopK, infer_top_k, run_top_k);

}  // namespace kiln
