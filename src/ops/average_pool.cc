// AveragePool: the mean of each window. The divisor is the number of input elements the
// window covers, or with count_include_pad the number of input-or-padding positions it
// covers; positions past the end padding (reached only in ceil mode) never count.
// Dilations are opset 19 and not accepted (other than all 1).

#include <limits>
#include <type_traits>

#include "ops/op_util.h"
#include "ops/pool.h"

namespace kiln {

namespace {

const PoolAttrOptions kAveragePoolOptions{.count_include_pad = true};

Status infer_average_pool(const Node& node, const std::vector<TensorDesc>& in,
                          std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 1));
  if (!dtype_is_float(in[0].dtype))
    return unsupported(std::string("input 0: element type ") + dtype_name(in[0].dtype) +
                       " (AveragePool takes float types)");
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  KILN_ASSIGN_OR_RETURN(PoolAttrs attrs,
                        parse_pool_attrs(node.attrs, rank - 2, kAveragePoolOptions));
  KILN_ASSIGN_OR_RETURN(std::vector<PoolDim> dims, pool_dims(attrs, in[0].shape));
  out[0] = {in[0].dtype, pool_output_shape(in[0].shape, dims)};
  return Status::ok();
}

Status run_average_pool(const Node& node, const std::vector<const Tensor*>& in,
                        const std::vector<Tensor*>& out) {
  const Tensor& x = *in[0];
  KILN_ASSIGN_OR_RETURN(PoolAttrs attrs,
                        parse_pool_attrs(node.attrs, x.rank() - 2, kAveragePoolOptions));
  KILN_ASSIGN_OR_RETURN(std::vector<PoolDim> dims, pool_dims(attrs, x.shape()));
  const PoolWindows w = pool_windows(dims, false);
  const int64_t planes = x.dim(0) * x.dim(1);
  return dispatch_float(x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* xd = x.data<T>();
    T* yd = out[0]->data<T>();
    for (int64_t c = 0; c < planes; ++c) {
      const T* xp = xd + c * w.in_plane;
      for (int64_t p = 0; p < w.out_plane; ++p) {
        double sum = 0;
        for (int64_t k = w.begin[p]; k < w.begin[p + 1]; ++k)
          sum += static_cast<double>(xp[w.offsets[k]]);
        int64_t count = attrs.count_include_pad ? w.padded_count[p] : w.begin[p + 1] - w.begin[p];
        // pads < kernel (checked) keeps every window non-empty; guard anyway.
        double mean =
            count > 0 ? sum / static_cast<double>(count) : std::numeric_limits<double>::quiet_NaN();
        if constexpr (std::is_same_v<T, double>)
          yd[c * w.out_plane + p] = mean;
        else
          yd[c * w.out_plane + p] = T(static_cast<float>(mean));
      }
    }
    return Status::ok();
  });
}

}  // namespace

KILN_REGISTER_OP(AveragePool, infer_average_pool, run_average_pool);

}  // namespace kiln
