// CUDA errors as Status codes (src/backends/cuda/cuda_common.cc): the errors after which CUDA
// documents the GPU as unusable for the process are kUnavailable (a Pipeline retires that GPU's
// Contexts on them); running out of memory is kResourceExhausted; the rest kInternal. No GPU
// is needed: only the error names are looked up.
#if defined(KILN_HAVE_CUDA)

#include <gtest/gtest.h>

#include "backends/cuda/cuda_common.h"

namespace kiln {
namespace {

TEST(CudaStatus, AFaultedGpuIsUnavailableAndOtherErrorsAreNot) {
  for (cudaError_t e : {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorECCUncorrectable,
                        cudaErrorMisalignedAddress, cudaErrorHardwareStackError,
                        cudaErrorLaunchTimeout, cudaErrorContained}) {
    const Status s = cuda_status(e, "cudaStreamSynchronize(stream)");
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.to_string();
    EXPECT_NE(s.message().find(cudaGetErrorName(e)), std::string::npos) << s.to_string();
    EXPECT_EQ(s.to_string().rfind("unavailable: ", 0), 0u) << s.to_string();
    EXPECT_NE(s.message().find("the device failed"), std::string::npos) << s.to_string();
  }
  EXPECT_EQ(cuda_status(cudaErrorMemoryAllocation, "cudaMalloc").code(),
            StatusCode::kResourceExhausted);
  for (cudaError_t e : {cudaErrorInvalidValue, cudaErrorInvalidDevice, cudaErrorNotReady})
    EXPECT_EQ(cuda_status(e, "call").code(), StatusCode::kInternal) << cudaGetErrorName(e);
  EXPECT_TRUE(cuda_status(cudaSuccess, "call").is_ok());
}

}  // namespace
}  // namespace kiln

#endif  // KILN_HAVE_CUDA
