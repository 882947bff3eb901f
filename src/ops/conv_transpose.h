// ConvTranspose attribute handling shared by every implementation (reference, oneDNN,
// cuDNN), like conv.h for Conv: parse once, resolve against X/W shapes into a ConvGeometry.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/conv.h"

namespace kiln {

struct ConvTransposeAttrs {
  ConvAttrs conv;                       // auto_pad, group, kernel_shape, strides, dilations, pads
  std::vector<int64_t> output_padding;  // empty: all 0
  std::vector<int64_t> output_shape;    // empty: not given; else spatial dims (or N, C, spatial)
};

Result<ConvTransposeAttrs> parse_conv_transpose_attrs(const Attributes& attrs);

// ConvTranspose: X [N, C, D1..Dk], W [C, M/group, K1..Kk]; Y [N, M, O1..Ok] with
//   Y[n, g·Mg + m, i·stride − pad_begin + k·dilation] += X[n, g·Cg + c, i] · W[g·Cg + c, m, k].
// Output size and pads (ONNX spec):
//  - output_shape given: O = output_shape, pads ignored and derived from
//      total = stride·(D − 1) + output_padding + (K − 1)·dilation + 1 − O
//    split as begin = total/2 (SAME_UPPER) or total − total/2 (otherwise), end the rest.
//  - SAME_UPPER / SAME_LOWER: O = D·stride, pads derived as above.
//  - otherwise: O = stride·(D − 1) + output_padding + (K − 1)·dilation + 1 − pads (VALID: 0).
// A negative total (O larger than the full result) puts no padding at the beginning: the
// extra outputs at the end are zeros plus bias.
Result<ConvGeometry> conv_transpose_geometry(const ConvTransposeAttrs& attrs, const Shape& x,
                                             const Shape& w);

}  // namespace kiln
