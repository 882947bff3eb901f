// The oneDNN CPU backend (dnnl_*.cc): fp32 Conv with its epilogue as post-ops, 2-D
// MaxPool/AveragePool. Declared apart from dnnl_common.h so the runtime need not see
// oneDNN's headers.
#pragma once

#include "backends/backend.h"

namespace kiln {

// The oneDNN backend whose kernels run on `threads` OpenMP threads (0: all cores). One
// instance per thread count, alive for the whole process.
const Backend& onednn_backend(int threads);

}  // namespace kiln
