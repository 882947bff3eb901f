// Transpose: out.dim(i) = in.dim(perm[i]); perm defaults to reversing the axes.

#include "ops/transpose.h"

#include <cstring>

#include "ops/op_util.h"

namespace kiln {

Result<std::vector<int64_t>> transpose_perm(const Node& node, int64_t rank) {
  std::vector<int64_t> perm;
  if (node.attrs.has("perm")) {
    perm = node.attrs.get_ints("perm");
  } else {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int64_t>(perm.size()) != rank)
    return invalid_argument("perm " + shape_str(perm) + " has " + std::to_string(perm.size()) +
                            " entries for rank " + std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return invalid_argument("perm " + shape_str(perm) + " is not a permutation of 0.." +
                              std::to_string(rank - 1));
    seen[p] = true;
  }
  return perm;
}

namespace {

Status infer_transpose(const Node& node, const std::vector<TensorDesc>& in,
                       std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  if (dtype_size(in[0].dtype) == 0)
    return unsupported(std::string("Transpose on ") + dtype_name(in[0].dtype));
  const Shape& s = in[0].shape;
  KILN_ASSIGN_OR_RETURN(auto perm, transpose_perm(node, static_cast<int64_t>(s.size())));
  Shape o(s.size());
  for (size_t i = 0; i < s.size(); ++i) o[i] = s[perm[i]];
  out[0] = {in[0].dtype, std::move(o)};
  return Status::ok();
}

Status run_transpose(const Node& node, const std::vector<const Tensor*>& in,
                     const std::vector<Tensor*>& out) {
  const Tensor& x = *in[0];
  KILN_ASSIGN_OR_RETURN(auto perm, transpose_perm(node, x.rank()));
  // Walk the output in order; the input offset moves by the input stride of perm[i].
  std::vector<int64_t> in_strides = strides_of(x.shape());
  std::vector<int64_t> src(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) src[i] = in_strides[perm[i]];
  const size_t es = dtype_size(x.dtype());
  const auto* from = static_cast<const std::byte*>(x.raw());
  auto* to = static_cast<std::byte*>(out[0]->raw());
  for_each_broadcast(out[0]->shape(), {src}, [&](int64_t i, const std::vector<int64_t>& off) {
    std::memcpy(to + i * es, from + off[0] * es, es);
  });
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Transpose, infer_transpose, run_transpose);

}  // namespace kiln
