// ArgMax: the index of the largest element along `axis` (src/ops/arg_max.cc), as TopK's kernel
// ranks with k = 1 (kernels/top_k.cu): the largest first, NaN above every number, equal values
// by the lower index, which is ArgMax's default. keepdims only changes the output's shape, not
// its elements' order. select_last_index = 1 is declined (the reference runs it).

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/launch.h"
#include "ops/op_util.h"

namespace kiln {
namespace {

class ArgMaxKernel final : public CudaKernel {
 public:
  ArgMaxKernel(int64_t axis, bool keepdims) : axis_(axis), keepdims_(keepdims) {}

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext&) override {
    const TensorDesc& x = in[0];
    if (x.layout != Layout::kPlain) return invalid_argument("ArgMax takes plain input");
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    if (rank == 0) return invalid_argument("input 0 is a scalar; ArgMax needs an axis");
    KILN_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(axis_, rank));
    n_ = x.shape[axis];
    if (n_ == 0) return invalid_argument("ArgMax over an empty axis");
    if (!top_k_supports(x.dtype, n_))
      return unsupported(std::string("ArgMax of ") + dtype_name(x.dtype) + " over " +
                         std::to_string(n_) + " elements");
    outer_ = inner_ = 1;
    for (int64_t d = 0; d < axis; ++d) outer_ *= x.shape[d];
    for (int64_t d = axis + 1; d < rank; ++d) inner_ *= x.shape[d];
    dtype_ = x.dtype;
    Shape s = x.shape;
    if (keepdims_)
      s[axis] = 1;
    else
      s.erase(s.begin() + axis);
    out[0] = TensorDesc{DataType::kInt64, s};
    return Status::ok();
  }

  std::string tactic() const override { return "kiln arg_max (top_k rank, k 1)"; }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    return launch_top_k(dtype_, in[0]->data, nullptr, out[0]->as<int64_t>(), outer_, inner_, n_, 1,
                        true, run.stream);
  }

 private:
  int64_t axis_;
  bool keepdims_;
  int64_t n_ = 0, outer_ = 0, inner_ = 0;
  DataType dtype_ = DataType::kUndefined;
};

Result<std::unique_ptr<CudaKernel>> make_arg_max(const Node& node, Precision) {
  if (!node.input(0)) return invalid_argument("input 0 is missing");
  if (node.attrs.get_int("select_last_index", 0) != 0)
    return unsupported("ArgMax with select_last_index = 1");
  return std::unique_ptr<CudaKernel>(
      new ArgMaxKernel(node.attrs.get_int("axis", 0), node.attrs.get_int("keepdims", 1) != 0));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(ArgMax, make_arg_max);

}  // namespace kiln
