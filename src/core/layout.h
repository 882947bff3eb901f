// How the bytes of a tensor of a logical (ONNX) shape are ordered in memory. The runtime
// records one per value of a plan; kernels say which they read and write.
#pragma once

#include <cstdint>

namespace kiln {

enum class Layout : uint8_t {
  kPlain,    // row-major in the logical shape's order (NCHW for rank 4)
  kNHWC,     // rank 4 only: logical [N,C,H,W] stored as [N,H,W,C]
  kNChw8c,   // rank 4, C a multiple of 8: [N, C/8, H, W, 8] (oneDNN's blocked layout, CPU)
  kNChw16c,  // rank 4, C a multiple of 16: [N, C/16, H, W, 16] (CPU)
};

inline const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kPlain: return "plain";
    case Layout::kNHWC: return "NHWC";
    case Layout::kNChw8c: return "nChw8c";
    case Layout::kNChw16c: return "nChw16c";
  }
  return "?";
}

}  // namespace kiln
