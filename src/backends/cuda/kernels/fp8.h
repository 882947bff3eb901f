// float8 e4m3 codes on the device (kernels/quantize_linear.cu): the launches other kernels
// reuse.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

// y[i] = e4m3(codes[i]) · scale, stored as `y_dtype` (float32, float16 or bfloat16).
Status launch_dequantize_fp8(const uint8_t* codes, void* y, DataType y_dtype, int64_t n,
                             float scale, cudaStream_t stream);

}  // namespace kiln
