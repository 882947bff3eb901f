// Gather's attributes, with ONNX's defaults, for the reference kernel, the passes and every
// backend.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace kiln {

struct GatherAttrs {
  int64_t axis = 0;  // may be negative
};
inline GatherAttrs gather_attrs(const Node& n) {
  GatherAttrs a;
  a.axis = n.attrs.get_int("axis", a.axis);
  return a;
}

}  // namespace kiln
