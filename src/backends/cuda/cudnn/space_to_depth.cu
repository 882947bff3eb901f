// The space-to-depth input transform and filter rewrite (space_to_depth.h).
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cudnn/space_to_depth.h"

namespace kiln {
namespace {

constexpr int kB = kS2dBlock;

// NHWC: one thread per z pixel, its CZ channels built in registers and stored as 16-byte
// vectors (CZ·sizeof(T) is a multiple of 16). The grid is 2-D (z columns × rows of all
// images) so that a thread needs one 32-bit division, not 64-bit ones, for its position.
// The element type only moves bits.
template <typename T, int CZ>
__global__ void s2d_nhwc_kernel(const T* __restrict__ x, T* __restrict__ z, S2dShape s) {
  constexpr int kVec = 16 / sizeof(T);
  static_assert(CZ % kVec == 0, "whole 16-byte vectors");
  const int q = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (q >= s.wz) return;
  const int rows = static_cast<int>(s.n * s.hz), hz = static_cast<int>(s.hz);
  for (int row = static_cast<int>(blockIdx.y); row < rows; row += static_cast<int>(gridDim.y)) {
    const int n = row / hz, p = row - n * hz;
    union {
      uint4 v[CZ / kVec];
      T e[CZ];
    } out;
#pragma unroll
    for (int j = 0; j < CZ / kVec; ++j) out.v[j] = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int blk = 0; blk < kB * kB; ++blk) {
      const int64_t y = kB * p + blk / kB - s.pad_top, xx = kB * q + blk % kB - s.pad_left;
      if (y < 0 || y >= s.h || xx < 0 || xx >= s.w) continue;
      const T* src = x + ((n * s.h + y) * s.w + xx) * s.c;
      for (int c = 0; c < s.c; ++c) out.e[blk * (CZ / (kB * kB)) + c] = src[c];
    }
    uint4* dst = reinterpret_cast<uint4*>(z + (static_cast<int64_t>(row) * s.wz + q) * CZ);
#pragma unroll
    for (int j = 0; j < CZ / kVec; ++j) dst[j] = out.v[j];
  }
}

// Any layout and channel count: one thread per z element.
template <typename T>
__global__ void s2d_elem_kernel(const T* __restrict__ x, T* __restrict__ z, S2dShape s, bool nhwc) {
  const int64_t cz = s.cp * kB * kB, total = s.n * cz * s.hz * s.wz;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    int64_t ch, p, q, n;
    if (nhwc) {
      ch = i % cz;
      q = (i / cz) % s.wz;
      p = (i / (cz * s.wz)) % s.hz;
      n = i / (cz * s.wz * s.hz);
    } else {
      q = i % s.wz;
      p = (i / s.wz) % s.hz;
      ch = (i / (s.wz * s.hz)) % cz;
      n = i / (s.wz * s.hz * cz);
    }
    const int64_t blk = ch / s.cp, c = ch % s.cp;
    const int64_t y = kB * p + blk / kB - s.pad_top, xx = kB * q + blk % kB - s.pad_left;
    T v = T(0);
    if (c < s.c && y >= 0 && y < s.h && xx >= 0 && xx < s.w)
      v = nhwc ? x[((n * s.h + y) * s.w + xx) * s.c + c] : x[((n * s.c + c) * s.h + y) * s.w + xx];
    z[i] = v;
  }
}

int blocks_for(int64_t items, int threads) {
  return static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>((items + threads - 1) / threads, int64_t{1} << 20)));
}

template <typename T>
Status launch_typed(bool nhwc, const S2dShape& s, const void* x, void* z, cudaStream_t stream) {
  constexpr int kThreads = 128;
  const T* xs = static_cast<const T*>(x);
  T* zs = static_cast<T*>(z);
  const bool aligned = reinterpret_cast<uintptr_t>(z) % 16 == 0;
  const int64_t cz = s.cz();
  // One z row per block row; rows beyond the grid's y limit loop.
  const bool fits = s.n * s.hz < INT32_MAX && s.wz < INT32_MAX;
  const dim3 grid(static_cast<unsigned>((s.wz + kThreads - 1) / kThreads),
                  static_cast<unsigned>(std::min<int64_t>(s.n * s.hz, 65535)));
  if (nhwc && aligned && fits && cz == 16) {
    s2d_nhwc_kernel<T, 16><<<grid, kThreads, 0, stream>>>(xs, zs, s);
  } else if (nhwc && aligned && fits && cz == 32) {
    s2d_nhwc_kernel<T, 32><<<grid, kThreads, 0, stream>>>(xs, zs, s);
  } else if (nhwc && aligned && fits && cz == 8 && sizeof(T) == 2) {
    s2d_nhwc_kernel<T, 8><<<grid, kThreads, 0, stream>>>(xs, zs, s);
  } else {
    s2d_elem_kernel<T><<<blocks_for(s.z_numel(), kThreads), kThreads, 0, stream>>>(xs, zs, s, nhwc);
  }
  KILN_CUDA_LAUNCHED("space_to_depth");
  return Status::ok();
}

}  // namespace

Tensor space_to_depth_filter(const Tensor& w, int64_t cp) {
  const Shape& ws = w.shape();
  const int64_t k = ws[0], c = ws[1], r = ws[2], sw = ws[3];
  const int64_t ra = (r + kB - 1) / kB, sb = (sw + kB - 1) / kB, cz = cp * kB * kB;
  const std::vector<float> src = w.to_floats();
  std::vector<float> dst(static_cast<size_t>(k * cz * ra * sb), 0.f);
  for (int64_t o = 0; o < k; ++o)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < sw; ++j) {
          const int64_t blk = (i % kB) * kB + j % kB;
          const int64_t zc = blk * cp + ch;
          dst[((o * cz + zc) * ra + i / kB) * sb + j / kB] = src[((o * c + ch) * r + i) * sw + j];
        }
  return Tensor::from_floats(Shape{k, cz, ra, sb}, dst);
}

Status launch_space_to_depth(DataType dtype, bool nhwc, const S2dShape& s, const void* x, void* z,
                             cudaStream_t stream) {
  if (s.c <= 0 || s.cp < s.c || s.hz <= 0 || s.wz <= 0)
    return invalid_argument("space_to_depth: " + std::to_string(s.c) + " channels into " +
                            std::to_string(s.cp) + ", z " + std::to_string(s.hz) + "x" +
                            std::to_string(s.wz));
  if (s.z_numel() == 0) return Status::ok();
  if (dtype == DataType::kFloat16) return launch_typed<uint16_t>(nhwc, s, x, z, stream);
  if (dtype == DataType::kFloat32) return launch_typed<float>(nhwc, s, x, z, stream);
  return unsupported(std::string("space_to_depth on ") + dtype_name(dtype));
}

}  // namespace kiln
