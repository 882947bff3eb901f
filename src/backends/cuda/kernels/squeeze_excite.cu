// SqueezeExcite (ops/squeeze_excite.h): y = x · gate[n, c], in four or five launches:
//   1. squeeze: the plane sums of x, float partials [split][n][c] (global_pool.cuh), combined
//      into means by a second launch when a large map was split along H·W;
//   2. hidden[n, j] = act1(W1[j] · mean[n] + B1[j]), a block per 8 units × 8 images;
//   3. gate[n, c] = act2(W2ᵀ[·, c] · hidden[n] + B2[c]), a block per 32 channels × 8 images,
//      W2 stored transposed so a warp reads 32 consecutive channels of one row;
//   4. y = x · gate, V channels (NHWC) or V positions (plain) a thread.
// Steps 2–3 replace two library convolutions on [N, C, 1, 1] tensors, whose fixed cost
// exceeds their work; both are bound by memory latency, not bandwidth, so each thread issues
// its loads together. Everything between x and y stays float, in the workspace.

#include <memory>
#include <vector>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/elementwise.cuh"
#include "backends/cuda/kernels/global_pool.cuh"
#include "ops/squeeze_excite.h"

namespace kiln {
namespace {

constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr int kTileJ = 8, kTileN = 8;  // the hidden kernel's block: 8 hidden units × 8 images
constexpr int kGateC = 32, kGateN = 8, kGateRows = kThreads / kGateC, kGateChunk = 256;

// hidden[n, j] = act(Σ_k W1[j, k] · s[n, k] · s_scale + B1[j]) for a tile of 8 units × 8
// images: the threads split k (each holds 64 partial sums), then the block adds them up. Every
// load of a thread is independent of the others, so a few round trips to memory cover the
// whole reduction (a warp walking k alone waited on C / 32 of them in turn).
__global__ void se_hidden_kernel(const float* __restrict__ s, float s_scale,
                                 const float* __restrict__ w1, const float* __restrict__ b1,
                                 float* __restrict__ hidden, int64_t n, int64_t c, int64_t r,
                                 Activation act, float alpha, float beta) {
  __shared__ float red[kWarps][kTileJ * kTileN];
  const int64_t j0 = blockIdx.x * int64_t{kTileJ}, n0 = blockIdx.y * int64_t{kTileN};
  float acc[kTileJ][kTileN] = {};
  for (int64_t k = threadIdx.x; k < c; k += kThreads) {
    float w[kTileJ], m[kTileN];
#pragma unroll
    for (int jj = 0; jj < kTileJ; ++jj) w[jj] = j0 + jj < r ? w1[(j0 + jj) * c + k] : 0.f;
#pragma unroll
    for (int i = 0; i < kTileN; ++i) m[i] = n0 + i < n ? s[(n0 + i) * c + k] : 0.f;
#pragma unroll
    for (int jj = 0; jj < kTileJ; ++jj)
#pragma unroll
      for (int i = 0; i < kTileN; ++i) acc[jj][i] += w[jj] * m[i];
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int jj = 0; jj < kTileJ; ++jj)
#pragma unroll
    for (int i = 0; i < kTileN; ++i) {
      float v = acc[jj][i];
#pragma unroll
      for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
      if (lane == 0) red[warp][jj * kTileN + i] = v;
    }
  __syncthreads();
  if (threadIdx.x >= kTileJ * kTileN) return;
  const int jj = threadIdx.x / kTileN, i = threadIdx.x % kTileN;
  if (j0 + jj >= r || n0 + i >= n) return;
  float v = 0.f;
#pragma unroll
  for (int q = 0; q < kWarps; ++q) v += red[q][threadIdx.x];
  hidden[(n0 + i) * r + j0 + jj] = cuda::activate_rt(act, v * s_scale + b1[j0 + jj], alpha, beta);
}

// gate[n, c] = act(Σ_j W2ᵀ[j, c] · hidden[n, j] + B2[c]) for 32 channels × 8 images a block:
// the block stages 256 hidden units of its images in shared memory at a time, 8 rows of
// threads split j, and the rows' sums meet in shared memory.
__global__ void se_gate_kernel(const float* __restrict__ hidden, const float* __restrict__ w2t,
                               const float* __restrict__ b2, float* __restrict__ gate, int64_t n,
                               int64_t c, int64_t r, Activation act, float alpha, float beta) {
  __shared__ float h[kGateN][kGateChunk];
  __shared__ float red[kGateRows][kGateN][kGateC];
  const int cx = threadIdx.x % kGateC, row = threadIdx.x / kGateC;
  const int64_t ch = blockIdx.x * int64_t{kGateC} + cx, n0 = blockIdx.y * int64_t{kGateN};
  float acc[kGateN] = {};
  for (int64_t j0 = 0; j0 < r; j0 += kGateChunk) {
    const int64_t len = min(int64_t{kGateChunk}, r - j0);
#pragma unroll
    for (int e = threadIdx.x; e < kGateN * kGateChunk; e += kThreads) {
      const int i = e / kGateChunk, jj = e % kGateChunk;
      h[i][jj] = n0 + i < n && jj < len ? hidden[(n0 + i) * r + j0 + jj] : 0.f;
    }
    __syncthreads();
    if (ch < c) {
#pragma unroll 4
      for (int64_t jj = row; jj < len; jj += kGateRows) {
        const float w = w2t[(j0 + jj) * c + ch];
#pragma unroll
        for (int i = 0; i < kGateN; ++i) acc[i] += w * h[i][jj];
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kGateN; ++i) red[row][i][cx] = acc[i];
  __syncthreads();
  if (row != 0 || ch >= c) return;
#pragma unroll
  for (int i = 0; i < kGateN; ++i) {
    if (n0 + i >= n) break;
    float v = b2[ch];
#pragma unroll
    for (int q = 0; q < kGateRows; ++q) v += red[q][i][cx];
    gate[(n0 + i) * c + ch] = cuda::activate_rt(act, v, alpha, beta);
  }
}

// blockIdx.y is the image; `per_image` packs of V elements each. NHWC: a pack is V channels
// of one position; plain: V positions of one channel (hw % V == 0).
template <class T, int V>
__global__ void se_scale_kernel(const T* __restrict__ x, T* __restrict__ y,
                                const float* __restrict__ gate, int64_t c, int64_t hw,
                                int64_t per_image, bool nhwc) {
  const int64_t n = blockIdx.y;
  const T* xn = x + n * c * hw;
  T* yn = y + n * c * hw;
  const float* g = gate + n * c;
  for (int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; p < per_image;
       p += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = p * V;
    float v[V];
    cuda::load_pack<T, V>(xn + i, v);
    if (nhwc) {
      const int64_t ch = i % c;
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] *= g[ch + k];
    } else {
      const float s = g[i / hw];
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] *= s;
    }
    cuda::store_pack<T, V>(yn + i, v);
  }
}

class SqueezeExciteKernel final : public CudaKernel {
 public:
  SqueezeExciteKernel(std::string name, SqueezeExciteAttrs attrs)
      : name_(std::move(name)), a_(attrs) {}

