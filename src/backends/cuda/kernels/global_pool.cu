// GlobalAveragePool and GlobalMaxPool: the mean / max of each (n, c) plane, output
// [N, C, 1, .., 1] in kPlain (the same bytes as NHWC for a 1x1 plane). Accumulates in float;
// the max lets a NaN through (reference rule). The kernels are in global_pool.cuh.

#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/global_pool.cuh"

namespace kiln {
namespace {

using cuda::dispatch_act;
using cuda::kBlockThreads;
using cuda::kLanes;
using cuda::NhwcSpread;

template <class T, bool kMax>
Status launch_global_pool(int64_t n, int64_t c, int64_t hw, Layout layout, const NhwcSpread& sp,
                          const void* x, void* y, void* workspace, cudaStream_t s) {
  const auto* xt = static_cast<const T*>(x);
  auto* yt = static_cast<T*>(y);
  if (layout == Layout::kPlain) {
    constexpr int kThreads = 256;
    cuda::global_pool_plain_kernel<T, T, kMax>
        <<<cuda::grid_blocks(n * c * kLanes, kThreads), kThreads, 0, s>>>(xt, yt, n * c, hw,
                                                                          static_cast<float>(hw));
    KILN_CUDA_LAUNCHED("global_pool_plain_kernel");
    return Status::ok();
  }
  // The pack width was chosen for C at prepare; pointers must allow it too.
  if (cuda::pack_width(sizeof(T), sp.v, {x, y}) != sp.v)
    return internal_error("GlobalPool buffers not aligned for their pack width");
  const int64_t blocks = n * sp.chunks;
  if (blocks > 0x7fffffff) return unsupported("GlobalPool grid too large");
  const dim3 block(sp.lanes, kBlockThreads / sp.lanes);
  const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(sp.splits));
  float* part = static_cast<float*>(workspace);
  auto go = [&](auto kernel) {
    kernel<<<grid, block, 0, s>>>(xt, yt, part, c, hw, sp.chunks, sp.per_split, false);
  };
  switch (sp.v) {
    case 8: go(cuda::global_pool_nhwc_kernel<T, 8, kMax>); break;
    case 4: go(cuda::global_pool_nhwc_kernel<T, 4, kMax>); break;
    case 2: go(cuda::global_pool_nhwc_kernel<T, 2, kMax>); break;
    default: go(cuda::global_pool_nhwc_kernel<T, 1, kMax>); break;
  }
  KILN_CUDA_LAUNCHED("global_pool_nhwc_kernel");
  if (sp.splits > 1) {
    constexpr int kThreads = 256;
    cuda::global_pool_finish_kernel<T, kMax>
        <<<cuda::grid_blocks(n * c, kThreads), kThreads, 0, s>>>(part, yt, n * c, sp.splits, hw);
    KILN_CUDA_LAUNCHED("global_pool_finish_kernel");
  }
  return Status::ok();
}

class GlobalPoolKernel final : public CudaKernel {
 public:
  explicit GlobalPoolKernel(bool is_max) : is_max_(is_max) {}

  Layout input_layout(int, Layout offered) const override { return offered; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext&) override {
    const TensorDesc& x = in[0];
    KILN_RETURN_IF_ERROR(cuda::check_act_dtype(x.dtype, "input 0"));
    if (x.shape.size() < 3)
      return invalid_argument("input 0: expected rank ≥ 3 (N, C, spatial...), got shape " +
                              shape_str(x.shape));
    if (x.layout == Layout::kNHWC && x.shape.size() != 4)
      return invalid_argument("NHWC input of rank " + std::to_string(x.shape.size()));
    n_ = x.shape[0];
    c_ = x.shape[1];
    hw_ = 1;
    for (size_t i = 2; i < x.shape.size(); ++i) hw_ *= x.shape[i];
    layout_ = x.layout;
    dtype_ = x.dtype;
    if (layout_ == Layout::kNHWC) {
      spread_ = cuda::nhwc_spread(n_, c_, hw_, dtype_size(dtype_), cuda::current_sm_count());
    }
    Shape shape(x.shape.size(), 1);
    shape[0] = n_;
    shape[1] = c_;
    out[0] = TensorDesc{x.dtype, shape};
    return Status::ok();
  }

  size_t workspace_bytes() const override {
    return layout_ == Layout::kNHWC && spread_.splits > 1
               ? static_cast<size_t>(spread_.splits * n_ * c_) * sizeof(float)
               : 0;
  }

  std::string tactic() const override {
    std::string t = std::string(is_max_ ? "kiln global_max_pool " : "kiln global_avg_pool ") +
                    layout_name(layout_);
    if (layout_ == Layout::kNHWC && spread_.splits > 1)
      t += " split " + std::to_string(spread_.splits);
    return t;
  }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    if (n_ * c_ == 0) return Status::ok();
    return dispatch_act(dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      const void* x = in[0]->data;
      void* y = out[0]->data;
      return is_max_ ? launch_global_pool<T, true>(n_, c_, hw_, layout_, spread_, x, y,
                                                   run.workspace, run.stream)
                     : launch_global_pool<T, false>(n_, c_, hw_, layout_, spread_, x, y,
                                                    run.workspace, run.stream);
    });
  }

 private:
  bool is_max_;
  int64_t n_ = 0, c_ = 0, hw_ = 0;
  Layout layout_ = Layout::kPlain;
  DataType dtype_ = DataType::kUndefined;
  NhwcSpread spread_;
};

Result<std::unique_ptr<CudaKernel>> make_global_pool(const Node& node, bool is_max) {
  const Value* x = node.input(0);
  if (!x) return invalid_argument("input 0 (X) is missing");
  if (!dtype_is_float(x->dtype))
    return unsupported(std::string("input 0: element type ") + dtype_name(x->dtype) +
                       " (the CUDA kernel pools float tensors)");
  return std::unique_ptr<CudaKernel>(new GlobalPoolKernel(is_max));
}

Result<std::unique_ptr<CudaKernel>> make_global_average_pool(const Node& node, Precision) {
  return make_global_pool(node, false);
}
Result<std::unique_ptr<CudaKernel>> make_global_max_pool(const Node& node, Precision) {
  return make_global_pool(node, true);
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(GlobalAveragePool, make_global_average_pool);
KILN_REGISTER_CUDA_KERNEL(GlobalMaxPool, make_global_max_pool);

}  // namespace kiln
