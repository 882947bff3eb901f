// The oneDNN CPU backend (dnnl_*.cc), fp32 (convolutions also in bf16 where the CPU has it):
// Conv, Gemm and MatMul by a constant matrix with
// their epilogues as post-ops, LayerNormalization, the pools, the binary and unary element-wise
// ops, Softmax, Concat, Resize, Transpose and Slice (reorders), ReduceMean/Sum/L2; for a node
// it claims but cannot run with some shapes, its kernel declines at prepare and the planner
// takes the reference kernel. Declared apart from
// dnnl_common.h so the runtime need not see oneDNN's headers.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "backends/backend.h"
#include "kiln/options.h"
#include "kiln/status.h"

namespace kiln {

// What a oneDNN backend's kernels are built with (EngineOptions' CPU fields).
struct OnednnOptions {
  int threads = 0;  // OpenMP threads per kernel; 0: all cores
  CpuConvAlgo conv_algo = CpuConvAlgo::kDirect;
  CpuLayout layout = CpuLayout::kAuto;
  // The engine's precision and per-node overrides (fp32 or bf16; see cpu_precision_status).
  Precision precision = Precision::kFp32;
  std::map<std::string, Precision> precision_overrides;
};

// Whether the CPU engine can compute in `p`: fp32 always; bf16 where oneDNN runs bfloat16
// convolutions natively (AVX-512 BF16 or AMX); anything else is refused, with the reason.
Status cpu_precision_status(Precision p);

// The oneDNN state of one engine: its caches (the layout decision's plans, the convs' timed
// choices, the reorders' times), shared by the kernels made with it (KernelParams::state), so
// they agree on the layout of every value. An Engine makes one from its options (registered
// with KernelRegistry::add_state); it must outlive its kernels. Thread-safe.
std::unique_ptr<BackendState> make_onednn_state(const OnednnOptions& options);

}  // namespace kiln
