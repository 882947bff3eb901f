// Split: cuts the input along `axis` into one piece per output.
//
// Piece sizes come from the optional `split` input (int64, one entry per output, summing to
// the axis dimension). Without it the axis is split equally, which must divide exactly;
// opset 18's `num_outputs` attribute instead allows a smaller last piece.

#include "ops/split.h"

#include <algorithm>
#include <cstring>

#include "ops/op_util.h"

namespace kiln {

namespace {

Result<std::vector<int64_t>> split_sizes(const Node& node, const std::vector<TensorDesc>& in,
                                         int64_t dim, int64_t n) {
  std::vector<int64_t> sizes;
  if (in.size() > 1 && in[1].present()) {
    KILN_ASSIGN_OR_RETURN(sizes, known_int64s(in[1], "input 1 (split)"));
    if (static_cast<int64_t>(sizes.size()) != n)
      return invalid_argument("split " + shape_str(sizes) + " has " + std::to_string(sizes.size()) +
                              " entries for " + std::to_string(n) + " outputs");
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0) return invalid_argument("split " + shape_str(sizes) + " has a negative size");
      sum += s;
    }
    if (sum != dim)
      return invalid_argument("split " + shape_str(sizes) + " sums to " + std::to_string(sum) +
                              ", the axis has " + std::to_string(dim));
    return sizes;
  }
  if (n == 0) return invalid_argument("Split needs at least one output");
  if (node.attrs.has("num_outputs")) {
    if (split_attrs(node).num_outputs != n)
      return invalid_argument("num_outputs " + std::to_string(split_attrs(node).num_outputs) +
                              " but the node has " + std::to_string(n) + " outputs");
    const int64_t piece = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(piece, dim - i * piece)));
    return sizes;
  }
  if (dim % n != 0)
    return invalid_argument("axis dimension " + std::to_string(dim) +
                            " cannot be split equally into " + std::to_string(n) + " outputs");
  return std::vector<int64_t>(n, dim / n);
}

Status infer_split(const Node& node, const std::vector<TensorDesc>& in,
                   std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 2));
  if (dtype_size(in[0].dtype) == 0)
    return unsupported(std::string("Split on ") + dtype_name(in[0].dtype));
  const Shape& s = in[0].shape;
  KILN_ASSIGN_OR_RETURN(int64_t axis,
                        normalize_axis(split_attrs(node).axis, static_cast<int64_t>(s.size())));
  KILN_ASSIGN_OR_RETURN(auto sizes,
                        split_sizes(node, in, s[axis], static_cast<int64_t>(out.size())));
  for (size_t i = 0; i < out.size(); ++i) {
    Shape o = s;
    o[axis] = sizes[i];
    out[i] = {in[0].dtype, std::move(o)};
  }
  return Status::ok();
}

Status run_split(const Node& node, const std::vector<const Tensor*>& in,
                 const std::vector<Tensor*>& out) {
  const Tensor& x = *in[0];
  KILN_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(split_attrs(node).axis, x.rank()));
  // The piece sizes are re-derived here because an omitted output has no tensor to ask.
  std::vector<TensorDesc> descs(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i]) descs[i] = {in[i]->dtype(), in[i]->shape(), in[i]};
  KILN_ASSIGN_OR_RETURN(auto sizes,
                        split_sizes(node, descs, x.dim(axis), static_cast<int64_t>(out.size())));
  size_t inner = dtype_size(x.dtype());
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  const auto* from = static_cast<const std::byte*>(x.raw());
  const size_t row = inner * x.dim(axis);  // bytes of one outer slice of the input
  size_t begin = 0;                        // byte offset of piece i inside a row
  for (size_t i = 0; i < out.size(); ++i) {
    const size_t chunk = inner * sizes[i];
    if (out[i] && chunk) {
      auto* to = static_cast<std::byte*>(out[i]->raw());
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(to + o * chunk, from + o * row + begin, chunk);
    }
    begin += chunk;
  }
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Split, infer_split, run_split);

}  // namespace kiln
