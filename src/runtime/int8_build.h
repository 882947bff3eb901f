// What an int8 build needs of calibration (runtime/calibration.cc).
#pragma once

#include <string>
#include <vector>

#include "kiln/engine.h"
#include "kiln/options.h"
#include "kiln/report.h"
#include "quant/calibration_cache.h"

namespace kiln {

// The magnitudes of an int8 build of the model `model_bytes` with `options`: from
// options.calibration_cache where that file exists (refused, naming the difference, where it
// was made for another model, input or method, or lacks a value), else calibrated on an fp32
// engine of the same model and options over options.calibration_data, the cache written where
// named. `report` gets the method, the samples and where the magnitudes came from.
Result<quant::CalibrationTable> int8_calibration(const std::string& model_bytes,
                                                 const std::string& model_dir,
                                                 const EngineOptions& options,
                                                 QuantizationReport& report);

// What a kiln cache for `engine`'s model, inputs and options.calibration_method records
// (without samples or magnitudes).
quant::CalibrationTable expected_calibration(const Engine& engine, const EngineOptions& options);

// The values an int8 engine of `engine`'s graph quantizes (the calibration's values).
std::vector<std::string> calibration_values(const Engine& engine);

}  // namespace kiln
