// Pad's attribute and input rules, shared by the reference kernel (pad.cc) and the CUDA one.
#pragma once

#include <vector>

#include "ir/attributes.h"
#include "kiln/status.h"
#include "ops/op_registry.h"

namespace kiln {

enum class PadMode { kConstant, kReflect, kEdge };

// The `mode` attribute; wrap (opset 19) is unsupported, anything else invalid.
Result<PadMode> parse_pad_mode(const Attributes& attrs);

// Per-axis begin and end pads (rank entries each), from pads (input 1) and the optional axes
// (input 3), both known values; checks that no axis loses more than it has and that edge /
// reflect padding has something to copy.
struct PadAmounts {
  std::vector<int64_t> begin, end;
};
Result<PadAmounts> read_pads(const std::vector<TensorDesc>& in, PadMode mode);

}  // namespace kiln
