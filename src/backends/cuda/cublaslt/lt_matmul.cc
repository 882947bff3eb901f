#include "backends/cuda/cublaslt/lt_matmul.h"

#include <cstdio>
#include <cstring>
#include <sstream>
#include <vector>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/tactic_timing.h"

namespace kiln {
namespace {

constexpr int kCandidates = 8;
// The activation arena's alignment is not part of the contract: ask only for what
// vectorized kernels need.
constexpr uint32_t kMinAlignment = 16;

std::string to_hex(const void* p, size_t n) {
  std::string s;
  char buf[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof(buf), "%02x", static_cast<const uint8_t*>(p)[i]);
    s += buf;
  }
  return s;
}

bool from_hex(const std::string& s, void* p, size_t n) {
  if (s.size() != 2 * n) return false;
  for (size_t i = 0; i < n; ++i) {
    unsigned v = 0;
    if (std::sscanf(s.c_str() + 2 * i, "%2x", &v) != 1) return false;
    static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v);
  }
  return true;
}

Status make_layout(cublasLtMatrixLayout_t* l, cudaDataType_t t, int64_t rows, int64_t cols,
                   int64_t ld, int64_t batch, int64_t stride) {
  KILN_CUBLAS(cublasLtMatrixLayoutCreate(l, t, rows, cols, ld));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    KILN_CUBLAS(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                 sizeof(count)));
    KILN_CUBLAS(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                 &stride, sizeof(stride)));
  }
  return Status::ok();
}

// Elements a strided batch of `rows`×`cols` matrices spans.
int64_t span(int64_t rows, int64_t cols, int64_t batch, int64_t stride) {
  return stride == 0 ? rows * cols : (batch - 1) * stride + rows * cols;
}

}  // namespace

LtMatmul::~LtMatmul() {
  for (cublasLtMatrixLayout_t l : {a_, b_, c_, d_})
    if (l) cublasLtMatrixLayoutDestroy(l);
  if (op_) cublasLtMatmulDescDestroy(op_);
}

Status LtMatmul::init(const LtProblem& p, const void* b_const, CudaBuildContext& ctx) {
  p_ = p;
  const bool narrow = p.dtype != DataType::kFloat32;
  const cudaDataType_t t = p.dtype == DataType::kFloat16    ? CUDA_R_16F
                           : p.dtype == DataType::kBFloat16 ? CUDA_R_16BF
                                                            : CUDA_R_32F;
  const cublasComputeType_t compute =
      !narrow && ctx.allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  KILN_CUBLAS(cublasLtMatmulDescCreate(&op_, compute, CUDA_R_32F));
  // cuBLASLt's first operand is B (see lt_matmul.h), its second A.
  const cublasOperation_t op_first = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  KILN_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &op_first,
                                             sizeof(op_first)));
  KILN_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &op_second,
                                             sizeof(op_second)));
  cublasLtEpilogue_t epi = p.bias ? (p.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                  : (p.relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
  KILN_CUBLAS(
      cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
  if (p.bias)
    KILN_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias,
                                               sizeof(p.bias)));
  // B stored [K, N] is column-major N×K; stored [N, K] (trans_b) it is K×N. Likewise A.
  KILN_RETURN_IF_ERROR(make_layout(&b_, t, p.trans_b ? p.k : p.n, p.trans_b ? p.n : p.k,
                                   p.trans_b ? p.k : p.n, p.batch, p.stride_b));
  KILN_RETURN_IF_ERROR(make_layout(&a_, t, p.trans_a ? p.m : p.k, p.trans_a ? p.k : p.m,
                                   p.trans_a ? p.m : p.k, p.batch, p.stride_a));
  KILN_RETURN_IF_ERROR(make_layout(&c_, t, p.n, p.m, p.n, p.batch, p.stride_c));
  KILN_RETURN_IF_ERROR(make_layout(&d_, t, p.n, p.m, p.n, p.batch, p.stride_d));

  std::ostringstream key;
  key << "lt|" << precision_name(ctx.precision) << "|" << dtype_name(p.dtype) << "|m" << p.m << "n"
      << p.n << "k" << p.k << "|t" << p.trans_a << p.trans_b << "|b" << p.batch << "," << p.stride_a
      << "," << p.stride_b << "," << p.stride_c << "," << p.stride_d << "|"
      << (p.bias ? "bias" : "") << (p.relu ? "relu" : "") << (p.c_present ? "c" : "") << "|ws"
      << (ctx.workspace_limit >> 20);
  return choose(b_const, ctx, key.str());
}

