// TopK's attributes, with ONNX's defaults (opset 11), for the reference kernel and every
// backend. Opsets 1 and 10 lack `largest` and `sorted` (their defaults apply); opset 1's `k`
// attribute is made input 1 by the importer.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace kiln {

struct TopKAttrs {
  int64_t axis = -1;    // may be negative: normalize against the rank
  bool largest = true;  // the k largest (else the k smallest)
  bool sorted = true;   // kiln always returns them sorted, which satisfies sorted = 0 too
};
inline TopKAttrs top_k_attrs(const Node& n) {
  TopKAttrs a;
  a.axis = n.attrs.get_int("axis", a.axis);
  a.largest = n.attrs.get_int("largest", 1) != 0;
  a.sorted = n.attrs.get_int("sorted", 1) != 0;
  return a;
}

}  // namespace kiln
