// Space-to-depth rewrite of a stride-2 conv with few input channels (the RGB stem).
//
// A conv of stride 2 over C channels with an R×S kernel equals a stride-1 conv over the
// input's 2×2 blocks: z[n, (dr·2 + ds)·cp + c, p, q] = xpad[n, c, 2p + dr, 2q + ds] (xpad:
// x with its begin padding, zero outside x; cp ≥ C, the channels beyond C zero), convolved
// with the ceil(R/2)×ceil(S/2) filter w'[k, (dr·2 + ds)·cp + c, a, b] = w[k, c, 2a + dr, 2b + ds]
// (zero past R or S). With C = 3 and cp = 4 the rewritten conv has 16 input channels and a
// 4×4 kernel instead of 3 channels and 7×7: a shape tensor-core kernels run well.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

constexpr int kS2dBlock = 2;

struct S2dShape {
  int64_t n = 0, c = 0, h = 0, w = 0;  // x
  int64_t cp = 0;                      // channels per block position in z (≥ c)
  int64_t pad_top = 0, pad_left = 0;   // the conv's begin padding
  int64_t hz = 0, wz = 0;              // z's spatial dims
  int64_t cz() const { return cp * kS2dBlock * kS2dBlock; }
  int64_t z_numel() const { return n * cz() * hz * wz; }
};

// w [K, C, R, S] (float32) → w' [K, 4·cp, ceil(R/2), ceil(S/2)] (float32).
Tensor space_to_depth_filter(const Tensor& w, int64_t cp);

// How x and z are stored: float32 or float16 each, NHWC or NCHW each. A transform from the
// model's float32 NCHW input straight into float16 NHWC z spares the plan's own conversion
// of that input (one pass over it instead of two).
struct S2dIo {
  DataType x_dtype = DataType::kFloat32, z_dtype = DataType::kFloat32;
  bool x_nhwc = false, z_nhwc = false;
};

// x → z. Launches on `stream`.
Status launch_space_to_depth(const S2dIo& io, const S2dShape& s, const void* x, void* z,
                             cudaStream_t stream);

}  // namespace kiln
