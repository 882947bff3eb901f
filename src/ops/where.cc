// Where: out = condition ? X : Y, elementwise with numpy broadcasting of all three inputs.
// condition is bool; X and Y share any numeric dtype (incl. bool), which out has.

#include <cstring>

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status infer_where(const Node& node, const std::vector<TensorDesc>& in,
                   std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 3, 3));
  if (in[0].dtype != DataType::kBool)
    return invalid_argument(std::string("input 0 (condition): expected bool, got ") +
                            dtype_name(in[0].dtype));
  KILN_RETURN_IF_ERROR(expect_dtype(in, 1, kNumericTypes));
  KILN_RETURN_IF_ERROR(expect_same_dtype(in, 2, 1));
  KILN_ASSIGN_OR_RETURN(Shape shape, broadcast_shapes({in[0].shape, in[1].shape, in[2].shape}));
  out[0] = {in[1].dtype, std::move(shape)};
  return Status::ok();
}

Status run_where(const Node& node, const std::vector<const Tensor*>& in,
                 const std::vector<Tensor*>& out) {
  // Selection copies elements unchanged, so it works on bytes of the element size.
  const Shape& shape = out[0]->shape();
  const size_t size = dtype_size(out[0]->dtype());
  const std::vector<std::vector<int64_t>> strides = {broadcast_strides(in[0]->shape(), shape),
                                                     broadcast_strides(in[1]->shape(), shape),
                                                     broadcast_strides(in[2]->shape(), shape)};
  const uint8_t* cond = in[0]->data<uint8_t>();  // bool bytes: any non-zero is true
  const auto* x = static_cast<const std::byte*>(in[1]->raw());
  const auto* y = static_cast<const std::byte*>(in[2]->raw());
  auto* dst = static_cast<std::byte*>(out[0]->raw());
  for_each_broadcast(shape, strides, [&](int64_t i, const std::vector<int64_t>& off) {
    const std::byte* src = cond[off[0]] != 0 ? x + off[1] * size : y + off[2] * size;
    std::memcpy(dst + i * size, src, size);
  });
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Where, infer_where, run_where);

}  // namespace kiln
