// How the bytes of a tensor of a logical (ONNX) shape are ordered in memory. The runtime
// records one per value of a plan; kernels say which they read and write.
#pragma once

#include <cstdint>

namespace kiln {

enum class Layout : uint8_t {
  kPlain,  // row-major in the logical shape's order (NCHW for rank 4)
  kNHWC,   // rank 4 only: logical [N,C,H,W] stored as [N,H,W,C]
};

inline const char* layout_name(Layout l) { return l == Layout::kNHWC ? "NHWC" : "plain"; }

}  // namespace kiln
