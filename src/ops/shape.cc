// Shape: the input's dimensions as a 1-D int64 tensor, optionally only dims [start, end)
// (opset 15; negative values count from the end, both are clamped to [0, rank]).
//
// The shape rule only describes the output; turning it into a constant is constant
// folding's job.

#include "ops/shape.h"

#include <algorithm>
#include <utility>

#include "ops/op_util.h"

namespace kiln {

std::pair<int64_t, int64_t> shape_range(const Node& node, int64_t rank) {
  auto fix = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = fix(node.attrs.get_int("start", 0));
  const int64_t end = fix(node.attrs.get_int("end", rank));
  return {start, std::max(start, end)};
}

namespace {

Status infer_shape(const Node& node, const std::vector<TensorDesc>& in,
                   std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  auto [start, end] = shape_range(node, static_cast<int64_t>(in[0].shape.size()));
  out[0] = {DataType::kInt64, {end - start}};
  return Status::ok();
}

Status run_shape(const Node& node, const std::vector<const Tensor*>& in,
                 const std::vector<Tensor*>& out) {
  auto [start, end] = shape_range(node, in[0]->rank());
  int64_t* y = out[0]->data<int64_t>();
  for (int64_t d = start; d < end; ++d) y[d - start] = in[0]->dim(d);
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Shape, infer_shape, run_shape);

}  // namespace kiln
