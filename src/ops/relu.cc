// Relu: y = max(x, 0). The model for a unary elementwise op file.

#include <type_traits>

#include "ops/op_util.h"

namespace kiln {

namespace {

Status infer_relu(const Node& node, const std::vector<TensorDesc>& in,
                  std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  out[0] = {in[0].dtype, in[0].shape};
  return Status::ok();
}

Status run_relu(const Node& node, const std::vector<const Tensor*>& in,
                const std::vector<Tensor*>& out) {
  return dispatch_numeric(in[0]->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return unsupported("Relu on bool");
    } else {
      const T* x = in[0]->data<T>();
      T* y = out[0]->data<T>();
      for (int64_t i = 0; i < in[0]->numel(); ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
      return Status::ok();
    }
  });
}

}  // namespace

KILN_REGISTER_OP(Relu, infer_relu, run_relu);

}  // namespace kiln
