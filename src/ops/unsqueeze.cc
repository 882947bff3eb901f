// Unsqueeze: inserts size-1 dimensions at the `axes` input's positions, which index the
// output (rank + len(axes)), may be negative and come in any order.

#include <cstring>

#include "ops/op_util.h"

namespace kiln {

namespace {

Status infer_unsqueeze(const Node& node, const std::vector<TensorDesc>& in,
                       std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 2, 2));
  if (dtype_size(in[0].dtype) == 0)
    return unsupported(std::string("Unsqueeze on ") + dtype_name(in[0].dtype));
  KILN_ASSIGN_OR_RETURN(auto axes, known_int64s(in[1], "input 1 (axes)"));
  const Shape& s = in[0].shape;
  const int64_t rank = static_cast<int64_t>(s.size() + axes.size());
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    KILN_ASSIGN_OR_RETURN(int64_t n, normalize_axis(a, rank, "axes entry"));
    if (inserted[n]) return invalid_argument("axis " + std::to_string(a) + " repeated in axes");
    inserted[n] = true;
  }
  Shape o(rank, 1);
  size_t next = 0;  // the input dimensions fill the other positions in order
  for (int64_t d = 0; d < rank; ++d)
    if (!inserted[d]) o[d] = s[next++];
  out[0] = {in[0].dtype, std::move(o)};
  return Status::ok();
}

Status run_unsqueeze(const Node& node, const std::vector<const Tensor*>& in,
                     const std::vector<Tensor*>& out) {
  if (out[0]->nbytes()) std::memcpy(out[0]->raw(), in[0]->raw(), out[0]->nbytes());
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Unsqueeze, infer_unsqueeze, run_unsqueeze);

}  // namespace kiln
