// Launch functions of kiln's own CUDA kernels that other parts of the backend call
// directly (the plan's conversions, the cuDNN conv's unfused epilogue). Each is defined in
// the kernels/<op>.cu file named beside it. All launch on `stream` and return the launch
// error; none synchronizes.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/cuda_kernel.h"
#include "ir/epilogue.h"

namespace kiln {

// kernels/convert.cu: copies `src` into `dst` (same logical shape), converting the dtype
// (float32 <-> float16, or equal) and the layout (kPlain <-> kNHWC, or equal).
Status launch_convert(const TensorRef& src, TensorRef& dst, cudaStream_t stream);

// kernels/epilogue.cu: in place on `data` (logical [N,C,...] in `layout`, dtype float32 or
// float16): data = act(data + bias[c] + residual), where bias (float32, C values, on the
// device) and residual (same desc as data) may be nullptr. The scalar definition is
// ir/epilogue.h's apply_activation.
Status launch_epilogue(const TensorDesc& desc, void* data, const float* bias, const void* residual,
                       Activation act, float alpha, float beta, cudaStream_t stream);

// kernels/top_k.cu: the k best elements of each of the outer·inner rows of x (n elements along
// a stride of inner) as TopK ranks them (src/ops/top_k.cc), best first, into values and/or
// indices (either may be nullptr), each row's k along the same stride. Any arithmetic dtype;
// top_k_supports says which dtypes and extents it takes.
bool top_k_supports(DataType dtype, int64_t n);
Status launch_top_k(DataType dtype, const void* x, void* values, int64_t* indices, int64_t outer,
                    int64_t inner, int64_t n, int64_t k, bool largest, cudaStream_t stream);

}  // namespace kiln