  Layout input_layout(int i, Layout offered) const override {
    return i == 0 && offered == Layout::kNHWC ? Layout::kNHWC : Layout::kPlain;
  }
  bool reads_on_host(int i) const override { return i >= 1; }
  int inplace_input() const override { return 0; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override {
    const TensorDesc& x = in[0];
    KILN_RETURN_IF_ERROR(cuda::check_act_dtype(x.dtype, "input 0"));
    const Tensor* t[5] = {};
    for (size_t i = 1; i < in.size() && i < 5; ++i) t[i] = in[i].value;
    for (int i : {1, 3})
      if (!t[i]) return unsupported("input " + std::to_string(i) + " is not a constant");
    for (int i : {2, 4})
      if (i < static_cast<int>(in.size()) && in[i].present() && !t[i])
        return unsupported("input " + std::to_string(i) + " is not a constant");
    KILN_ASSIGN_OR_RETURN(
        d_, squeeze_excite_dims(x.shape, t[1]->shape(), t[2] ? &t[2]->shape() : nullptr,
                                t[3]->shape(), t[4] ? &t[4]->shape() : nullptr));
    // [W1: r·c][B1: r][W2ᵀ: r·c][B2: c], float.
    std::vector<float> p(2 * d_.r * d_.c + d_.r + d_.c, 0.f);
    float* w1 = p.data();
    float* b1 = w1 + d_.r * d_.c;
    float* w2t = b1 + d_.r;
    float* b2 = w2t + d_.r * d_.c;
    for (int64_t j = 0; j < d_.r; ++j) {
      for (int64_t k = 0; k < d_.c; ++k) {
        w1[j * d_.c + k] = static_cast<float>(t[1]->at_double(j * d_.c + k));
        w2t[j * d_.c + k] = static_cast<float>(t[3]->at_double(k * d_.r + j));
      }
      if (t[2]) b1[j] = static_cast<float>(t[2]->at_double(j));
    }
    if (t[4])
      for (int64_t k = 0; k < d_.c; ++k) b2[k] = static_cast<float>(t[4]->at_double(k));
    const size_t bytes = p.size() * sizeof(float);
    const std::string key =
        name_ + "/se/params/" + std::to_string(cuda::content_hash(p.data(), bytes));
    KILN_ASSIGN_OR_RETURN(void* dev, ctx.weights->upload(key, p.data(), bytes));
    params_ = static_cast<const float*>(dev);
    layout_ = x.layout;
    dtype_ = x.dtype;
    if (layout_ == Layout::kNHWC) {
      spread_ = cuda::nhwc_spread(d_.n, d_.c, d_.hw, dtype_size(dtype_), cuda::current_sm_count());
    } else {
      spread_ = cuda::NhwcSpread{};
    }
    out[0] = TensorDesc{x.dtype, x.shape, nullptr, x.layout};
    return Status::ok();
  }

  // Float partial sums [splits][n][c], hidden [n][r], gate [n][c].
  size_t workspace_bytes() const override {
    return static_cast<size_t>((spread_.splits + 1) * d_.n * d_.c + d_.n * d_.r) * sizeof(float);
  }

  std::string tactic() const override {
    std::string t = std::string("kiln squeeze_excite ") + layout_name(layout_) + " " +
                    activation_name(a_.squeeze) + "/" + activation_name(a_.excite);
    if (spread_.splits > 1) t += " split " + std::to_string(spread_.splits);
    return t;
  }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    if (d_.n * d_.c == 0) return Status::ok();
    return cuda::dispatch_act(dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      const T* x = static_cast<const T*>(in[0]->data);
      T* y = static_cast<T*>(out[0]->data);
      float* part = static_cast<float*>(run.workspace);
      float* hidden = part + spread_.splits * d_.n * d_.c;
      float* gate = hidden + d_.n * d_.r;
      KILN_RETURN_IF_ERROR(squeeze<T>(x, part, run.stream));
      const float* w1 = params_;
      const float* b1 = w1 + d_.r * d_.c;
      const float* w2t = b1 + d_.r;
      const float* b2 = w2t + d_.r * d_.c;
      // Several partials a plane: combined into means first (one pass over n·c floats).
      const float* sums = part;
      float s_scale = d_.hw ? 1.f / static_cast<float>(d_.hw) : 0.f;
      if (spread_.splits > 1) {
        float* means = gate;  // free until the gate kernel writes it
        cuda::global_pool_finish_kernel<float, false>
            <<<cuda::grid_blocks(d_.n * d_.c, kThreads), kThreads, 0, run.stream>>>(
                part, means, d_.n * d_.c, spread_.splits, d_.hw);
        KILN_CUDA_LAUNCHED("global_pool_finish_kernel (squeeze)");
        sums = means;
        s_scale = 1.f;
      }
      const dim3 hgrid(static_cast<unsigned>((d_.r + kTileJ - 1) / kTileJ),
                       static_cast<unsigned>((d_.n + kTileN - 1) / kTileN));
      se_hidden_kernel<<<hgrid, kThreads, 0, run.stream>>>(sums, s_scale, w1, b1, hidden, d_.n,
                                                           d_.c, d_.r, a_.squeeze, a_.squeeze_alpha,
                                                           a_.squeeze_beta);
      KILN_CUDA_LAUNCHED("se_hidden_kernel");
      const dim3 ggrid(static_cast<unsigned>((d_.c + kGateC - 1) / kGateC),
                       static_cast<unsigned>((d_.n + kGateN - 1) / kGateN));
      se_gate_kernel<<<ggrid, kThreads, 0, run.stream>>>(
          hidden, w2t, b2, gate, d_.n, d_.c, d_.r, a_.excite, a_.excite_alpha, a_.excite_beta);
      KILN_CUDA_LAUNCHED("se_gate_kernel");
      return scale<T>(x, y, gate, run.stream);
    });
  }

