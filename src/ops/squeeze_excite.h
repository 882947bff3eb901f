// SqueezeExcite: kiln's own op (never in a model file), made by the fuse_squeeze_excite pass
// from the squeeze-and-excitation block of MobileNetV3, EfficientNet, MNASNet and RegNetY:
//
//   y = x · gate,  gate[n, c] = act2(W2 · act1(W1 · mean_hw(x[n]) + B1) + B2)[c]
//
// that is GlobalAveragePool → Conv 1×1 [+ act1] → Conv 1×1 [+ act2] → Mul(x, ·).
// Inputs: x [N, C, H, W] float; W1 [R, C, 1, 1]; B1 [R] (may be omitted); W2 [C, R, 1, 1];
// B2 [C] (may be omitted). Attributes: `squeeze_activation`, `excite_activation` (the
// activation names of ir/epilogue.h, "None" by default) with their `*_alpha` / `*_beta`.
// Fused, the pooled vector and the gate never leave the kernel's scratch, and the two tiny
// convolutions (a few kilobytes of input each) need no convolution library call.
#pragma once

#include "ir/graph.h"
#include "kiln/status.h"

namespace kiln {

struct SqueezeExciteAttrs {
  Activation squeeze = Activation::kNone;
  float squeeze_alpha = 0.f, squeeze_beta = 0.f;
  Activation excite = Activation::kNone;
  float excite_alpha = 0.f, excite_beta = 0.f;
};
Result<SqueezeExciteAttrs> squeeze_excite_attrs(const Node& n);
// The attributes that carry `a` (the pass writes them).
void set_squeeze_excite_attrs(const SqueezeExciteAttrs& a, Attributes* attrs);

struct SqueezeExciteDims {
  int64_t n = 0, c = 0, hw = 0, r = 0;  // r: the squeezed width (W1's output channels)
};
// Checks the five inputs' shapes (absent biases as undefined dtype) and returns the sizes.
Result<SqueezeExciteDims> squeeze_excite_dims(const Shape& x, const Shape& w1, const Shape* b1,
                                              const Shape& w2, const Shape* b2);

}  // namespace kiln
