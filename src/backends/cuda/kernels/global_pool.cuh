// The global pooling kernels (GlobalAveragePool, GlobalMaxPool, and the squeeze of
// SqueezeExcite): the sum / max of each (n, c) plane, accumulated in float.
//
// NHWC (rank 4): a block covers up to 32·V channels of one image; its rows of threads split
// the H·W positions and meet in shared memory, so a warp reads consecutive V-channel packs
// ([256,2048,7,7] fp16 at full width). Few channels on a large map (EfficientNet's first SE
// pools [64, 32, 112, 112]) get narrower, taller blocks, and several blocks per image along
// H·W whose float partials a second step combines. Plain (any rank ≥ 3): one warp per plane.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "backends/cuda/kernels/structured.cuh"

namespace kiln::cuda {

constexpr int kLanes = 32, kBlockThreads = 256;

template <bool kMax>
__device__ __forceinline__ float combine(float a, float b) {
  return kMax ? cuda::nan_max(a, b) : a + b;
}

// One block: `lanes` threads across V-channel packs (a power of two, at most 32) times
// 256 / lanes rows splitting its share of the H·W positions; rows meet in shared memory. With
// several splits per image (or `sums`) the blocks write float partials, [split][n][c], to
// `part` (global_pool_finish_kernel combines them for the pools); otherwise the result to y.
template <class T, int V, bool kMax>
__global__ void global_pool_nhwc_kernel(const T* __restrict__ x, T* __restrict__ y,
                                        float* __restrict__ part, int64_t c, int64_t hw,
                                        int64_t chunks, int64_t per_split, bool sums) {
  __shared__ float red[kBlockThreads * V];
  const int lanes = blockDim.x, rows = blockDim.y;
  const int64_t n = blockIdx.x / chunks;
  const int64_t c0 = ((blockIdx.x % chunks) * lanes + threadIdx.x) * V;
  const bool active = c0 < c;
  const int64_t s0 = blockIdx.y * per_split, s1 = min(hw, s0 + per_split);
  float acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = kMax ? -INFINITY : 0.f;
  if (active) {
    // Four loads in flight per thread before any is combined: one at a time left the reads
    // latency-bound, well below DRAM speed.
    const T* p = x + n * hw * c + c0;
    int64_t s = s0 + threadIdx.y;
    for (; s + 3 * rows < s1; s += 4 * rows) {
      float v[4][V];
#pragma unroll
      for (int u = 0; u < 4; ++u) cuda::load_pack<T, V>(p + (s + u * rows) * c, v[u]);
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int k = 0; k < V; ++k) acc[k] = combine<kMax>(acc[k], v[u][k]);
    }
    for (; s < s1; s += rows) {
      float v[V];
      cuda::load_pack<T, V>(p + s * c, v);
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] = combine<kMax>(acc[k], v[k]);
    }
  }
  float* mine = red + (threadIdx.y * lanes + threadIdx.x) * V;
#pragma unroll
  for (int k = 0; k < V; ++k) mine[k] = acc[k];
  for (int step = rows / 2; step > 0; step /= 2) {
    __syncthreads();
    if (threadIdx.y < step) {
      const float* other = mine + step * lanes * V;
#pragma unroll
      for (int k = 0; k < V; ++k) mine[k] = combine<kMax>(mine[k], other[k]);
    }
  }
  if (threadIdx.y != 0 || !active) return;
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = mine[k];
  if (gridDim.y > 1 || sums) {  // a partial: [split][n][c] floats
    float* q = part + (blockIdx.y * (gridDim.x / chunks) + n) * c + c0;
#pragma unroll
    for (int k = 0; k < V; ++k) q[k] = acc[k];
    return;
  }
  if (!kMax) {
    const float inv = 1.f / static_cast<float>(hw);
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] *= inv;
  }
  cuda::store_pack<T, V>(y + n * c + c0, acc);
}

template <class T, bool kMax>
__global__ void global_pool_finish_kernel(const float* __restrict__ part, T* __restrict__ y,
                                          int64_t nc, int splits, int64_t hw) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < nc;
       i += int64_t{gridDim.x} * blockDim.x) {
    float acc = part[i];
    for (int s = 1; s < splits; ++s) acc = combine<kMax>(acc, part[s * nc + i]);
    y[i] = cuda::from_float<T>(kMax ? acc : acc / static_cast<float>(hw));
  }
}

// One warp per plane: y[plane] = max, or sum / div (the mean with div = H·W, the float sum with
// div = 1 and OutT float).
template <class T, class OutT, bool kMax>
__global__ void global_pool_plain_kernel(const T* __restrict__ x, OutT* __restrict__ y,
                                         int64_t planes, int64_t hw, float div) {
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kLanes);
  const int lane = threadIdx.x % kLanes;
  for (int64_t plane = blockIdx.x * int64_t{blockDim.x / kLanes} + threadIdx.x / kLanes;
       plane < planes; plane += warps) {
    const T* p = x + plane * hw;
    float acc = kMax ? -INFINITY : 0.f;
    for (int64_t s = lane; s < hw; s += kLanes) acc = combine<kMax>(acc, cuda::to_float(p[s]));
#pragma unroll
    for (int off = kLanes / 2; off > 0; off /= 2)
      acc = combine<kMax>(acc, __shfl_xor_sync(0xffffffffu, acc, off));
    if (lane == 0) y[plane] = cuda::from_float<OutT>(kMax ? acc : acc / div);
  }
}

// How an NHWC pool is spread: V channels per thread, `lanes` threads across packs, `chunks`
// blocks across C, `splits` blocks along H·W (each `per_split` positions).
struct NhwcSpread {
  int v = 1, lanes = 1, splits = 1;
  int64_t chunks = 1, per_split = 1;
};

// The current device's SM count (132 when it cannot be asked), for nhwc_spread.
inline int current_sm_count() {
  int device = 0, sms = 132;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    sms = 132;
  return sms;
}

// Enough blocks to fill the GPU (SE blocks pool [64, 32, 112, 112]: one block per image left
// most SMs idle), each still reading a few hundred positions.
inline NhwcSpread nhwc_spread(int64_t n, int64_t c, int64_t hw, size_t elem, int sms) {
  NhwcSpread sp;
  sp.v = cuda::pack_width(elem, c, {});
  const int64_t packs = c / sp.v;
  while (sp.lanes < kLanes && sp.lanes < packs) sp.lanes *= 2;
  const int rows = kBlockThreads / sp.lanes;
  sp.chunks = (packs + sp.lanes - 1) / sp.lanes;
  const int64_t want = 8 * int64_t{sms}, have = n * sp.chunks;
  int64_t splits = have >= want ? 1 : (want + have - 1) / have;
  splits = std::min<int64_t>({splits, std::max<int64_t>(1, hw / (4 * rows)), 1024});
  // An empty map (hw 0) is one split of one position's worth: no division by zero.
  sp.per_split = std::max<int64_t>(1, (hw + splits - 1) / splits);
  sp.splits = static_cast<int>(std::max<int64_t>(1, (hw + sp.per_split - 1) / sp.per_split));
  return sp;
}

}  // namespace kiln::cuda
