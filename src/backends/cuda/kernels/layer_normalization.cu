// LayerNormalization (opset 17), plain layout: X seen as [rows, cols] split at `axis`, each row
// normalized as the reference does (ops/layer_normalization.cc), in float:
//   mean = Σx / cols, var = Σ(x − mean)² / cols (two passes), y = (x − mean)·inv·Scale + B
// with inv = 1 / sqrt(var + epsilon). Scale and B are constants, broadcast to the normalized
// dims on the host at prepare and uploaded once as float. The sums run over deviations from
// the row's first element, so rows far from zero mean keep their digits. One warp per row:
// ConvNeXt's rows are its channels (96 to 1536) at every pixel, so there are many short rows; the
// second and third passes re-read the row from L1. The optional Mean and InvStdDev outputs are
// written as float (stash_type 1); stash_type 11 (double) stays on the CPU.

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/structured.cuh"
#include "ops/layer_normalization.h"
#include "ops/op_util.h"

namespace kiln {
namespace {

constexpr int kThreads = 256;  // 8 rows per block

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// V consecutive elements of a row at once (cols % V == 0, rows aligned to V elements).
template <class T, int V>
__global__ void layer_norm_kernel(const T* __restrict__ x, T* __restrict__ y,
                                  const float* __restrict__ scale, const float* __restrict__ bias,
                                  float* __restrict__ mean_out, float* __restrict__ inv_out,
                                  int64_t rows, int64_t cols, float eps) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / 32);
  const int64_t packs = cols / V;
  for (int64_t row = blockIdx.x * int64_t{blockDim.x / 32} + threadIdx.x / 32; row < rows;
       row += warps) {
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    // Deviations from the row's first element: exact for nearby values (Sterbenz), so a row
    // far from zero mean keeps its digits; then two passes on them.
    const float x0 = cuda::to_float(xr[0]);
    float v[V];
    float sum = 0.f;
    for (int64_t p = lane; p < packs; p += 32) {
      cuda::load_pack<T, V>(xr + p * V, v);
#pragma unroll
      for (int k = 0; k < V; ++k) sum += v[k] - x0;
    }
    const float mean_d = warp_sum(sum) / static_cast<float>(cols);
    float sq = 0.f;
    for (int64_t p = lane; p < packs; p += 32) {
      cuda::load_pack<T, V>(xr + p * V, v);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float d = (v[k] - x0) - mean_d;
        sq += d * d;
      }
    }
    const float inv = 1.f / sqrtf(warp_sum(sq) / static_cast<float>(cols) + eps);
    for (int64_t p = lane; p < packs; p += 32) {
      cuda::load_pack<T, V>(xr + p * V, v);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const int64_t c = p * V + k;
        v[k] = ((v[k] - x0) - mean_d) * inv * scale[c] + bias[c];
      }
      cuda::store_pack<T, V>(yr + p * V, v);
    }
    const float mean = x0 + mean_d;
    if (lane == 0) {
      if (mean_out) mean_out[row] = mean;
      if (inv_out) inv_out[row] = inv;
    }
  }
}

class LayerNormKernel final : public CudaKernel {
 public:
  LayerNormKernel(std::string name, int64_t axis, float epsilon, std::vector<bool> stats)
      : name_(std::move(name)), axis_(axis), epsilon_(epsilon), stats_(std::move(stats)) {}

