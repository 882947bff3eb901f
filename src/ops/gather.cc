// Gather: picks slices of `data` along `axis` at the int32/int64 `indices` (any rank;
// negative indices count from the end). out.shape = data[:axis] + indices + data[axis+1:].

#include "ops/gather.h"

#include <cstring>

#include "ops/op_util.h"

namespace kiln {

namespace {

Status infer_gather(const Node& node, const std::vector<TensorDesc>& in,
                    std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 2, 2));
  if (dtype_size(in[0].dtype) == 0)
    return unsupported(std::string("Gather on ") + dtype_name(in[0].dtype));
  if (in[1].dtype != DataType::kInt64 && in[1].dtype != DataType::kInt32)
    return invalid_argument(std::string("input 1 (indices): expected int32 or int64, got ") +
                            dtype_name(in[1].dtype));
  const Shape& s = in[0].shape;
  KILN_ASSIGN_OR_RETURN(int64_t axis,
                        normalize_axis(gather_attrs(node).axis, static_cast<int64_t>(s.size())));
  Shape o(s.begin(), s.begin() + axis);
  o.insert(o.end(), in[1].shape.begin(), in[1].shape.end());
  o.insert(o.end(), s.begin() + axis + 1, s.end());
  out[0] = {in[0].dtype, std::move(o)};
  return Status::ok();
}

Status run_gather(const Node& node, const std::vector<const Tensor*>& in,
                  const std::vector<Tensor*>& out) {
  const Tensor& x = *in[0];
  const Tensor& idx = *in[1];
  KILN_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(gather_attrs(node).axis, x.rank()));
  const int64_t n = x.dim(axis);
  // Resolve and check every index before writing anything.
  std::vector<int64_t> at(idx.numel());
  for (int64_t j = 0; j < idx.numel(); ++j) {
    int64_t v = idx.dtype() == DataType::kInt64 ? idx.data<int64_t>()[j] : idx.data<int32_t>()[j];
    if (v < -n || v >= n)
      return out_of_range("index " + std::to_string(v) + " out of range for axis " +
                          std::to_string(axis) + " of size " + std::to_string(n));
    at[j] = v < 0 ? v + n : v;
  }
  size_t inner = dtype_size(x.dtype());
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  if (inner == 0) return Status::ok();
  const auto* from = static_cast<const std::byte*>(x.raw());
  auto* to = static_cast<std::byte*>(out[0]->raw());
  for (int64_t o = 0; o < outer; ++o) {
    const std::byte* row = from + o * n * inner;
    for (int64_t j : at) {
      std::memcpy(to, row + j * inner, inner);
      to += inner;
    }
  }
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Gather, infer_gather, run_gather);

}  // namespace kiln
