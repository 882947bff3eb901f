// Reshape: same data, new shape taken from the `shape` input (int64).
//
// In `shape`, 0 copies the input's dimension at the same index (unless allowzero=1, where 0
// means an empty dimension) and a single -1 is inferred from the element count.

#include "ops/reshape.h"

#include <cstring>

#include "ops/op_util.h"

namespace kiln {

Result<Shape> reshape_target(const Shape& in, const std::vector<int64_t>& spec, bool allowzero) {
  Shape s(spec.size());
  int64_t infer_at = -1;
  int64_t known = 1;  // product of the dimensions other than the -1
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == -1) {
      if (infer_at >= 0) return invalid_argument("shape " + shape_str(spec) + " has two -1s");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (d < -1)
      return invalid_argument("shape " + shape_str(spec) + ": invalid dimension " +
                              std::to_string(d));
    if (d == 0 && !allowzero) {
      if (i >= in.size())
        return invalid_argument("shape " + shape_str(spec) + ": 0 at index " + std::to_string(i) +
                                " has no input dimension to copy (input " + shape_str(in) + ")");
      d = in[i];
    }
    s[i] = d;
    known *= d;
  }
  const int64_t numel = shape_numel(in);
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0)
      return invalid_argument("cannot reshape " + shape_str(in) + " to " + shape_str(spec) +
                              ": the -1 cannot be inferred");
    s[infer_at] = numel / known;
  } else if (known != numel) {
    return invalid_argument("cannot reshape " + shape_str(in) + " (" + std::to_string(numel) +
                            " elements) to " + shape_str(s));
  }
  return s;
}

namespace {

Status infer_reshape(const Node& node, const std::vector<TensorDesc>& in,
                     std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 2, 2));
  if (dtype_size(in[0].dtype) == 0)
    return unsupported(std::string("Reshape on ") + dtype_name(in[0].dtype));
  if (in[1].shape.size() != 1)
    return invalid_argument("input 1 (shape) must be 1-D, got " + shape_str(in[1].shape));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> spec, known_int64s(in[1], "input 1 (shape)"));
  KILN_ASSIGN_OR_RETURN(Shape s, reshape_target(in[0].shape, spec, reshape_allowzero(node)));
  out[0] = {in[0].dtype, std::move(s)};
  return Status::ok();
}

Status run_reshape(const Node& node, const std::vector<const Tensor*>& in,
                   const std::vector<Tensor*>& out) {
  if (out[0]->nbytes()) std::memcpy(out[0]->raw(), in[0]->raw(), out[0]->nbytes());
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Reshape, infer_reshape, run_reshape);

}  // namespace kiln
