// Expand: broadcasts the input against the `shape` input, numpy-style in both directions
// (a 1 in `shape` keeps the input's dimension, so the output may be larger than `shape`).

#include <cstring>

#include "ops/op_util.h"

namespace kiln {

namespace {

Status infer_expand(const Node& node, const std::vector<TensorDesc>& in,
                    std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 2, 2));
  if (dtype_size(in[0].dtype) == 0)
    return unsupported(std::string("Expand on ") + dtype_name(in[0].dtype));
  if (in[1].shape.size() != 1)
    return invalid_argument("input 1 (shape) must be 1-D, got " + shape_str(in[1].shape));
  KILN_ASSIGN_OR_RETURN(auto target, known_int64s(in[1], "input 1 (shape)"));
  for (int64_t d : target)
    if (d < 0) return invalid_argument("shape " + shape_str(target) + " has a negative dimension");
  KILN_ASSIGN_OR_RETURN(Shape o, broadcast_shapes({in[0].shape, target}));
  out[0] = {in[0].dtype, std::move(o)};
  return Status::ok();
}

Status run_expand(const Node& node, const std::vector<const Tensor*>& in,
                  const std::vector<Tensor*>& out) {
  const Tensor& x = *in[0];
  const size_t es = dtype_size(x.dtype());
  const auto* from = static_cast<const std::byte*>(x.raw());
  auto* to = static_cast<std::byte*>(out[0]->raw());
  for_each_broadcast(out[0]->shape(), {broadcast_strides(x.shape(), out[0]->shape())},
                     [&](int64_t i, const std::vector<int64_t>& off) {
                       std::memcpy(to + i * es, from + off[0] * es, es);
                     });
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Expand, infer_expand, run_expand);

}  // namespace kiln
