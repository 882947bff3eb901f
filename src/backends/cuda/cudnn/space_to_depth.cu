// The space-to-depth input transform and filter rewrite (space_to_depth.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/cudnn/space_to_depth.h"
#include "backends/cuda/kernels/elementwise.cuh"

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
#pragma unroll
      for (int c = 0; c < CZ / (kB * kB); ++c)  // constant indices keep `out` in registers
        if (c < s.c) out.e[blk * (CZ / (kB * kB)) + c] = src[c];
    }
    uint4* dst = reinterpret_cast<uint4*>(z + (static_cast<int64_t>(row) * s.wz + q) * CZ);
#pragma unroll
    for (int j = 0; j < CZ / kVec; ++j) dst[j] = out.v[j];
  }
}

// float32, float16 or bfloat16 as the bits of a z element.
template <typename T>
struct ZBits;
template <>
struct ZBits<float> {
  using type = float;
  static __device__ __forceinline__ float from(float v) { return v; }
};
template <>
struct ZBits<__half> {
  using type = uint16_t;
  static __device__ __forceinline__ uint16_t from(float v) {
    return __half_as_ushort(__float2half_rn(v));
  }
};
template <>
struct ZBits<__nv_bfloat16> {
  using type = uint16_t;
  static __device__ __forceinline__ uint16_t from(float v) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
  }
};

// NCHW x (the model's input, any float type) → NHWC z in Tout: one thread per z pixel, as
// s2d_nhwc_kernel. Neighbouring threads read neighbouring column pairs of each x row, so a
// warp's loads cover whole rows.
template <typename Tin, typename Tout, int CZ>
__global__ void s2d_plain_to_nhwc_kernel(const Tin* __restrict__ x, Tout* __restrict__ z,
                                         S2dShape s) {
  using Bits = typename ZBits<Tout>::type;
  constexpr int kVec = 16 / sizeof(Bits);
  static_assert(CZ % kVec == 0, "whole 16-byte vectors");
  const int q = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (q >= s.wz) return;
  const int rows = static_cast<int>(s.n * s.hz), hz = static_cast<int>(s.hz);
  const int h = static_cast<int>(s.h), w = static_cast<int>(s.w), c_in = static_cast<int>(s.c);
  const int64_t plane = s.h * s.w;
  for (int row = static_cast<int>(blockIdx.y); row < rows; row += static_cast<int>(gridDim.y)) {
    const int n = row / hz, p = row - n * hz;
    union {
      uint4 v[CZ / kVec];
      Bits e[CZ];
    } out;
#pragma unroll
    for (int j = 0; j < CZ / kVec; ++j) out.v[j] = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int blk = 0; blk < kB * kB; ++blk) {
      const int y = kB * p + blk / kB - static_cast<int>(s.pad_top);
      const int xx = kB * q + blk % kB - static_cast<int>(s.pad_left);
      if (y < 0 || y >= h || xx < 0 || xx >= w) continue;
      const Tin* src = x + n * c_in * plane + static_cast<int64_t>(y) * w + xx;
#pragma unroll
      for (int c = 0; c < CZ / (kB * kB); ++c)
        if (c < c_in)
          out.e[blk * (CZ / (kB * kB)) + c] = ZBits<Tout>::from(cuda::load_acc(src[c * plane]));
    }
    uint4* dst = reinterpret_cast<uint4*>(z + (static_cast<int64_t>(row) * s.wz + q) * CZ);
#pragma unroll
    for (int j = 0; j < CZ / kVec; ++j) dst[j] = out.v[j];
  }
}

// NCHW x → NCHW z: one thread per (image, channel c < cp, z row, z column) writes the four z
// channels that c's 2×2 block positions become; every store is coalesced along the z row.
template <typename Tin, typename Tout>
__global__ void s2d_plain_kernel(const Tin* __restrict__ x, Tout* __restrict__ z, S2dShape s) {
  const int q = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (q >= s.wz) return;
  const int cp = static_cast<int>(s.cp), hz = static_cast<int>(s.hz);
  const int rows = static_cast<int>(s.n) * cp * hz;
  const int h = static_cast<int>(s.h), w = static_cast<int>(s.w);
  const int64_t zplane = s.hz * s.wz;
  for (int row = static_cast<int>(blockIdx.y); row < rows; row += static_cast<int>(gridDim.y)) {
    const int p = row % hz, nc = row / hz, c = nc % cp, n = nc / cp;
    const Tin* src = x + (static_cast<int64_t>(n) * s.c + c) * h * w;
    Tout* dst = z + (static_cast<int64_t>(n) * cp * kB * kB + c) * zplane + p * s.wz + q;
#pragma unroll
    for (int blk = 0; blk < kB * kB; ++blk) {
      const int y = kB * p + blk / kB - static_cast<int>(s.pad_top);
      const int xx = kB * q + blk % kB - static_cast<int>(s.pad_left);
      float v = 0.f;
      if (c < s.c && y >= 0 && y < h && xx >= 0 && xx < w)
        v = cuda::load_acc(src[static_cast<int64_t>(y) * w + xx]);
      dst[blk * cp * zplane] = cuda::store_as<Tout>(v);
    }
  }
}

