#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cudnn/pad_channels.h"

namespace kiln {
namespace {

// One thread per output element; the element type only moves bits (uint16_t / float).
template <typename T>
__global__ void pad_channels_kernel(const T* __restrict__ src, T* __restrict__ dst, int64_t rows,
                                    int64_t c, int64_t c_pad) {
  const int64_t total = rows * c_pad;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const int64_t row = i / c_pad, j = i - row * c_pad;
    dst[i] = j < c ? src[row * c + j] : T(0);
  }
}

// The common case (fp16 padded to 8 channels = 16 bytes a row): one thread per row, one
// 16-byte store.
__global__ void pad_rows_16b_kernel(const uint16_t* __restrict__ src, uint4* __restrict__ dst,
                                    int64_t rows, int c) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; row < rows;
       row += step) {
    union {
      uint4 v;
      uint16_t h[8];
    } out;
    out.v = make_uint4(0, 0, 0, 0);
    const uint16_t* in = src + row * c;
    for (int j = 0; j < c; ++j) out.h[j] = in[j];
    dst[row] = out.v;
  }
}

}  // namespace

Status launch_pad_channels(DataType dtype, const void* src, void* dst, int64_t rows, int64_t c,
                           int64_t c_pad, cudaStream_t stream) {
  if (c <= 0 || c_pad < c || rows < 0)
    return invalid_argument("pad_channels: c " + std::to_string(c) + " to " +
                            std::to_string(c_pad));
  const int64_t total = rows * c_pad;
  if (total == 0) return Status::ok();
  constexpr int kThreads = 256;
  const int blocks = static_cast<int>(std::min<int64_t>((total + kThreads - 1) / kThreads, 65535));
  // float16 and bfloat16 pad alike: 2-byte elements, zero is all zero bits.
  const bool narrow = dtype == DataType::kFloat16 || dtype == DataType::kBFloat16;
  if (narrow && c_pad == 8 && reinterpret_cast<uintptr_t>(dst) % 16 == 0) {
    const int row_blocks =
        static_cast<int>(std::min<int64_t>((rows + kThreads - 1) / kThreads, 65535));
    pad_rows_16b_kernel<<<row_blocks, kThreads, 0, stream>>>(
        static_cast<const uint16_t*>(src), static_cast<uint4*>(dst), rows, static_cast<int>(c));
  } else if (narrow) {
    pad_channels_kernel<uint16_t><<<blocks, kThreads, 0, stream>>>(
        static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), rows, c, c_pad);
  } else if (dtype == DataType::kFloat32) {
    pad_channels_kernel<float><<<blocks, kThreads, 0, stream>>>(
        static_cast<const float*>(src), static_cast<float*>(dst), rows, c, c_pad);
  } else {
    return invalid_argument(std::string("pad_channels on ") + dtype_name(dtype));
  }
  KILN_CUDA_LAUNCHED("pad_channels_kernel");
  return Status::ok();
}

}  // namespace kiln