 private:
  template <class T>
  Status squeeze(const T* x, float* part, cudaStream_t s) const {
    if (layout_ == Layout::kPlain) {
      cuda::global_pool_plain_kernel<T, float, false>
          <<<cuda::grid_blocks(d_.n * d_.c * cuda::kLanes, kThreads), kThreads, 0, s>>>(
              x, part, d_.n * d_.c, d_.hw, 1.f);
      KILN_CUDA_LAUNCHED("global_pool_plain_kernel (squeeze)");
      return Status::ok();
    }
    const cuda::NhwcSpread& sp = spread_;
    if (cuda::pack_width(sizeof(T), sp.v, {x}) != sp.v)
      return internal_error("SqueezeExcite input not aligned for its pack width");
    const int64_t blocks = d_.n * sp.chunks;
    if (blocks > 0x7fffffff) return unsupported("SqueezeExcite grid too large");
    const dim3 block(sp.lanes, cuda::kBlockThreads / sp.lanes);
    const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(sp.splits));
    auto go = [&](auto kernel) {
      kernel<<<grid, block, 0, s>>>(x, nullptr, part, d_.c, d_.hw, sp.chunks, sp.per_split, true);
    };
    switch (sp.v) {
      case 8: go(cuda::global_pool_nhwc_kernel<T, 8, false>); break;
      case 4: go(cuda::global_pool_nhwc_kernel<T, 4, false>); break;
      case 2: go(cuda::global_pool_nhwc_kernel<T, 2, false>); break;
      default: go(cuda::global_pool_nhwc_kernel<T, 1, false>); break;
    }
    KILN_CUDA_LAUNCHED("global_pool_nhwc_kernel (squeeze)");
    return Status::ok();
  }

