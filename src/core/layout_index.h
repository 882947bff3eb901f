// Where an element of a rank-4 tensor lies in each Layout (core/layout.h).
#pragma once

#include <cstdint>

#include "core/layout.h"
#include "kiln/tensor.h"

namespace kiln {

// The channel block of a blocked layout (nChw8c, nChw16c), or 0.
inline int64_t block_of(Layout layout) {
  return layout == Layout::kNChw8c ? 8 : layout == Layout::kNChw16c ? 16 : 0;
}

// The element index of logical [n, c, h, w] in `layout` of logical shape `s` [N, C, H, W].
inline int64_t layout_index(Layout layout, const Shape& s, int64_t n, int64_t c, int64_t h,
                            int64_t w) {
  if (const int64_t b = block_of(layout))  // [N, C/b, H, W, b]
    return (((n * (s[1] / b) + c / b) * s[2] + h) * s[3] + w) * b + c % b;
  return layout == Layout::kNHWC ? ((n * s[2] + h) * s[3] + w) * s[1] + c
                                 : ((n * s[1] + c) * s[2] + h) * s[3] + w;
}

}  // namespace kiln
