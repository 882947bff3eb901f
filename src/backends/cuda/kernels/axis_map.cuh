// A copy where each output coordinate reads input coordinate offset + o·step on every axis,
// independently per axis: Slice (a strided window) and Pad (a shifted window whose
// out-of-range coordinates take a constant, the edge or the mirror image) are both this.
// Works on raw elements of 1, 2, 4 or 8 bytes, in either layout: the axes are visited in
// storage order (N, H, W, C for NHWC), each with its input stride in that storage.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/structured.cuh"

namespace kiln::cuda {

constexpr int kMaxMapAxes = 6;

enum class OutsideRule : int { kNone, kConstant, kEdge, kReflect };

struct AxisMap {
  int rank = 0;
  int64_t out_dims[kMaxMapAxes] = {};    // output dims, storage order
  int64_t in_strides[kMaxMapAxes] = {};  // input element stride of the same axis
  int64_t in_len[kMaxMapAxes] = {};
  int64_t offset[kMaxMapAxes] = {};
  int64_t step[kMaxMapAxes] = {};
};

// Storage order of a logical rank-r shape in `layout`: logical axis of each storage dim.
inline std::vector<int> storage_axes(size_t rank, Layout layout) {
  if (layout == Layout::kNHWC && rank == 4) return {0, 2, 3, 1};
  std::vector<int> v(rank);
  for (size_t i = 0; i < rank; ++i) v[i] = static_cast<int>(i);
  return v;
}

// Fills `m` for input/output logical shapes in `layout` with per-logical-axis offset/step.
inline Status make_axis_map(const Shape& in, const Shape& out, Layout layout,
                            const std::vector<int64_t>& offset, const std::vector<int64_t>& step,
                            AxisMap& m) {
  if (in.size() > static_cast<size_t>(kMaxMapAxes))
    return unsupported("rank " + std::to_string(in.size()) + " (at most 6)");
  const std::vector<int> axes = storage_axes(in.size(), layout);
  std::vector<int64_t> stride_of_axis(in.size());
  int64_t s = 1;
  for (int k = static_cast<int>(axes.size()) - 1; k >= 0; --k) {
    stride_of_axis[axes[k]] = s;
    s *= in[axes[k]];
  }
  m = AxisMap{};
  m.rank = static_cast<int>(in.size());
  for (size_t k = 0; k < axes.size(); ++k) {
    const int a = axes[k];
    m.out_dims[k] = out[a];
    m.in_strides[k] = stride_of_axis[a];
    m.in_len[k] = in[a];
    m.offset[k] = offset[a];
    m.step[k] = step[a];
  }
  return Status::ok();
}

template <class U, OutsideRule kRule>
__global__ void axis_map_kernel(const U* __restrict__ x, U* __restrict__ y, int64_t total,
                                AxisMap m, U value) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t r = i, src = 0;
    bool outside = false;
    for (int d = m.rank - 1; d >= 0; --d) {
      int64_t c = m.offset[d] + (r % m.out_dims[d]) * m.step[d];
      r /= m.out_dims[d];
      const int64_t len = m.in_len[d];
      if (kRule != OutsideRule::kNone && (c < 0 || c >= len)) {
        if (kRule == OutsideRule::kConstant) outside = true;
        if (kRule == OutsideRule::kEdge) c = c < 0 ? 0 : len - 1;
        if (kRule == OutsideRule::kReflect) {
          // Mirror without repeating the edge, periodic as the reference (pad.cc) has it.
          const int64_t period = 2 * (len - 1);
          if (period == 0) {
            c = 0;
          } else {
            c = ((c % period) + period) % period;
            c = c < len ? c : period - c;
          }
        }
      }
      src += c * m.in_strides[d];
    }
    y[i] = outside ? value : x[src];
  }
}

template <class U>
Status launch_axis_map_as(const void* x, void* y, int64_t total, const AxisMap& m, OutsideRule rule,
                          uint64_t value_bits, cudaStream_t s) {
  constexpr int kThreads = 256;
  const unsigned blocks = grid_blocks(total, kThreads);
  U value;
  memcpy(&value, &value_bits, sizeof(U));  // little-endian: the low bytes
  const U* xu = static_cast<const U*>(x);
  U* yu = static_cast<U*>(y);
  switch (rule) {
    case OutsideRule::kNone:
      axis_map_kernel<U, OutsideRule::kNone><<<blocks, kThreads, 0, s>>>(xu, yu, total, m, value);
      break;
    case OutsideRule::kConstant:
      axis_map_kernel<U, OutsideRule::kConstant>
          <<<blocks, kThreads, 0, s>>>(xu, yu, total, m, value);
      break;
    case OutsideRule::kEdge:
      axis_map_kernel<U, OutsideRule::kEdge><<<blocks, kThreads, 0, s>>>(xu, yu, total, m, value);
      break;
    case OutsideRule::kReflect:
      axis_map_kernel<U, OutsideRule::kReflect>
          <<<blocks, kThreads, 0, s>>>(xu, yu, total, m, value);
      break;
  }
  KILN_CUDA_LAUNCHED("axis_map_kernel");
  return Status::ok();
}

// y (output numel `total`) from x through `m`; `value_bits` holds the constant's bytes.
inline Status launch_axis_map(size_t elem_size, const void* x, void* y, int64_t total,
                              const AxisMap& m, OutsideRule rule, uint64_t value_bits,
                              cudaStream_t s) {
  if (total == 0) return Status::ok();
  switch (elem_size) {
    case 1: return launch_axis_map_as<uint8_t>(x, y, total, m, rule, value_bits, s);
    case 2: return launch_axis_map_as<uint16_t>(x, y, total, m, rule, value_bits, s);
    case 4: return launch_axis_map_as<uint32_t>(x, y, total, m, rule, value_bits, s);
    case 8: return launch_axis_map_as<uint64_t>(x, y, total, m, rule, value_bits, s);
    default: return unsupported("elements of " + std::to_string(elem_size) + " bytes");
  }
}

}  // namespace kiln::cuda
