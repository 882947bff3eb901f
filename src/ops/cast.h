// Cast's attributes, with ONNX's defaults, for the reference kernel, the passes and every
// backend.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace kiln {

struct CastAttrs {
  DataType to = DataType::kUndefined;
};
inline CastAttrs cast_attrs(const Node& n) {
  CastAttrs a;
  a.to = static_cast<DataType>(n.attrs.get_int("to", static_cast<int64_t>(a.to)));
  return a;
}

}  // namespace kiln
