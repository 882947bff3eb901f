// A strided 2-D byte copy: `rows` rows of `chunk` bytes from `src` (row pitch `src_pitch`)
// to `dst` (row pitch `dst_pitch`). Concat (contiguous source rows into a wider output) and
// Split (the reverse) are this copy once per input / output. It moves 16, 8, 4, 2 or 1
// bytes per thread and step: the widest unit dividing every size, pitch and pointer.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/structured.cuh"

namespace kiln::cuda {

template <class U>
__global__ void copy_rows_kernel(const U* __restrict__ src, U* __restrict__ dst, int64_t rows,
                                 int64_t row_units, int64_t src_pitch, int64_t dst_pitch) {
  const int64_t total = rows * row_units;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / row_units, k = i % row_units;
    dst[r * dst_pitch + k] = src[r * src_pitch + k];
  }
}

template <class U>
Status launch_copy_rows_as(const void* src, void* dst, int64_t rows, int64_t chunk,
                           int64_t src_pitch, int64_t dst_pitch, cudaStream_t s) {
  constexpr int kThreads = 256;
  constexpr int64_t kU = sizeof(U);
  copy_rows_kernel<U><<<grid_blocks(rows * (chunk / kU), kThreads), kThreads, 0, s>>>(
      static_cast<const U*>(src), static_cast<U*>(dst), rows, chunk / kU, src_pitch / kU,
      dst_pitch / kU);
  KILN_CUDA_LAUNCHED("copy_rows_kernel");
  return Status::ok();
}

inline Status copy_rows(const void* src, void* dst, int64_t rows, int64_t chunk, int64_t src_pitch,
                        int64_t dst_pitch, cudaStream_t s) {
  if (rows <= 0 || chunk <= 0) return Status::ok();
  const uint64_t bits = static_cast<uint64_t>(chunk) | static_cast<uint64_t>(src_pitch) |
                        static_cast<uint64_t>(dst_pitch) | reinterpret_cast<uintptr_t>(src) |
                        reinterpret_cast<uintptr_t>(dst);
  if (bits % 16 == 0)
    return launch_copy_rows_as<uint4>(src, dst, rows, chunk, src_pitch, dst_pitch, s);
  if (bits % 8 == 0)
    return launch_copy_rows_as<uint2>(src, dst, rows, chunk, src_pitch, dst_pitch, s);
  if (bits % 4 == 0)
    return launch_copy_rows_as<uint32_t>(src, dst, rows, chunk, src_pitch, dst_pitch, s);
  if (bits % 2 == 0)
    return launch_copy_rows_as<uint16_t>(src, dst, rows, chunk, src_pitch, dst_pitch, s);
  return launch_copy_rows_as<uint8_t>(src, dst, rows, chunk, src_pitch, dst_pitch, s);
}

}  // namespace kiln::cuda
