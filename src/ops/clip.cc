// Clip: y = min(max(x, min), max) for any arithmetic dtype. min and max are optional
// scalar inputs of X's dtype (opset 11+ form; the importer turns older attributes into
// inputs); an omitted bound is the type's limit (±inf for floats). When min > max every
// element becomes max, as in numpy.clip and the ONNX spec. NaN passes through.

#include <limits>

#include "ops/elementwise.h"

namespace kiln {

namespace {

Status infer_clip(const Node& node, const std::vector<TensorDesc>& in,
                  std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 3));
  KILN_RETURN_IF_ERROR(expect_dtype(in, 0, kArithmeticTypes));
  for (size_t i = 1; i < in.size(); ++i) {
    if (!in[i].present()) continue;
    KILN_RETURN_IF_ERROR(expect_same_dtype(in, i, 0));
    if (shape_numel(in[i].shape) != 1)
      return invalid_argument(std::string(i == 1 ? "min" : "max") +
                              " must be a scalar, got shape " + shape_str(in[i].shape));
  }
  out[0] = {in[0].dtype, in[0].shape};
  return Status::ok();
}

Status run_clip(const Node& node, const std::vector<const Tensor*>& in,
                const std::vector<Tensor*>& out) {
  return dispatch_numeric(in[0]->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return unsupported("Clip on bool");
    } else {
      using C = ComputeT<T>;
      auto bound = [&](size_t i, C def) -> C {
        return i < in.size() && in[i] ? static_cast<C>(in[i]->data<T>()[0]) : def;
      };
      constexpr bool kHasInf = std::numeric_limits<C>::has_infinity;
      const C lo = bound(
          1, kHasInf ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::lowest());
      const C hi =
          bound(2, kHasInf ? std::numeric_limits<C>::infinity() : std::numeric_limits<C>::max());
      map_unary<T>(*in[0], *out[0], [&](C x) {
        const C y = x < lo ? lo : x;
        return y > hi ? hi : y;
      });
      return Status::ok();
    }
  });
}

}  // namespace

KILN_REGISTER_OP(Clip, infer_clip, run_clip);

}  // namespace kiln
