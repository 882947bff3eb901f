// The per-channel magnitudes that symmetric 8-bit weight scales come from: an int8 engine
// rounds each output channel of a layer's weights to max|w_c| / 127 (an fp8 one to the e4m3
// grid of max|w_c| / 448: quantize_int8), the 8-bit convs recognize that grid (fuse_int8_conv,
// fuse_fp8_conv), and `kiln quantize` writes it.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::quant {

// max |w| over each slice of `axis` of the float32 tensor `w` (0 for an all-zero slice; NaN
// elements are passed over).
std::vector<float> channel_absmax(const Tensor& w, int axis);

// The axis of a quantized layer's weights (input 1) that holds its output channels: a Conv's
// [M, C, ...] dim 0, a Gemm's B dim 0 with transB else dim 1, a MatMul's [K, N] B dim 1; -1 for
// another op.
int output_channel_axis(const Node& n);

// The scales of weights on a per-output-channel grid: for float32 `w` whose output channels
// are `axis`, s[m] = max|w[m]| / `top` where every w[m] / s[m] is its own `round` (within 1e-5
// of max(1, |code|): float rounding), 1 for an all-zero channel; empty where any element is off
// the grid or not finite. int8: top 127, round to the nearest integer; fp8: top 448, to e4m3.
std::vector<float> grid_weight_scales(const Tensor& w, float top, float (*round)(float),
                                      int axis = 0);

// `v` rounded to the nearest float8 e4m3 value (as QuantizeLinear rounds to float8: to nearest
// even, saturating at ±448): fp8's `round` above.
float round_e4m3(float v);

}  // namespace kiln::quant
