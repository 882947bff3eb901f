// Zero-padding of the channel dimension of an NHWC tensor, so that cuDNN's tensor-core
// kernels (which want C a multiple of 8) apply to convs with few input channels (the RGB
// stem). The filter is padded with zeros at prepare; the input at enqueue, into the
// workspace.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

// dst[row, j] = j < c ? src[row, j] : 0 for `rows` rows (N·H·W) of c / c_pad channels;
// dtype float32 or float16. Launches on `stream`.
Status launch_pad_channels(DataType dtype, const void* src, void* dst, int64_t rows, int64_t c,
                           int64_t c_pad, cudaStream_t stream);

}  // namespace kiln
