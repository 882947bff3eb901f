#include "backends/cuda/cuda_common.h"

namespace kiln {

namespace {

// The errors after which CUDA documents the process's context on that GPU as unusable ("any
// further CUDA work will return the same error"), and the GPU's own hardware failures.
bool device_failed(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorContained:
    case cudaErrorExternalDevice:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorDevicesUnavailable: return true;
    default: return false;
  }
}

}  // namespace

Status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  StatusCode code = e == cudaErrorMemoryAllocation ? StatusCode::kResourceExhausted
                    : device_failed(e)             ? StatusCode::kUnavailable
                                                   : StatusCode::kInternal;
  return Status(code, std::string(what) + ": CUDA error " + cudaGetErrorName(e) + " (" +
                          cudaGetErrorString(e) + ")" +
                          (code == StatusCode::kUnavailable ? ": the device failed" : ""));
}

Status cudnn_status(cudnnStatus_t e, const char* what) {
  if (e == CUDNN_STATUS_SUCCESS) return Status::ok();
  StatusCode code = e == CUDNN_STATUS_NOT_SUPPORTED  ? StatusCode::kUnsupported
                    : e == CUDNN_STATUS_ALLOC_FAILED ? StatusCode::kResourceExhausted
                                                     : StatusCode::kInternal;
  return Status(code, std::string(what) + ": cuDNN error " + cudnnGetErrorString(e));
}

// cuBLASLt has no status-to-string call of its own (cublasGetStatusName lives in libcublas,
// which kiln does not otherwise need).
static const char* cublas_status_name(cublasStatus_t e) {
  switch (e) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "CUBLAS_STATUS_UNKNOWN";
  }
}

Status cublas_status(cublasStatus_t e, const char* what) {
  if (e == CUBLAS_STATUS_SUCCESS) return Status::ok();
  StatusCode code = e == CUBLAS_STATUS_NOT_SUPPORTED  ? StatusCode::kUnsupported
                    : e == CUBLAS_STATUS_ALLOC_FAILED ? StatusCode::kResourceExhausted
                                                      : StatusCode::kInternal;
  return Status(code, std::string(what) + ": cuBLAS error " + cublas_status_name(e) + " (" +
                          std::to_string(static_cast<int>(e)) + ")");
}

Status last_launch_status(const char* what) {
  return cuda_status(cudaGetLastError(), (std::string("launching ") + what).c_str());
}

}  // namespace kiln
