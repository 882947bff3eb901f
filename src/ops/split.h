// Split's attributes, with ONNX's defaults, for the reference kernel, the passes and every
// backend.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace kiln {

struct SplitAttrs {
  int64_t axis = 0;         // may be negative
  int64_t num_outputs = 0;  // opset 18; 0 when absent
};
inline SplitAttrs split_attrs(const Node& n) {
  SplitAttrs a;
  a.axis = n.attrs.get_int("axis", a.axis);
  a.num_outputs = n.attrs.get_int("num_outputs", a.num_outputs);
  return a;
}

}  // namespace kiln
