// NormalizeImage (ops/normalize_image.h): uint8 pixels to the activation dtype, y = x·scale[c]
// + bias[c], written NHWC (what the stem conv reads), in one pass over the pixels.
//   channels_last input: the same element order in and out; V = 4 consecutive elements per
//     thread (one 4-byte load) when the count and pointers allow it;
//   NCHW input: one thread per output element, gathering across the planes.
// The scale and bias live in device memory, uploaded once at prepare.

#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/structured.cuh"
#include "ops/normalize_image.h"

namespace kiln {
namespace {

template <class T, bool kChannelsLast, int V>
__global__ void normalize_image_kernel(const uint8_t* __restrict__ x, T* __restrict__ y,
                                       const float* __restrict__ scale,
                                       const float* __restrict__ bias, int64_t packs, int64_t c,
                                       int64_t plane) {
  for (int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; p < packs;
       p += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = p * V;
    float v[V];
    if constexpr (kChannelsLast) {
      uint8_t px[V];
      if constexpr (V == 4) {
        *reinterpret_cast<uchar4*>(px) = *reinterpret_cast<const uchar4*>(x + i);
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) px[k] = x[i + k];
      }
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const int64_t ch = (i + k) % c;
        v[k] = static_cast<float>(px[k]) * scale[ch] + bias[ch];
      }
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const int64_t e = i + k, ch = e % c, pixel = e / c;
        const int64_t n = pixel / plane, at = pixel - n * plane;
        v[k] = static_cast<float>(x[(n * c + ch) * plane + at]) * scale[ch] + bias[ch];
      }
    }
    cuda::store_pack<T, V>(y + i, v);
  }
}

class NormalizeImageKernel final : public CudaKernel {
 public:
  explicit NormalizeImageKernel(const Node& node) : node_(node) {}

  Layout input_layout(int, Layout) const override { return Layout::kPlain; }
  std::string tactic() const override {
    return std::string("kiln normalize_image ") + (p_.channels_last ? "NHWC" : "NCHW") + " → NHWC";
  }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override {
    if (in.size() != 1 || !in[0].present()) return invalid_argument("expected 1 input");
    KILN_ASSIGN_OR_RETURN(p_, normalize_image_params(node_, in[0].dtype, in[0].shape));
    std::vector<float> params = p_.scale;
    params.insert(params.end(), p_.bias.begin(), p_.bias.end());
    const size_t bytes = params.size() * sizeof(float);
    const std::string key =
        node_.name + "/normalize_image/" + std::to_string(cuda::content_hash(params.data(), bytes));
    KILN_ASSIGN_OR_RETURN(void* dev, ctx.weights->upload(key, params.data(), bytes));
    params_ = static_cast<const float*>(dev);
    dtype_ = ctx.act_dtype();
    numel_ = shape_numel(p_.out);
    out[0] = TensorDesc{dtype_, p_.out, nullptr, Layout::kNHWC};
    return Status::ok();
  }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    if (numel_ == 0) return Status::ok();
    return cuda::dispatch_act(dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      const auto* x = static_cast<const uint8_t*>(in[0]->data);
      T* y = static_cast<T*>(out[0]->data);
      const bool wide = p_.channels_last && numel_ % 4 == 0 &&
                        reinterpret_cast<uintptr_t>(x) % 4 == 0 &&
                        reinterpret_cast<uintptr_t>(y) % (4 * sizeof(T)) == 0;
      const int64_t packs = wide ? numel_ / 4 : numel_;
      constexpr int kThreads = 256;
      const unsigned blocks = cuda::grid_blocks(packs, kThreads);
      const float *scale = params_, *bias = params_ + p_.c;
      const int64_t plane = p_.h * p_.w;
      auto go = [&](auto kernel) {
        kernel<<<blocks, kThreads, 0, run.stream>>>(x, y, scale, bias, packs, p_.c, plane);
      };
      if (wide)
        go(normalize_image_kernel<T, true, 4>);
      else if (p_.channels_last)
        go(normalize_image_kernel<T, true, 1>);
      else
        go(normalize_image_kernel<T, false, 1>);
      KILN_CUDA_LAUNCHED("normalize_image_kernel");
      return Status::ok();
    });
  }

 private:
  const Node& node_;
  NormalizeImageParams p_;
  const float* params_ = nullptr;
  DataType dtype_ = DataType::kUndefined;
  int64_t numel_ = 0;
};

Result<std::unique_ptr<CudaKernel>> make_normalize_image(const Node& node, Precision) {
  return std::unique_ptr<CudaKernel>(new NormalizeImageKernel(node));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(NormalizeImage, make_normalize_image);

}  // namespace kiln
