// MaxPool: the largest input in each window (padding never wins). Optional output 1 is
// Indices (int64): the flattened index of the chosen element in the whole input tensor,
// with the spatial part row-major (storage_order 0) or column-major (1), as ONNX defines.
// Ties keep the first position in row-major window order.

#include <limits>
#include <type_traits>

#include "ops/op_util.h"
#include "ops/pool.h"

namespace kiln {

namespace {

const PoolAttrOptions kMaxPoolOptions{.dilations = true, .storage_order = true};

Status infer_max_pool(const Node& node, const std::vector<TensorDesc>& in,
                      std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  if (out.size() > 2)
    return invalid_argument("expected 1 or 2 outputs, got " + std::to_string(out.size()));
  DataType dt = in[0].dtype;
  if (!dtype_is_float(dt) && dt != DataType::kInt8 && dt != DataType::kUInt8)
    return unsupported(std::string("input 0: element type ") + dtype_name(dt) +
                       " (MaxPool takes float types, int8, uint8)");
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  KILN_ASSIGN_OR_RETURN(PoolAttrs attrs, parse_pool_attrs(node.attrs, rank - 2, kMaxPoolOptions));
  KILN_ASSIGN_OR_RETURN(std::vector<PoolDim> dims, pool_dims(attrs, in[0].shape));
  Shape shape = pool_output_shape(in[0].shape, dims);
  out[0] = {dt, shape};
  if (out.size() == 2) out[1] = {DataType::kInt64, shape};
  return Status::ok();
}

Status run_max_pool(const Node& node, const std::vector<const Tensor*>& in,
                    const std::vector<Tensor*>& out) {
  const Tensor& x = *in[0];
  KILN_ASSIGN_OR_RETURN(PoolAttrs attrs,
                        parse_pool_attrs(node.attrs, x.rank() - 2, kMaxPoolOptions));
  KILN_ASSIGN_OR_RETURN(std::vector<PoolDim> dims, pool_dims(attrs, x.shape()));
  Tensor* indices = out.size() > 1 ? out[1] : nullptr;
  const bool col_major = attrs.storage_order == 1;
  const PoolWindows w = pool_windows(dims, indices && col_major);
  const int64_t planes = x.dim(0) * x.dim(1);
  return dispatch_numeric(x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, float> && !std::is_same_v<T, double> &&
                  !std::is_same_v<T, Half> && !std::is_same_v<T, BFloat16> &&
                  !std::is_same_v<T, int8_t> && !std::is_same_v<T, uint8_t>) {
      return unsupported(std::string("MaxPool on ") + dtype_name(x.dtype()));
    } else {
      // Half/BFloat16 compare through float.
      using C = std::conditional_t<std::is_integral_v<T>, T,
                                   std::conditional_t<std::is_same_v<T, double>, double, float>>;
      // A window of nothing but padding cannot happen with pads < kernel, except with
      // dilations stepping over the whole input; it gives -inf (or the lowest integer).
      const C kEmpty = std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity()
                                                            : std::numeric_limits<C>::lowest();
      const T* xd = x.data<T>();
      T* yd = out[0]->data<T>();
      int64_t* id = indices ? indices->data<int64_t>() : nullptr;
      for (int64_t c = 0; c < planes; ++c) {
        const T* xp = xd + c * w.in_plane;
        for (int64_t p = 0; p < w.out_plane; ++p) {
          C best = kEmpty;
          int64_t best_k = -1;
          for (int64_t k = w.begin[p]; k < w.begin[p + 1]; ++k) {
            C v = static_cast<C>(xp[w.offsets[k]]);
            // A NaN in the window gives NaN (as in PyTorch and numpy's max).
            if (best_k < 0 || v > best || v != v) {
              best = v;
              best_k = k;
              if (v != v) break;
            }
          }
          yd[c * w.out_plane + p] = static_cast<T>(best);
          if (id) {
            int64_t off = best_k < 0 ? -1 : (col_major ? w.col_offsets[best_k] : w.offsets[best_k]);
            id[c * w.out_plane + p] = off < 0 ? -1 : c * w.in_plane + off;
          }
        }
      }
      return Status::ok();
    }
  });
}

}  // namespace

KILN_REGISTER_OP(MaxPool, infer_max_pool, run_max_pool);

}  // namespace kiln
