// Helpers for timing library candidates at prepare() on buffers of the real shapes: a
// scratch device buffer filled with random-ish values (zeros would let some kernels take
// shortcuts and time unrealistically), and a CUDA-event timer. prepare() only: both
// allocate or synchronize.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "backends/cuda/cuda_common.h"
#include "core/half.h"
#include "kiln/tensor.h"

namespace kiln {

// A device buffer freed on scope exit.
class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { cudaFree(p_); }

  Status alloc(size_t bytes) {
    cudaFree(p_);
    p_ = nullptr;
    KILN_CUDA(cudaMalloc(&p_, std::max<size_t>(bytes, 1)));
    return Status::ok();
  }
  // Allocates `count` elements of `dtype` (a device float) holding values in [-1, 1).
  Status alloc_random(DataType dtype, int64_t count, uint32_t seed) {
    const size_t esize = dtype_size(dtype);
    KILN_RETURN_IF_ERROR(alloc(static_cast<size_t>(count) * esize));
    // One host chunk repeated over the buffer: enough variety for timing, cheap for the
    // 100M-element tensors of large batches.
    const int64_t chunk = std::min<int64_t>(count, int64_t{1} << 20);
    std::vector<uint8_t> host(static_cast<size_t>(chunk) * esize);
    uint32_t s = seed * 2654435761u + 12345u;
    for (int64_t i = 0; i < chunk; ++i) {
      s = s * 1664525u + 1013904223u;
      float v = static_cast<float>(s >> 8) / static_cast<float>(1u << 24) * 2.f - 1.f;
      store_floats(&v, 1, dtype, &host[i * esize]);
    }
    for (int64_t off = 0; off < count; off += chunk) {
      const int64_t n = std::min(chunk, count - off);
      KILN_CUDA(cudaMemcpy(static_cast<uint8_t*>(p_) + off * esize, host.data(), n * esize,
                           cudaMemcpyHostToDevice));
    }
    // The copies ran on the default stream, which the timing stream does not wait for.
    KILN_CUDA(cudaStreamSynchronize(nullptr));
    return Status::ok();
  }
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
};

// Mean milliseconds of `launch` (which enqueues on `stream`) after one warm-up call; the
// number of repetitions grows for short calls so that one timing spans ~2 ms. An error of
// `launch` (an unsupported candidate) is returned as is.
inline Result<float> time_launches(cudaStream_t stream, const std::function<Status()>& launch) {
  cudaEvent_t start = nullptr, stop = nullptr;
  KILN_CUDA(cudaEventCreate(&start));
  std::unique_ptr<CUevent_st, decltype(&cudaEventDestroy)> start_guard(start, cudaEventDestroy);
  KILN_CUDA(cudaEventCreate(&stop));
  std::unique_ptr<CUevent_st, decltype(&cudaEventDestroy)> stop_guard(stop, cudaEventDestroy);
  KILN_RETURN_IF_ERROR(launch());  // warm-up; also the feasibility check
  KILN_CUDA(cudaStreamSynchronize(stream));
  int reps = 1;
  float ms = 0;
  for (int round = 0; round < 2; ++round) {
    KILN_CUDA(cudaEventRecord(start, stream));
    for (int r = 0; r < reps; ++r) KILN_RETURN_IF_ERROR(launch());
    KILN_CUDA(cudaEventRecord(stop, stream));
    KILN_CUDA(cudaEventSynchronize(stop));
    KILN_CUDA(cudaEventElapsedTime(&ms, start, stop));
    ms /= static_cast<float>(reps);
    if (round == 0) reps = std::clamp(static_cast<int>(2.f / std::max(ms, 1e-3f)), 3, 50);
  }
  return ms;
}

}  // namespace kiln
