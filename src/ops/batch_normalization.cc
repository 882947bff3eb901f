// BatchNormalization, inference mode: over channel axis 1 of X [N, C, D...],
//   Y = scale · (X − mean) / sqrt(var + epsilon) + B
// computed as Y = a·X + c with a = scale / sqrt(var + epsilon), c = B − mean·a per channel
// (the same folding the BatchNorm-folding pass applies to Conv weights).
// Training mode (batch statistics, running mean/var outputs) is not supported: kiln runs
// inference only.

#include "ops/batch_normalization.h"

#include <cmath>
#include <type_traits>

#include "ops/op_util.h"

namespace kiln {

Status check_batch_norm_mode(const Node& node) {
  if (batch_norm_attrs(node).training_mode)
    return unsupported("training-mode BatchNormalization (training_mode=1)");
  if (node.attrs.get_int("spatial", 1) == 0)
    return unsupported("BatchNormalization with spatial=0 (per-element statistics)");
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (node.outputs[i])
      return unsupported("training-mode BatchNormalization (output " + std::to_string(i) +
                         ", a running or saved statistic, is requested)");
  return Status::ok();
}

namespace {

const char* const kParamNames[] = {"X", "scale", "B", "input_mean", "input_var"};

Status infer_batch_normalization(const Node& node, const std::vector<TensorDesc>& in,
                                 std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 5, 5));
  KILN_RETURN_IF_ERROR(check_batch_norm_mode(node));
  const DataType dt = in[0].dtype;
  if (!dtype_is_float(dt))
    return unsupported(std::string("BatchNormalization on ") + dtype_name(dt) +
                       " (takes float types)");
  const Shape& x = in[0].shape;
  if (x.size() < 2)
    return invalid_argument("input X " + shape_str(x) + " must have rank ≥ 2 ([N, C, ...])");
  for (size_t i = 1; i < 5; ++i) {
    // Opset 15 lets scale/B and mean/var have their own float types.
    if (!dtype_is_float(in[i].dtype))
      return invalid_argument(std::string("input ") + std::to_string(i) + " (" + kParamNames[i] +
                              "): expected a float type, got " + dtype_name(in[i].dtype));
    if (x[1] >= 0 && in[i].shape != Shape{x[1]})
      return invalid_argument(std::string("input ") + std::to_string(i) + " (" + kParamNames[i] +
                              ") " + shape_str(in[i].shape) + " must have shape [" +
                              std::to_string(x[1]) + "] (X " + shape_str(x) + ")");
  }
  out[0] = {dt, x};
  for (size_t i = 1; i < out.size(); ++i) out[i] = {};
  return Status::ok();
}

Status run_batch_normalization(const Node& node, const std::vector<const Tensor*>& in,
                               const std::vector<Tensor*>& out) {
  KILN_RETURN_IF_ERROR(check_batch_norm_mode(node));
  const Tensor& xt = *in[0];
  const int64_t n = xt.dim(0), c = xt.dim(1);
  const int64_t inner = c == 0 || n == 0 ? 0 : xt.numel() / (n * c);
  const double eps = batch_norm_attrs(node).epsilon;
  return dispatch_float(xt.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    // Accumulation type: double for float64, float otherwise.
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    std::vector<A> a(c), shift(c);
    for (int64_t k = 0; k < c; ++k) {
      const A scale = static_cast<A>(in[1]->at_double(k));
      const A bias = static_cast<A>(in[2]->at_double(k));
      const A mean = static_cast<A>(in[3]->at_double(k));
      const A var = static_cast<A>(in[4]->at_double(k));
      a[k] = scale / std::sqrt(var + static_cast<A>(eps));
      shift[k] = bias - mean * a[k];
    }
    const T* x = xt.data<T>();
    T* y = out[0]->data<T>();
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t k = 0; k < c; ++k) {
        const int64_t base = (b * c + k) * inner;
        for (int64_t i = 0; i < inner; ++i)
          y[base + i] = static_cast<T>(a[k] * static_cast<A>(x[base + i]) + shift[k]);
      }
    }
    return Status::ok();
  });
}

}  // namespace

KILN_REGISTER_OP(BatchNormalization, infer_batch_normalization, run_batch_normalization);

}  // namespace kiln
