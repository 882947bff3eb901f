// Error handling shared by the CUDA backend: every CUDA, cuDNN and cuBLASLt call returns a
// Status with the call's text and the library's error string, never aborts.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string>

#include "kiln/status.h"

namespace kiln {

Status cuda_status(cudaError_t e, const char* what);
Status cudnn_status(cudnnStatus_t e, const char* what);
Status cublas_status(cublasStatus_t e, const char* what);

// The error of the last kernel launch (cudaGetLastError), as a Status naming `what`.
Status last_launch_status(const char* what);

}  // namespace kiln

#define KILN_CUDA(expr) KILN_RETURN_IF_ERROR(::kiln::cuda_status((expr), #expr))
#define KILN_CUDNN(expr) KILN_RETURN_IF_ERROR(::kiln::cudnn_status((expr), #expr))
#define KILN_CUBLAS(expr) KILN_RETURN_IF_ERROR(::kiln::cublas_status((expr), #expr))
// After a <<<...>>> launch: returns the launch error, if any, naming the kernel.
#define KILN_CUDA_LAUNCHED(name) KILN_RETURN_IF_ERROR(::kiln::last_launch_status(name))
