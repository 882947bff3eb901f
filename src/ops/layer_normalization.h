// LayerNormalization's attributes, with ONNX's defaults, for the reference kernel and every
// backend: normalization over the axes from `axis` on, statistics in float (stash_type 1).
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace kiln {

struct LayerNormAttrs {
  int64_t axis = -1;
  float epsilon = 1e-5f;
  int64_t stash_type = 1;
};
inline LayerNormAttrs layer_norm_attrs(const Node& n) {
  LayerNormAttrs a;
  a.axis = n.attrs.get_int("axis", a.axis);
  a.epsilon = n.attrs.get_float("epsilon", a.epsilon);
  a.stash_type = n.attrs.get_int("stash_type", a.stash_type);
  return a;
}

}  // namespace kiln
