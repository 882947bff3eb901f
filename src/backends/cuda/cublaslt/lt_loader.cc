// cuBLASLt opened with dlopen the first time kiln calls it, instead of linked.
//
// Linked, libcublasLt's load-time initialization runs in every kiln process, CPU-only ones
// included: an empty program linked to it takes 0.5 s to start and holds 210 MB resident
// (CUDA 13.0's libcublasLt, measured on the build machine). The definitions below are the
// cuBLASLt entry points kiln calls; each forwards to the library's own, looked up once.
// Their types are taken from cublasLt.h (decltype of its declarations), so a mismatch with the
// header does not compile. A function not found returns CUBLAS_STATUS_NOT_INITIALIZED;
// load_cublaslt() says why in words.
#include "backends/cuda/cublaslt/lt_loader.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <string>

namespace kiln {
namespace {

struct Library {
  void* handle = nullptr;
  std::string name, error;
};

const Library& library() {
  static const Library lib = [] {
    Library l;
    l.name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    l.handle = dlopen(l.name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!l.handle) {
      const char* e = dlerror();
      l.error = e ? e : "unknown error";
    }
    return l;
  }();
  return lib;
}

template <class Fn>
Fn* lookup(const char* name) {
  const Library& l = library();
  return l.handle ? reinterpret_cast<Fn*>(dlsym(l.handle, name)) : nullptr;
}

}  // namespace

Status load_cublaslt() {
  const Library& l = library();
  if (l.handle) return Status::ok();
  return unsupported("cannot load " + l.name + " (cuBLASLt, needed for --device cuda): " + l.error);
}

}  // namespace kiln

#define KILN_LT_FORWARD(name, params, args)                                    \
  extern "C" cublasStatus_t CUBLASWINAPI name params {                         \
    static decltype(::name)* const fn = kiln::lookup<decltype(::name)>(#name); \
    return fn ? fn args : CUBLAS_STATUS_NOT_INITIALIZED;                       \
  }

KILN_LT_FORWARD(cublasLtCreate, (cublasLtHandle_t * handle), (handle))
KILN_LT_FORWARD(cublasLtDestroy, (cublasLtHandle_t handle), (handle))
KILN_LT_FORWARD(cublasLtMatmul,
                (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void* alpha,
                 const void* A, cublasLtMatrixLayout_t Adesc, const void* B,
                 cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                 cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                 const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceSizeInBytes,
                 cudaStream_t stream),
                (lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc,
                 algo, workspace, workspaceSizeInBytes, stream))
KILN_LT_FORWARD(cublasLtMatmulAlgoCheck,
                (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
                 cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                 cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                 const cublasLtMatmulAlgo_t* algo, cublasLtMatmulHeuristicResult_t* result),
                (lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, algo, result))
KILN_LT_FORWARD(cublasLtMatmulAlgoGetHeuristic,
                (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
                 cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                 cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                 cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                 cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount),
                (lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, preference,
                 requestedAlgoCount, heuristicResultsArray, returnAlgoCount))
KILN_LT_FORWARD(cublasLtMatmulDescCreate,
                (cublasLtMatmulDesc_t * matmulDesc, cublasComputeType_t computeType,
                 cudaDataType_t scaleType),
                (matmulDesc, computeType, scaleType))
KILN_LT_FORWARD(cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t matmulDesc), (matmulDesc))
KILN_LT_FORWARD(cublasLtMatmulDescSetAttribute,
                (cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                 const void* buf, size_t sizeInBytes),
                (matmulDesc, attr, buf, sizeInBytes))
KILN_LT_FORWARD(cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * pref), (pref))
KILN_LT_FORWARD(cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
KILN_LT_FORWARD(cublasLtMatmulPreferenceSetAttribute,
                (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                 const void* buf, size_t sizeInBytes),
                (pref, attr, buf, sizeInBytes))
KILN_LT_FORWARD(cublasLtMatrixLayoutCreate,
                (cublasLtMatrixLayout_t * matLayout, cudaDataType type, uint64_t rows,
                 uint64_t cols, int64_t ld),
                (matLayout, type, rows, cols, ld))
KILN_LT_FORWARD(cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t matLayout), (matLayout))
KILN_LT_FORWARD(cublasLtMatrixLayoutSetAttribute,
                (cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr,
                 const void* buf, size_t sizeInBytes),
                (matLayout, attr, buf, sizeInBytes))
