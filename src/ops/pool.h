// Pooling attributes and geometry shared by MaxPool and AveragePool (reference kernels,
// and the oneDNN/CUDA backends, which need the same resolved padding and output shape).
//
// Geometry follows ONNX, per spatial dim with effective kernel ek = (k-1)*d + 1:
//   NOTSET      out = floor_or_ceil((in + pb + pe - ek) / s) + 1; with ceil_mode a last
//               window that would start at or past in + pb (wholly in the end padding or
//               beyond) is dropped, as ONNX and PyTorch define it.
//   SAME_UPPER  out = ceil(in / s); total pad = max(0, (out-1)*s + ek - in), the odd one at
//   SAME_LOWER  the end (UPPER) or the beginning (LOWER). ceil_mode is ignored.
//   VALID       out = floor((in - ek) / s) + 1, no padding.
// In ceil mode the last window can run past in + pe: those positions are neither input
// nor padding; they are skipped, and AveragePool's count_include_pad does not count them.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/attributes.h"
#include "kiln/status.h"
#include "kiln/tensor.h"
#include "ops/auto_pad.h"

namespace kiln {

struct PoolAttrs {
  std::vector<int64_t> kernel_shape;
  std::vector<int64_t> strides;    // one per spatial dim (default 1)
  std::vector<int64_t> dilations;  // one per spatial dim (default 1)
  std::vector<int64_t> pads;       // [begin_1..begin_n, end_1..end_n]; used with kNotSet
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;
  bool count_include_pad = false;  // AveragePool only
  int64_t storage_order = 0;       // MaxPool Indices: 0 row-major, 1 column-major
};

// Which attributes an op accepts beyond kernel_shape/strides/pads/auto_pad/ceil_mode.
struct PoolAttrOptions {
  bool dilations = false;
  bool count_include_pad = false;
  bool storage_order = false;
};

// Reads and validates the attributes; `spatial_rank` is the input rank minus 2.
Result<PoolAttrs> parse_pool_attrs(const Attributes& attrs, int64_t spatial_rank,
                                   PoolAttrOptions options);

// One spatial dimension with auto_pad resolved. pad_end is the attribute's (or SAME's)
// end padding, which is what count_include_pad counts; a backend that derives the output
// size from the padding (oneDNN, cuDNN) needs padded_end_for_output() instead.
struct PoolDim {
  int64_t in = 0, out = 0;
  int64_t kernel = 1, stride = 1, dilation = 1;
  int64_t pad_begin = 0, pad_end = 0;

  int64_t effective_kernel() const { return (kernel - 1) * dilation + 1; }
  // End padding that makes floor((in + pb + pe' - ek) / s) + 1 == out (may exceed pad_end in
  // ceil mode, or be smaller than pad_end when the last positions are never read).
  int64_t padded_end_for_output() const {
    return (out - 1) * stride + effective_kernel() - in - pad_begin;
  }
};

// Resolves the geometry for input shape (N, C, D1..Dn); errors when the window does not
// fit or the attributes do not match the input rank.
Result<std::vector<PoolDim>> pool_dims(const PoolAttrs& attrs, const Shape& input);

// (N, C, out_1..out_n).
Shape pool_output_shape(const Shape& input, const std::vector<PoolDim>& dims);

// For the reference kernels: every output position of one (n, c) plane, in row-major
// order, with the input positions its window reads (padding and overflow skipped).
// Offsets are row-major within one input plane; col_offsets (filled when asked) are the
// same positions in column-major order (MaxPool storage_order=1).
struct PoolWindows {
  std::vector<int64_t> begin;  // window p reads offsets[begin[p] .. begin[p+1])
  std::vector<int64_t> offsets;
  std::vector<int64_t> col_offsets;   // empty unless asked for
  std::vector<int64_t> padded_count;  // window size counting padding (count_include_pad)
  int64_t in_plane = 1, out_plane = 1;
};

PoolWindows pool_windows(const std::vector<PoolDim>& dims, bool with_col_offsets);

}  // namespace kiln
