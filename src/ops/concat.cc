// Concat: joins inputs of equal rank along `axis`; every other dimension must match.

#include "ops/concat.h"

#include <cstring>

#include "ops/op_util.h"

namespace kiln {

namespace {

Status infer_concat(const Node& node, const std::vector<TensorDesc>& in,
                    std::vector<TensorDesc>& out) {
  if (in.empty()) return invalid_argument("Concat needs at least one input");
  KILN_RETURN_IF_ERROR(check_input_count(in, in.size(), in.size()));
  const DataType dt = in[0].dtype;
  if (dtype_size(dt) == 0) return unsupported(std::string("Concat on ") + dtype_name(dt));
  if (!node.attrs.has("axis")) return invalid_argument("missing attribute axis");
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  KILN_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(concat_attrs(node).axis, rank));
  Shape o = in[0].shape;
  for (size_t k = 1; k < in.size(); ++k) {
    const Shape& s = in[k].shape;
    if (in[k].dtype != dt)
      return invalid_argument("input " + std::to_string(k) + ": expected " + dtype_name(dt) +
                              ", got " + dtype_name(in[k].dtype));
    bool ok = static_cast<int64_t>(s.size()) == rank;
    for (int64_t d = 0; ok && d < rank; ++d) ok = d == axis || s[d] == o[d];
    if (!ok)
      return invalid_argument("input " + std::to_string(k) + " shape " + shape_str(s) +
                              " does not match input 0 shape " + shape_str(in[0].shape) +
                              " outside axis " + std::to_string(axis));
    o[axis] += s[axis];
  }
  out[0] = {dt, std::move(o)};
  return Status::ok();
}

Status run_concat(const Node& node, const std::vector<const Tensor*>& in,
                  const std::vector<Tensor*>& out) {
  const Shape& os = out[0]->shape();
  const int64_t axis = concat_attrs(node).axis < 0
                           ? concat_attrs(node).axis + static_cast<int64_t>(os.size())
                           : concat_attrs(node).axis;
  const size_t es = dtype_size(out[0]->dtype());
  // Bytes per unit of the concat axis: everything inside it.
  size_t inner = es;
  for (size_t d = axis + 1; d < os.size(); ++d) inner *= os[d];
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= os[d];
  auto* to = static_cast<std::byte*>(out[0]->raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor* t : in) {
      const size_t chunk = inner * t->dim(axis);
      if (chunk) std::memcpy(to, static_cast<const std::byte*>(t->raw()) + o * chunk, chunk);
      to += chunk;
    }
  }
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Concat, infer_concat, run_concat);

}  // namespace kiln
