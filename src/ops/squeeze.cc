// Squeeze: removes size-1 dimensions, those listed in the optional `axes` input or all.

#include <cstring>

#include "ops/op_util.h"

namespace kiln {

namespace {

Status infer_squeeze(const Node& node, const std::vector<TensorDesc>& in,
                     std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 2));
  if (dtype_size(in[0].dtype) == 0)
    return unsupported(std::string("Squeeze on ") + dtype_name(in[0].dtype));
  const Shape& s = in[0].shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  std::vector<bool> drop(rank, false);
  if (in.size() > 1 && in[1].present()) {
    KILN_ASSIGN_OR_RETURN(auto axes, known_int64s(in[1], "input 1 (axes)"));
    for (int64_t a : axes) {
      KILN_ASSIGN_OR_RETURN(int64_t n, normalize_axis(a, rank, "axes entry"));
      if (drop[n]) return invalid_argument("axis " + std::to_string(a) + " repeated in axes");
      if (s[n] != 1)
        return invalid_argument("cannot squeeze axis " + std::to_string(a) + " of size " +
                                std::to_string(s[n]) + " in " + shape_str(s));
      drop[n] = true;
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) drop[d] = s[d] == 1;
  }
  Shape o;
  for (int64_t d = 0; d < rank; ++d)
    if (!drop[d]) o.push_back(s[d]);
  out[0] = {in[0].dtype, std::move(o)};
  return Status::ok();
}

Status run_squeeze(const Node& node, const std::vector<const Tensor*>& in,
                   const std::vector<Tensor*>& out) {
  if (out[0]->nbytes()) std::memcpy(out[0]->raw(), in[0]->raw(), out[0]->nbytes());
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Squeeze, infer_squeeze, run_squeeze);

}  // namespace kiln
