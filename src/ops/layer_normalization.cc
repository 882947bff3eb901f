// LayerNormalization (opset 17): X is split at `axis` (default -1) into outer rows and the
// normalized dims D = X.shape[axis:]; per row
//   mean = Σx / |D|,  var = Σ(x - mean)² / |D|,  inv = 1 / sqrt(var + epsilon)
//   Y = (x - mean) · inv · Scale + B
// Scale and the optional B broadcast (numpy, right-aligned) to D. The optional outputs Mean
// and InvStdDev have X's shape with the normalized dims set to 1, in the stash type.
// Computed in float for half/bfloat16/float inputs (stash_type 1, the default), in double for
// double; the two-pass variance does not lose the mean's digits.
#include "ops/layer_normalization.h"

#include <cmath>
#include <type_traits>
#include <vector>

#include "ops/op_util.h"

namespace kiln {

namespace {

struct LayerNormGeometry {
  int64_t axis = 0, rows = 1, cols = 1;
  Shape normalized;
};

Result<LayerNormGeometry> geometry(const Node& node, const Shape& x) {
  LayerNormGeometry g;
  KILN_ASSIGN_OR_RETURN(g.axis, normalize_axis(layer_norm_attrs(node).axis, x.size(), "axis"));
  for (int64_t d = 0; d < g.axis; ++d) g.rows *= x[d];
  g.normalized.assign(x.begin() + g.axis, x.end());
  g.cols = shape_numel(g.normalized);
  return g;
}

// Scale and B must broadcast to the normalized dims without growing them.
Status check_param(const TensorDesc& p, const Shape& normalized, const char* what) {
  auto b = broadcast_shapes({p.shape, normalized});
  if (!b.is_ok() || *b != normalized)
    return invalid_argument(std::string(what) + " shape " + shape_str(p.shape) +
                            " does not broadcast to the normalized dims " + shape_str(normalized));
  return Status::ok();
}

Status infer_layer_norm(const Node& node, const std::vector<TensorDesc>& in,
                        std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 2, 3));
  if (!dtype_is_float(in[0].dtype))
    return unsupported(std::string("input 0: element type ") + dtype_name(in[0].dtype) +
                       " (LayerNormalization takes float types)");
  KILN_RETURN_IF_ERROR(check_same_dtypes(in));
  if (in[0].shape.empty()) return invalid_argument("input 0 is a scalar; it needs rank >= 1");
  KILN_ASSIGN_OR_RETURN(LayerNormGeometry g, geometry(node, in[0].shape));
  KILN_RETURN_IF_ERROR(check_param(in[1], g.normalized, "Scale"));
  if (in.size() > 2 && in[2].present()) KILN_RETURN_IF_ERROR(check_param(in[2], g.normalized, "B"));
  const int64_t stash = layer_norm_attrs(node).stash_type;
  if (stash != 1 && stash != 11)
    return unsupported("stash_type " + std::to_string(stash) + " (float or double only)");
  out[0] = {in[0].dtype, in[0].shape};
  Shape stat_shape = in[0].shape;
  for (size_t d = static_cast<size_t>(g.axis); d < stat_shape.size(); ++d) stat_shape[d] = 1;
  const DataType stat_dtype = stash == 11 ? DataType::kFloat64 : DataType::kFloat32;
  for (size_t i = 1; i < out.size() && i < 3; ++i) out[i] = {stat_dtype, stat_shape};
  return Status::ok();
}

// `p` (Scale or B) read at every normalized position, in row-major order of the dims.
template <class C, class T>
std::vector<C> expand_param(const Tensor& p, const Shape& normalized) {
  std::vector<C> r(static_cast<size_t>(shape_numel(normalized)));
  const T* pd = p.data<T>();
  for_each_broadcast(normalized, {broadcast_strides(p.shape(), normalized)},
                     [&](int64_t i, const std::vector<int64_t>& off) {
                       r[static_cast<size_t>(i)] = static_cast<C>(pd[off[0]]);
                     });
  return r;
}

Status run_layer_norm(const Node& node, const std::vector<const Tensor*>& in,
                      const std::vector<Tensor*>& out) {
  const Tensor& x = *in[0];
  KILN_ASSIGN_OR_RETURN(LayerNormGeometry g, geometry(node, x.shape()));
  const double eps = layer_norm_attrs(node).epsilon;
  Tensor* mean_out = out.size() > 1 ? out[1] : nullptr;
  Tensor* inv_out = out.size() > 2 ? out[2] : nullptr;
  return dispatch_float(x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const std::vector<C> scale = expand_param<C, T>(*in[1], g.normalized);
    const std::vector<C> bias = in.size() > 2 && in[2]
                                    ? expand_param<C, T>(*in[2], g.normalized)
                                    : std::vector<C>(static_cast<size_t>(g.cols), C(0));
    const T* xd = x.data<T>();
    T* yd = out[0]->data<T>();
    for (int64_t r = 0; r < g.rows; ++r) {
      const T* row = xd + r * g.cols;
      double sum = 0;
      for (int64_t c = 0; c < g.cols; ++c) sum += static_cast<C>(row[c]);
      const double mean = g.cols ? sum / g.cols : 0;
      double sq = 0;
      for (int64_t c = 0; c < g.cols; ++c) {
        const double d = static_cast<C>(row[c]) - mean;
        sq += d * d;
      }
      const double inv = 1.0 / std::sqrt((g.cols ? sq / g.cols : 0) + eps);
      for (int64_t c = 0; c < g.cols; ++c)
        yd[r * g.cols + c] =
            T(static_cast<C>((static_cast<C>(row[c]) - mean) * inv * scale[c] + bias[c]));
      auto put = [&](Tensor* t, double v) {
        if (!t) return;
        if (t->dtype() == DataType::kFloat64)
          t->data<double>()[r] = v;
        else
          t->data<float>()[r] = static_cast<float>(v);
      };
      put(mean_out, mean);
      put(inv_out, inv);
    }
    return Status::ok();
  });
}

}  // namespace

KILN_REGISTER_OP(LayerNormalization, infer_layer_norm, run_layer_norm);

}  // namespace kiln
