// The per-channel magnitudes that symmetric int8 weight scales come from: an int8 engine
// rounds each output channel of a layer's weights to max|w_c| / 127 (quantize_int8), the CPU's
// 8-bit convs recognize that grid (fuse_int8_conv), and `kiln quantize` writes it.
#pragma once

#include <vector>

#include "kiln/tensor.h"

namespace kiln::quant {

// max |w| over each slice of `axis` of the float32 tensor `w` (0 for an all-zero slice; NaN
// elements are passed over).
std::vector<float> channel_absmax(const Tensor& w, int axis);

}  // namespace kiln::quant
