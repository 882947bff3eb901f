// The attributes of the parameterized activations, with ONNX's defaults, in one place for the
// reference kernels, the epilogue fusion and every backend.
#pragma once

#include "ir/graph.h"

namespace kiln {

// LeakyRelu: y = x for x >= 0, alpha·x otherwise.
struct LeakyReluAttrs {
  float alpha = 0.01f;
};
inline LeakyReluAttrs leaky_relu_attrs(const Node& n) {
  LeakyReluAttrs a;
  a.alpha = n.attrs.get_float("alpha", a.alpha);
  return a;
}

// HardSigmoid: y = max(0, min(1, alpha·x + beta)).
struct HardSigmoidAttrs {
  float alpha = 0.2f;
  float beta = 0.5f;
};
inline HardSigmoidAttrs hard_sigmoid_attrs(const Node& n) {
  HardSigmoidAttrs a;
  a.alpha = n.attrs.get_float("alpha", a.alpha);
  a.beta = n.attrs.get_float("beta", a.beta);
  return a;
}

}  // namespace kiln
