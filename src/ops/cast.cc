// Cast: converts X to the dtype of the `to` attribute; every pair of numeric dtypes incl.
// float16, bfloat16 and bool (strings are unsupported). Conversion rules are
// convert_value's (elementwise.h): float → int truncates toward zero (NaN → 0, out of
// range saturates), int → int wraps, x → bool is x != 0, to float16/bfloat16 rounds to
// nearest even.

#include "ops/cast.h"

#include <cstring>

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status infer_cast(const Node& node, const std::vector<TensorDesc>& in,
                  std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  if (!node.attrs.has("to")) return invalid_argument("missing attribute 'to'");
  const DataType to = cast_attrs(node).to;
  if (in[0].dtype == DataType::kString || to == DataType::kString)
    return unsupported(std::string("Cast from ") + dtype_name(in[0].dtype) + " to " +
                       dtype_name(to) + " (string tensors)");
  KILN_RETURN_IF_ERROR(expect_dtype(in, 0, kNumericTypes));
  if (std::find(std::begin(kNumericTypes), std::end(kNumericTypes), to) == std::end(kNumericTypes))
    return unsupported("Cast to data type " + std::to_string(static_cast<int>(to)));
  out[0] = {to, in[0].shape};
  return Status::ok();
}

Status run_cast(const Node& node, const std::vector<const Tensor*>& in,
                const std::vector<Tensor*>& out) {
  const Tensor& x = *in[0];
  Tensor& y = *out[0];
  if (x.dtype() == y.dtype()) {
    std::memcpy(y.raw(), x.raw(), x.nbytes());
    return Status::ok();
  }
  return dispatch_numeric(x.dtype(), [&](auto from_tag) -> Status {
    using From = decltype(from_tag);
    return dispatch_numeric(y.dtype(), [&](auto to_tag) -> Status {
      using To = decltype(to_tag);
      const From* px = x.data<From>();
      To* py = y.data<To>();
      for (int64_t i = 0; i < x.numel(); ++i) py[i] = convert_value<To>(px[i]);
      return Status::ok();
    });
  });
}

}  // namespace

KILN_REGISTER_OP(Cast, infer_cast, run_cast);

}  // namespace kiln