  template <class T>
  Status scale(const T* x, T* y, const float* gate, cudaStream_t s) const {
    const bool nhwc = layout_ == Layout::kNHWC;
    const int v = cuda::pack_width(sizeof(T), nhwc ? d_.c : d_.hw, {x, y});
    const int64_t per_image = d_.c * d_.hw / v;
    if (d_.n > 65535) return unsupported("SqueezeExcite batch above 65535");
    const unsigned bx = std::min<unsigned>(cuda::grid_blocks(per_image, kThreads), 1024);
    const dim3 grid(std::max(1u, bx), static_cast<unsigned>(d_.n));
    auto go = [&](auto kernel) {
      kernel<<<grid, kThreads, 0, s>>>(x, y, gate, d_.c, d_.hw, per_image, nhwc);
    };
    switch (v) {
      case 8: go(se_scale_kernel<T, 8>); break;
      case 4: go(se_scale_kernel<T, 4>); break;
      case 2: go(se_scale_kernel<T, 2>); break;
      default: go(se_scale_kernel<T, 1>); break;
    }
    KILN_CUDA_LAUNCHED("se_scale_kernel");
    return Status::ok();
  }

  std::string name_;
  SqueezeExciteAttrs a_;
  SqueezeExciteDims d_;
  const float* params_ = nullptr;
  Layout layout_ = Layout::kPlain;
  DataType dtype_ = DataType::kUndefined;
  cuda::NhwcSpread spread_;
};

Result<std::unique_ptr<CudaKernel>> make_squeeze_excite(const Node& node, Precision) {
  const Value* x = node.input(0);
  if (!x || !dtype_is_float(x->dtype)) return unsupported("input 0 (x) must be a float tensor");
  KILN_RETURN_IF_ERROR(cuda::inputs_constant_from(node, 1));
  KILN_ASSIGN_OR_RETURN(SqueezeExciteAttrs a, squeeze_excite_attrs(node));
  return std::unique_ptr<CudaKernel>(new SqueezeExciteKernel(node.name, a));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(SqueezeExcite, make_squeeze_excite);

}  // namespace kiln
