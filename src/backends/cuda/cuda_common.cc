#include "backends/cuda/cuda_common.h"

namespace kiln {

Status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  StatusCode code = e == cudaErrorMemoryAllocation ? StatusCode::kResourceExhausted
                                                   : StatusCode::kInternal;
  return Status(code, std::string(what) + ": CUDA error " + cudaGetErrorName(e) + " (" +
                          cudaGetErrorString(e) + ")");
}

Status cudnn_status(cudnnStatus_t e, const char* what) {
  if (e == CUDNN_STATUS_SUCCESS) return Status::ok();
  StatusCode code = e == CUDNN_STATUS_NOT_SUPPORTED ? StatusCode::kUnsupported
                    : e == CUDNN_STATUS_ALLOC_FAILED ? StatusCode::kResourceExhausted
                                                     : StatusCode::kInternal;
  return Status(code, std::string(what) + ": cuDNN error " + cudnnGetErrorString(e));
}

Status cublas_status(cublasStatus_t e, const char* what) {
  if (e == CUBLAS_STATUS_SUCCESS) return Status::ok();
  StatusCode code = e == CUBLAS_STATUS_NOT_SUPPORTED ? StatusCode::kUnsupported
                    : e == CUBLAS_STATUS_ALLOC_FAILED ? StatusCode::kResourceExhausted
                                                      : StatusCode::kInternal;
  return Status(code, std::string(what) + ": cuBLAS error " + cublasGetStatusName(e) + " (" +
                          cublasGetStatusString(e) + ")");
}

Status last_launch_status(const char* what) {
  return cuda_status(cudaGetLastError(), (std::string("launching ") + what).c_str());
}

}  // namespace kiln
