// ONNX's auto_pad attribute, shared by every windowed op (Conv, ConvTranspose, pooling).
#pragma once

#include <string>

#include "kiln/status.h"

namespace kiln {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

// "NOTSET" (or empty), "SAME_UPPER", "SAME_LOWER", "VALID"; anything else is an error.
Result<AutoPad> parse_auto_pad(const std::string& s);
const char* auto_pad_name(AutoPad p);

}  // namespace kiln
