// oneDNN backends for kernel tests. An Engine owns its backend; a test that makes kernels
// without an Engine takes one of these, one per (threads, conv algorithm, layout) for the test
// process, so kernels made apart (two kernels of one node) share one backend's caches as the
// kernels of an Engine do.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "backends/backend_test_util.h"
#include "backends/cpu/dnnl_backend.h"
#include "backends/cpu/dnnl_common.h"

namespace kiln::test {

inline const KernelSource& onednn_backend(int threads, CpuConvAlgo algo = CpuConvAlgo::kDirect,
                                          CpuLayout layout = CpuLayout::kAuto) {
  static std::mutex mu;
  static std::map<std::tuple<int, CpuConvAlgo, CpuLayout>, std::unique_ptr<KernelSource>> backends;
  std::lock_guard<std::mutex> lock(mu);
  auto& b = backends[{threads, algo, layout}];
  if (!b) {
    OnednnOptions o;
    o.threads = threads;
    o.conv_algo = algo;
    o.layout = layout;
    b = std::make_unique<KernelSource>("onednn", make_onednn_state(o));
  }
  return *b;
}

// The layout decision and conv choices of onednn_backend(threads, algo, layout).
inline const dnnl_cpu::DnnlShared& onednn_shared(int threads,
                                                 CpuConvAlgo algo = CpuConvAlgo::kDirect,
                                                 CpuLayout layout = CpuLayout::kAuto) {
  return *dnnl_cpu::shared_of(onednn_backend(threads, algo, layout).state());
}

}  // namespace kiln::test
