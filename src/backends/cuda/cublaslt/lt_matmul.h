// One cuBLASLt matmul described in row-major terms, shared by the Gemm and MatMul kernels:
//
//   D[b] = epi(alpha · op(A[b]) · op(B[b]) + beta · C[b])     b < batch
//
// op(A) is [M, K] (A stored [K, M] when trans_a), op(B) is [K, N] (B stored [N, K] when
// trans_b); C and D are [M, N]; epi adds bias[N] and/or applies ReLU (cuBLASLt's epilogues).
// cuBLASLt is column-major, so the call computes Dᵀ = op(B)ᵀ · op(A)ᵀ: B is its first
// operand and A its second, and a bias over D's columns is a bias over Dᵀ's rows, which is
// what CUBLASLT_EPILOGUE_BIAS adds.
//
// prepare-time: init() builds the descriptors and picks the algorithm (timed on scratch
// buffers when ctx.time_tactics, cached in ctx.tactics); run() only enqueues.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <string>

#include "backends/cuda/cuda_kernel.h"

namespace kiln {

struct LtProblem {
  DataType dtype = DataType::kFloat32;  // A, B, C, D (float32 or float16)
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t batch = 1;
  // Elements between consecutive batch matrices; 0 broadcasts one matrix to every batch.
  int64_t stride_a = 0, stride_b = 0, stride_c = 0, stride_d = 0;
  float alpha = 1.f, beta = 0.f;
  const void* bias = nullptr;  // N values of `dtype` on the device, or nullptr
  bool relu = false;
  bool c_present = false;  // false: beta must be 0 and C is never read
};

class LtMatmul {
 public:
  LtMatmul() = default;
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;
  ~LtMatmul();

  // `b_const`, when not null, is the device B every run uses (timing runs on it too).
  Status init(const LtProblem& p, const void* b_const, CudaBuildContext& ctx);
  Status run(cublasLtHandle_t h, const void* a, const void* b, const void* c, void* d, void* ws,
             size_t ws_bytes, cudaStream_t stream) const;
  size_t workspace_bytes() const { return ws_; }
  const std::string& tactic() const { return tactic_; }

 private:
  Status choose(const void* b_const, CudaBuildContext& ctx, const std::string& key);

  LtProblem p_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  size_t ws_ = 0;
  std::string tactic_;
};

}  // namespace kiln
