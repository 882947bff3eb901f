// The oneDNN CPU backend (dnnl_*.cc), fp32: Conv, Gemm and MatMul by a constant matrix with
// their epilogues as post-ops, LayerNormalization, the pools, the binary and unary element-wise
// ops, Softmax, Concat, Resize, Transpose and Slice (reorders), ReduceMean/Sum/L2; a node it
// claims but cannot run for some shapes runs on the reference kernel. Declared apart from
// dnnl_common.h so the runtime need not see oneDNN's headers.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "kiln/options.h"

namespace kiln {

// What a oneDNN backend's kernels are built with (EngineOptions' CPU fields).
struct OnednnOptions {
  int threads = 0;  // OpenMP threads per kernel; 0: all cores
  CpuConvAlgo conv_algo = CpuConvAlgo::kDirect;
  CpuLayout layout = CpuLayout::kAuto;
};

// A oneDNN backend with its own caches (the layout decision's plans, the convs' timed
// choices, the reorders' times), shared by the kernels it creates, so they agree on the
// layout of every value. An Engine owns one; it must outlive its kernels. Thread-safe.
std::unique_ptr<Backend> make_onednn_backend(const OnednnOptions& options);

}  // namespace kiln
