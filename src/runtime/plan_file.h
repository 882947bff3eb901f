// Plan files (.kiln): what `kiln build` writes and Engine::load reads like an .onnx.
//
// A plan holds the ONNX model, the options it was built with (every option options.def marks
// kPlan: precision, shape profiles and ranges, cuDNN conv path...), the timing cache (the algorithm
// chosen for every layer) and the plan of every shape profile as data (PlanInfo::structure: each
// step's device, kernel and operands' dtype, shape, layout and arena offset), tied to the GPU and
// library versions and to the kiln version that built it. Loading one re-imports the model, builds
// the profiles' plans without timing anything, and refuses a plan that comes out different from the
// saved one. A plan from another GPU, another kiln version, or a damaged file (checked by CRC-32)
// is refused with an error saying which.
//
// Layout (little-endian): "KILNPLAN", u32 format version (4), then length-prefixed (u64)
// fields: kiln version, device tag, options ("name=text" lines, one per text of each kPlan
// option as option_texts gives it, '\\' and line breaks escaped), timing cache (key<TAB>value
// lines), plans (length-prefixed texts, one per profile), ONNX bytes, the calibration (an int8
// engine's magnitudes in the kiln calibration cache's text, else empty); then the u32 CRC-32
// of everything before it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kiln/options.h"
#include "kiln/status.h"

namespace kiln {

struct PlanFile {
  std::string kiln_version;
  std::string device_tag;
  EngineOptions options;
  std::vector<std::pair<std::string, std::string>> tactics;
  std::vector<std::string> plans;  // PlanInfo::structure of each shape profile's plan
  std::string onnx_bytes;
  std::string calibration;  // quant::to_kiln_text of an int8 engine's magnitudes, or empty
};

// Every option options.def marks kPlan (what shapes the plans), copied from a plan file's
// options into `to`; the others stay `to`'s.
void take_plan_options(const EngineOptions& from, EngineOptions& to);

bool looks_like_plan(const std::string& path);
std::string serialize_plan(const PlanFile& plan);
// Parses and checks integrity and the kiln version (the device tag is checked by the
// caller, which knows the current device).
Result<PlanFile> parse_plan(const std::string& bytes, const std::string& path);
const char* kiln_version();

}  // namespace kiln