Status LtMatmul::run(cublasLtHandle_t h, const void* a, const void* b, const void* c, void* d,
                     void* ws, size_t ws_bytes, cudaStream_t stream) const {
  const float beta = p_.c_present ? p_.beta : 0.f;
  KILN_CUBLAS(cublasLtMatmul(h, op_, &p_.alpha, b, b_, a, a_, &beta, p_.c_present ? c : d, c_, d,
                             d_, &algo_, ws, ws_bytes, stream));
  return Status::ok();
}

Status LtMatmul::choose(const void* b_const, CudaBuildContext& ctx, const std::string& key) {
  std::string cached;
  if (ctx.time_tactics && ctx.tactics->get(key, &cached)) {
    std::istringstream is(cached);
    std::string hex;
    float ms = 0;
    cublasLtMatmulHeuristicResult_t check{};
    if (is >> hex >> ms && from_hex(hex, &algo_, sizeof(algo_)) &&
        cublasLtMatmulAlgoCheck(ctx.cublaslt, op_, b_, a_, c_, d_, &algo_, &check) ==
            CUBLAS_STATUS_SUCCESS &&
        check.workspaceSize <= ctx.workspace_limit) {
      ws_ = check.workspaceSize;
      std::ostringstream s;
      s << "cublasLt (" << ms << " ms, cached)";
      tactic_ = s.str();
      return Status::ok();
    }
  }
  cublasLtMatmulPreference_t pref = nullptr;
  KILN_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, decltype(&cublasLtMatmulPreferenceDestroy)>
      pref_guard(pref, cublasLtMatmulPreferenceDestroy);
  const size_t limit = ctx.workspace_limit;
  KILN_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &limit, sizeof(limit)));
  for (auto attr :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    KILN_CUBLAS(
        cublasLtMatmulPreferenceSetAttribute(pref, attr, &kMinAlignment, sizeof(kMinAlignment)));
  std::vector<cublasLtMatmulHeuristicResult_t> found(kCandidates);
  int count = 0;
  KILN_CUBLAS(cublasLtMatmulAlgoGetHeuristic(ctx.cublaslt, op_, b_, a_, c_, d_, pref, kCandidates,
                                             found.data(), &count));
  found.resize(ctx.time_tactics ? ctx.tactic_count(static_cast<size_t>(count))
                                : static_cast<size_t>(count));
  if (found.empty()) return unsupported("cuBLASLt offers no algorithm for this matmul");
  if (!ctx.time_tactics) {
    algo_ = found[0].algo;
    ws_ = found[0].workspaceSize;
    tactic_ = "cublasLt (heuristic)";
    return Status::ok();
  }

  const LtProblem& p = p_;
  ScratchBuffer sa, sb, sc, sd, sws;
  KILN_RETURN_IF_ERROR(sa.alloc_random(p.dtype, span(p.m, p.k, p.batch, p.stride_a), 11));
  if (!b_const)
    KILN_RETURN_IF_ERROR(sb.alloc_random(p.dtype, span(p.k, p.n, p.batch, p.stride_b), 12));
  if (p.c_present)
    KILN_RETURN_IF_ERROR(sc.alloc_random(p.dtype, span(p.m, p.n, p.batch, p.stride_c), 13));
  KILN_RETURN_IF_ERROR(sd.alloc_random(p.dtype, span(p.m, p.n, p.batch, p.stride_d), 14));
  size_t max_ws = 0;
  for (const auto& r : found) max_ws = std::max(max_ws, r.workspaceSize);
  KILN_RETURN_IF_ERROR(sws.alloc(max_ws));
  const void* b = b_const ? b_const : sb.get();
  int best = -1;
  float best_ms = 0;
  for (size_t i = 0; i < found.size(); ++i) {
    algo_ = found[i].algo;
    auto launch = [&] {
      return run(ctx.cublaslt, sa.get(), b, sc.get(), sd.get(), sws.get(), found[i].workspaceSize,
                 ctx.stream);
    };
    Result<float> ms = time_launches(ctx.stream, launch);
    if (!ms.is_ok()) {
      cudaGetLastError();  // a failed candidate's error is not this kernel's
      continue;
    }
    if (best < 0 || *ms < best_ms) {
      best = static_cast<int>(i);
      best_ms = *ms;
    }
  }
  if (best < 0) return unsupported("no cuBLASLt algorithm ran for this matmul");
  algo_ = found[best].algo;
  ws_ = found[best].workspaceSize;
  ctx.tactics->put(key, to_hex(&algo_, sizeof(algo_)) + " " + std::to_string(best_ms));
  std::ostringstream s;
  s << "cublasLt #" << best << " of " << found.size() << " (" << best_ms << " ms)";
  tactic_ = s.str();
  return Status::ok();
}

}  // namespace kiln