  bool reads_on_host(int i) const override { return i == 1 || i == 2; }
  int inplace_input() const override { return 0; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override {
    if (in.size() < 2) return invalid_argument("expected 2 or 3 inputs");
    const TensorDesc& x = in[0];
    KILN_RETURN_IF_ERROR(cuda::check_act_dtype(x.dtype, "input 0"));
    if (x.layout != Layout::kPlain) return invalid_argument("LayerNormalization takes plain input");
    if (x.shape.empty()) return invalid_argument("input 0 is a scalar; it needs rank >= 1");
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    KILN_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, rank, "axis"));
    rows_ = cols_ = 1;
    for (int64_t d = 0; d < axis; ++d) rows_ *= x.shape[d];
    const Shape normalized(x.shape.begin() + axis, x.shape.end());
    cols_ = shape_numel(normalized);
    // Scale then B, each expanded to the normalized dims.
    std::vector<float> params(static_cast<size_t>(2 * cols_), 0.f);
    for (int i = 1; i <= 2; ++i) {
      if (i >= static_cast<int>(in.size()) || !in[i].present()) continue;  // no B: zeros
      const Tensor* t = in[i].value;
      if (!t) return unsupported("input " + std::to_string(i) + " is not a constant");
      auto b = broadcast_shapes({t->shape(), normalized});
      if (!b.is_ok() || *b != normalized)
        return invalid_argument(
            std::string(i == 1 ? "Scale" : "B") + " shape " + shape_str(t->shape()) +
            " does not broadcast to the normalized dims " + shape_str(normalized));
      float* dst = params.data() + (i - 1) * cols_;
      for_each_broadcast(normalized, {broadcast_strides(t->shape(), normalized)},
                         [&](int64_t k, const std::vector<int64_t>& off) {
                           dst[k] = static_cast<float>(t->at_double(off[0]));
                         });
    }
    const size_t bytes = params.size() * sizeof(float);
    if (bytes) {
      const std::string key =
          name_ + "/ln/scale_bias/" + std::to_string(cuda::content_hash(params.data(), bytes));
      KILN_ASSIGN_OR_RETURN(void* dev, ctx.weights->upload(key, params.data(), bytes));
      params_ = static_cast<const float*>(dev);
    }
    dtype_ = x.dtype;
    out[0] = TensorDesc{x.dtype, x.shape};
    Shape stat = x.shape;
    for (int64_t d = axis; d < rank; ++d) stat[d] = 1;
    for (size_t i = 1; i < out.size(); ++i)
      out[i] = i < stats_.size() && stats_[i] ? TensorDesc{DataType::kFloat32, stat} : TensorDesc{};
    return Status::ok();
  }

  std::string tactic() const override { return "kiln layer_norm warp/row"; }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    if (rows_ * cols_ == 0) return Status::ok();
    float* mean = out.size() > 1 && out[1] ? static_cast<float*>(out[1]->data) : nullptr;
    float* inv = out.size() > 2 && out[2] ? static_cast<float*>(out[2]->data) : nullptr;
    return cuda::dispatch_act(dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      const T* x = static_cast<const T*>(in[0]->data);
      T* y = static_cast<T*>(out[0]->data);
      const unsigned blocks = static_cast<unsigned>(
          std::min<int64_t>((rows_ + kThreads / 32 - 1) / (kThreads / 32), 1 << 20));
      const float *scale = params_, *bias = params_ + cols_;
      auto go = [&](auto kernel) {
        kernel<<<blocks, kThreads, 0, run.stream>>>(x, y, scale, bias, mean, inv, rows_, cols_,
                                                    epsilon_);
      };
      switch (cuda::pack_width(sizeof(T), cols_, {x, y})) {
        case 8: go(layer_norm_kernel<T, 8>); break;
        case 4: go(layer_norm_kernel<T, 4>); break;
        case 2: go(layer_norm_kernel<T, 2>); break;
        default: go(layer_norm_kernel<T, 1>); break;
      }
      KILN_CUDA_LAUNCHED("layer_norm_kernel");
      return Status::ok();
    });
  }

 private:
  std::string name_;
  int64_t axis_;
  float epsilon_;
  std::vector<bool> stats_;  // which outputs the graph uses (Mean, InvStdDev at 1 and 2)
  int64_t rows_ = 0, cols_ = 0;
  const float* params_ = nullptr;
  DataType dtype_ = DataType::kUndefined;
};

Result<std::unique_ptr<CudaKernel>> make_layer_normalization(const Node& node, Precision) {
  const Value* x = node.input(0);
  if (!x || !dtype_is_float(x->dtype)) return unsupported("input 0 is not a float tensor");
  for (size_t i = 1; i < node.inputs.size() && i < 3; ++i)
    if (node.input(i) && !node.input(i)->is_constant())
      return unsupported("input " + std::to_string(i) +
                         " is not a constant (the CUDA kernel takes constant Scale and B)");
  const LayerNormAttrs a = layer_norm_attrs(node);
  if (a.stash_type != 1)
    return unsupported("stash_type " + std::to_string(a.stash_type) +
                       " (the CUDA kernel keeps its statistics in float)");
  std::vector<bool> stats(3, false);
  for (size_t i = 1; i < node.outputs.size() && i < 3; ++i) stats[i] = node.output(i) != nullptr;
  return std::unique_ptr<CudaKernel>(new LayerNormKernel(node.name, a.axis, a.epsilon, stats));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(LayerNormalization, make_layer_normalization);

}  // namespace kiln
