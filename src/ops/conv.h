// Conv attribute handling shared by every Conv implementation (reference, oneDNN, cuDNN):
// parse the node's attributes once, then resolve them against concrete X/W shapes into a
// ConvGeometry (output dims, effective pads). Backends must use these functions so that
// padding and output-size rules are identical everywhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/attributes.h"
#include "kiln/status.h"
#include "kiln/tensor.h"
#include "ops/auto_pad.h"

namespace kiln {

// Conv attributes as the node writes them. Per-axis lists are empty when absent: their
// defaults (1s, 0s, W's kernel dims) depend on the spatial rank, known only from shapes.
struct ConvAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  int64_t group = 1;
  std::vector<int64_t> kernel_shape;  // empty: from W
  std::vector<int64_t> strides;       // empty: all 1
  std::vector<int64_t> dilations;     // empty: all 1
  std::vector<int64_t> pads;          // empty: all 0; [x1_begin, x2_begin.., x1_end, ..]
};

// Checks values that need no shape: group ≥ 1, strides/dilations ≥ 1, pads ≥ 0, a known
// auto_pad, an even number of pads.
Result<ConvAttrs> parse_conv_attrs(const Attributes& attrs);

// A convolution resolved for concrete shapes: what a kernel loops over. Shared with
// ConvTranspose, where in_* describe X and out_* describe Y the same way (channels are
// the total counts, not per group).
struct ConvGeometry {
  int64_t batch = 0;
  int64_t in_channels = 0;   // C of X
  int64_t out_channels = 0;  // M of Y
  int64_t group = 1;
  std::vector<int64_t> in_spatial;   // X's spatial dims
  std::vector<int64_t> kernel;       // W's spatial dims
  std::vector<int64_t> strides;      // per spatial axis
  std::vector<int64_t> dilations;    // per spatial axis
  std::vector<int64_t> pad_begin;    // effective padding (after auto_pad / output_shape)
  std::vector<int64_t> pad_end;      // informational for ConvTranspose (may be negative)
  std::vector<int64_t> out_spatial;  // Y's spatial dims; -1 where X's dim is unknown

  int64_t spatial_rank() const { return static_cast<int64_t>(in_spatial.size()); }
  Shape output_shape() const;  // [N, M, out_spatial...]
};

// Conv: X [N, C, D1..Dk], W [M, C/group, K1..Kk], k ≥ 1. Output per axis:
//   out = floor((in + pad_begin + pad_end - ((K - 1) * dilation + 1)) / stride) + 1
// SAME_*: out = ceil(in / stride) and the total padding needed for that is split evenly,
// the odd element at the end (SAME_UPPER) or the beginning (SAME_LOWER); VALID: no pads.
// Errors name the shapes: rank mismatch, C != W[1]·group, M not divisible by group,
// kernel_shape differing from W, kernel larger than the padded input.
Result<ConvGeometry> conv_geometry(const ConvAttrs& attrs, const Shape& x, const Shape& w);

// A per-axis attribute list resolved for `rank` spatial axes: `values` when it has `rank`
// entries, `rank` copies of `def` when empty, else an error naming `what`.
Result<std::vector<int64_t>> conv_axis_values(const std::vector<int64_t>& values, int64_t rank,
                                              int64_t def, const char* what);

// Checks X and W ranks (≥ 3, equal) and a kernel_shape attribute against W's spatial dims.
Status check_conv_ranks(const Shape& x, const Shape& w, const std::vector<int64_t>& kernel_shape);

}  // namespace kiln
