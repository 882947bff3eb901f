// Softmax's attributes, with ONNX's defaults, for the reference kernel, the passes and every
// backend.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace kiln {

struct SoftmaxAttrs {
  int64_t axis = -1;  // opset 13: one axis; may be negative
};
inline SoftmaxAttrs softmax_attrs(const Node& n) {
  SoftmaxAttrs a;
  a.axis = n.attrs.get_int("axis", a.axis);
  return a;
}

}  // namespace kiln