// Any layouts and channel count: one thread per z element.
template <typename Tin, typename Tout>
__global__ void s2d_elem_kernel(const Tin* __restrict__ x, Tout* __restrict__ z, S2dShape s,
                                bool x_nhwc, bool z_nhwc) {
  const int64_t cz = s.cp * kB * kB, total = s.n * cz * s.hz * s.wz;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    int64_t ch, p, q, n;
    if (z_nhwc) {
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
    float v = 0.f;
    if (c < s.c && y >= 0 && y < s.h && xx >= 0 && xx < s.w)
      v = cuda::load_acc(x_nhwc ? x[((n * s.h + y) * s.w + xx) * s.c + c]
                                : x[((n * s.c + c) * s.h + y) * s.w + xx]);
    z[i] = cuda::store_as<Tout>(v);
  }
}

int blocks_for(int64_t items, int threads) {
  return static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>((items + threads - 1) / threads, int64_t{1} << 20)));
}

template <typename Tin, typename Tout>
void launch_typed(const S2dIo& io, const S2dShape& s, const void* xv, void* zv,
                  cudaStream_t stream) {
  constexpr int kThreads = 128;
  const Tin* x = static_cast<const Tin*>(xv);
  Tout* z = static_cast<Tout*>(zv);
  const bool aligned = reinterpret_cast<uintptr_t>(zv) % 16 == 0;
  const int64_t cz = s.cz();
  const int64_t rows = io.z_nhwc ? s.n * s.hz : s.n * s.cp * s.hz;
  // One z row per block row; rows beyond the grid's y limit loop. 32-bit positions.
  const bool fits = rows < INT32_MAX && s.wz < INT32_MAX && s.n * s.c * s.h * s.w < INT32_MAX;
  const dim3 grid(static_cast<unsigned>((s.wz + kThreads - 1) / kThreads),
                  static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
  constexpr bool kSame = std::is_same_v<Tin, Tout>;
  using Moved = std::conditional_t<sizeof(Tin) == 2, uint16_t, float>;  // bits only
  if (kSame && io.x_nhwc && io.z_nhwc && aligned && fits && cz == 16) {
    s2d_nhwc_kernel<Moved, 16><<<grid, kThreads, 0, stream>>>(reinterpret_cast<const Moved*>(x),
                                                              reinterpret_cast<Moved*>(z), s);
  } else if (kSame && io.x_nhwc && io.z_nhwc && aligned && fits && cz == 32) {
    s2d_nhwc_kernel<Moved, 32><<<grid, kThreads, 0, stream>>>(reinterpret_cast<const Moved*>(x),
                                                              reinterpret_cast<Moved*>(z), s);
  } else if (!io.x_nhwc && io.z_nhwc && aligned && fits && cz == 16) {
    s2d_plain_to_nhwc_kernel<Tin, Tout, 16><<<grid, kThreads, 0, stream>>>(x, z, s);
  } else if (!io.x_nhwc && io.z_nhwc && aligned && fits && cz == 32) {
    s2d_plain_to_nhwc_kernel<Tin, Tout, 32><<<grid, kThreads, 0, stream>>>(x, z, s);
  } else if (!io.x_nhwc && !io.z_nhwc && fits) {
    s2d_plain_kernel<Tin, Tout><<<grid, kThreads, 0, stream>>>(x, z, s);
  } else {
    s2d_elem_kernel<Tin, Tout>
        <<<blocks_for(s.z_numel(), kThreads), kThreads, 0, stream>>>(x, z, s, io.x_nhwc, io.z_nhwc);
  }
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

Status launch_space_to_depth(const S2dIo& io, const S2dShape& s, const void* x, void* z,
                             cudaStream_t stream) {
  if (s.c <= 0 || s.cp < s.c || s.hz <= 0 || s.wz <= 0)
    return invalid_argument("space_to_depth: " + std::to_string(s.c) + " channels into " +
                            std::to_string(s.cp) + ", z " + std::to_string(s.hz) + "x" +
                            std::to_string(s.wz));
  if (!is_device_float(io.x_dtype) || !is_device_float(io.z_dtype))
    return unsupported(std::string("space_to_depth from ") + dtype_name(io.x_dtype) + " to " +
                       dtype_name(io.z_dtype));
  if (s.z_numel() == 0) return Status::ok();
  return cuda::dispatch_float(io.x_dtype, "space_to_depth", [&](auto tx) -> Status {
    return cuda::dispatch_float(io.z_dtype, "space_to_depth", [&](auto tz) -> Status {
      launch_typed<decltype(tx), decltype(tz)>(io, s, x, z, stream);
      KILN_CUDA_LAUNCHED("space_to_depth");
      return Status::ok();
    });
  });
}

}  // namespace kiln
