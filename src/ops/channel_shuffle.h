// ChannelShuffle: kiln's own op (never in a model file), made by the fuse_channel_shuffle pass
// from the three nodes ShuffleNet exports for its channel shuffle:
//
//   y = Reshape(Transpose(Reshape(x, shape5), perm = [0, 2, 1, 3, 4]), shape4)
//
// Inputs: x, shape5 (int64[5]) and shape4 (int64, any length), both with Reshape's rules
// (allowzero 0). It computes exactly what the three nodes compute, for any shapes: with x
// viewed as [outer, b, c, inner] (shape5's dims, the last two merged), y is the same bytes as
// [outer, c, b, inner]. When x is [N, C, H, W] and shape5 is [N, G, C/G, H·W...] with y of x's
// shape, it is a channel shuffle in G groups: y channel k·G + g is x channel g·(C/G) + k, which
// a kernel may do in any layout (NHWC included), where the three nodes needed plain tensors.
#pragma once

#include <vector>

#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

struct ChannelShuffleGeometry {
  int64_t outer = 0, b = 0, c = 0,
          inner = 0;  // x as [outer, b, c, inner] → y as [outer, c, b, inner]
  Shape out;          // y's shape
  // x is [N, C, H, W] and y has its shape, outer = N, b·c = C, inner = H·W: a channel shuffle
  // in b groups of c channels, which keeps the image axes (any layout).
  bool per_pixel = false;
};

Result<ChannelShuffleGeometry> channel_shuffle_geometry(const Shape& x,
                                                        const std::vector<int64_t>& shape5,
                                                        const std::vector<int64_t>& shape4);

}  // namespace kiln
