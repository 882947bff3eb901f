#include "ops/auto_pad.h"

namespace kiln {

Result<AutoPad> parse_auto_pad(const std::string& s) {
  if (s.empty() || s == "NOTSET") return AutoPad::kNotSet;
  if (s == "SAME_UPPER") return AutoPad::kSameUpper;
  if (s == "SAME_LOWER") return AutoPad::kSameLower;
  if (s == "VALID") return AutoPad::kValid;
  return invalid_argument("auto_pad '" + s +
                          "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
}

const char* auto_pad_name(AutoPad p) {
  switch (p) {
    case AutoPad::kNotSet: return "NOTSET";
    case AutoPad::kSameUpper: return "SAME_UPPER";
    case AutoPad::kSameLower: return "SAME_LOWER";
    case AutoPad::kValid: return "VALID";
  }
  return "?";
}

}  // namespace kiln
