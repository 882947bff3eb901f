// BatchNormalization, inference mode, on its own (not folded into a Conv): with constant
// scale, B, mean and var, y = a[c]·x + shift[c] where a = scale / sqrt(var + epsilon) and
// shift = B − mean·a, computed in float at prepare (the reference's formula) and uploaded
// once. Layout-agnostic: in NHWC the channel is the fastest index, in plain the channel of
// element i is (i / inner) % C, inner being the product of the dims after C.

#include <cmath>
#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/elementwise.cuh"
#include "backends/cuda/kernels/structured.cuh"
#include "ops/batch_normalization.h"

namespace kiln {
namespace {

// V consecutive elements share their channel when inner % V == 0 (plain), or have V
// consecutive channels when C % V == 0 (NHWC); `channel_step` is 0 or 1 accordingly.
template <class T, int V>
__global__ void batch_norm_kernel(const T* __restrict__ x, T* __restrict__ y,
                                  const float* __restrict__ a, const float* __restrict__ shift,
                                  int64_t packs, int64_t c, int64_t inner, bool nhwc,
                                  Activation act) {
  for (int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; p < packs;
       p += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = p * V;
    float v[V];
    cuda::load_pack<T, V>(x + i, v);
    if (nhwc) {
      const int64_t ch = i % c;
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] = a[ch + k] * v[k] + shift[ch + k];
    } else {
      const int64_t ch = (i / inner) % c;
      const float s = a[ch], b = shift[ch];
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] = s * v[k] + b;
    }
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] = cuda::activate_rt(act, v[k], 0.f, 0.f);
    cuda::store_pack<T, V>(y + i, v);
  }
}

class BatchNormKernel final : public CudaKernel {
 public:
  BatchNormKernel(std::string name, float epsilon, Activation act)
      : name_(std::move(name)), epsilon_(epsilon), act_(act) {}

  Layout input_layout(int i, Layout offered) const override {
    return i == 0 ? offered : Layout::kPlain;
  }
  bool reads_on_host(int i) const override { return i >= 1 && i <= 4; }
  int inplace_input() const override { return 0; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override {
    static const char* const kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
    if (in.size() != 5)
      return invalid_argument("expected 5 inputs, got " + std::to_string(in.size()));
    const TensorDesc& x = in[0];
    KILN_RETURN_IF_ERROR(cuda::check_act_dtype(x.dtype, "input 0"));
    if (x.shape.size() < 2)
      return invalid_argument("input X " + shape_str(x.shape) +
                              " must have rank ≥ 2 ([N, C, ...])");
    c_ = x.shape[1];
    std::vector<float> params(2 * c_);  // a then shift
    const Tensor* t[5] = {};
    for (int i = 1; i < 5; ++i) {
      t[i] = in[i].value;
      if (!t[i])
        return unsupported(std::string("input ") + std::to_string(i) + " (" + kNames[i] +
                           ") is not a constant");
      if (t[i]->shape() != Shape{c_} || !dtype_is_float(t[i]->dtype()))
        return invalid_argument(std::string("input ") + std::to_string(i) + " (" + kNames[i] +
                                ") must be a float tensor of shape [" + std::to_string(c_) + "]");
    }
    for (int64_t k = 0; k < c_; ++k) {
      const float scale = static_cast<float>(t[1]->at_double(k));
      const float bias = static_cast<float>(t[2]->at_double(k));
      const float mean = static_cast<float>(t[3]->at_double(k));
      const float var = static_cast<float>(t[4]->at_double(k));
      params[k] = scale / std::sqrt(var + epsilon_);
      params[c_ + k] = bias - mean * params[k];
    }
    const size_t bytes = params.size() * sizeof(float);
    const std::string key =
        name_ + "/bn/a_shift/" + std::to_string(cuda::content_hash(params.data(), bytes));
    KILN_ASSIGN_OR_RETURN(void* dev, ctx.weights->upload(key, params.data(), bytes));
    params_ = static_cast<const float*>(dev);
    numel_ = x.numel();
    inner_ = c_ == 0 || x.shape[0] == 0 ? 0 : numel_ / (x.shape[0] * c_);
    layout_ = x.layout;
    dtype_ = x.dtype;
    out[0] = TensorDesc{x.dtype, x.shape, nullptr, x.layout};
    for (size_t i = 1; i < out.size(); ++i) out[i] = TensorDesc{};
    return Status::ok();
  }

  std::string tactic() const override {
    return std::string("kiln batch_norm ") + layout_name(layout_) +
           (act_ == Activation::kNone ? "" : std::string(" fused ") + activation_name(act_));
  }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    if (numel_ == 0) return Status::ok();
    const bool nhwc = layout_ == Layout::kNHWC;
    return cuda::dispatch_act(dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      const T* x = static_cast<const T*>(in[0]->data);
      T* y = static_cast<T*>(out[0]->data);
      const int v = cuda::pack_width(sizeof(T), nhwc ? c_ : inner_, {x, y});
      const int64_t packs = numel_ / v;
      constexpr int kThreads = 256;
      const unsigned blocks = cuda::grid_blocks(packs, kThreads);
      const float *a = params_, *shift = params_ + c_;
      auto go = [&](auto kernel) {
        kernel<<<blocks, kThreads, 0, run.stream>>>(x, y, a, shift, packs, c_, inner_, nhwc, act_);
      };
      switch (v) {
        case 8: go(batch_norm_kernel<T, 8>); break;
        case 4: go(batch_norm_kernel<T, 4>); break;
        case 2: go(batch_norm_kernel<T, 2>); break;
        default: go(batch_norm_kernel<T, 1>); break;
      }
      KILN_CUDA_LAUNCHED("batch_norm_kernel");
      return Status::ok();
    });
  }

 private:
  std::string name_;
  float epsilon_;
  Activation act_;
  int64_t c_ = 0, numel_ = 0, inner_ = 0;
  const float* params_ = nullptr;
  Layout layout_ = Layout::kPlain;
  DataType dtype_ = DataType::kUndefined;
};

Result<std::unique_ptr<CudaKernel>> make_batch_normalization(const Node& node, Precision) {
  KILN_RETURN_IF_ERROR(check_batch_norm_mode(node));
  if (node.inputs.size() != 5) return invalid_argument("expected 5 inputs");
  const Value* x = node.input(0);
  if (!x || !dtype_is_float(x->dtype)) return unsupported("input 0 is not a float tensor");
  for (size_t i = 1; i < 5; ++i)
    if (!node.input(i) || !node.input(i)->is_constant())
      return unsupported("input " + std::to_string(i) +
                         " is not a constant (the CUDA kernel takes constant statistics)");
  // An activation epilogue (fuse_channel_affine's Relu) is applied in the same pass; an
  // alpha/beta-free one only, and no residual.
  const Epilogue& e = node.epilogue;
  if (e.residual_input >= 0 || (e.act != Activation::kNone && e.act != Activation::kRelu))
    return unsupported("BatchNormalization with epilogue " + e.describe());
  return std::unique_ptr<CudaKernel>(
      new BatchNormKernel(node.name, batch_norm_attrs(node).epsilon, e.act));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(BatchNormalization, make_batch_normalization);

}  // namespace kiln
