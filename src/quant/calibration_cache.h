// Calibration caches: the per-value amax a calibration found, saved so that a later build
// reuses it without the samples.
//
// Two formats, told apart by their first line:
// - kiln's own, versioned text (`kiln-calibration 1`). It records the method, a fingerprint
//   of the model and a description of its inputs, so that a cache made for another model,
//   input or method is refused with the difference named. It ends with an `end` line, so a
//   truncated file is refused too.
//       kiln-calibration 1
//       method entropy
//       model 3f0c5e1a9b7d2c44
//       inputs data:float32[8,3,224,224]
//       samples 512
//       values 2
//       value 2.64013672 conv1_out
//       value 11.5 onnx::Relu_12
//       end
// - TensorRT's: a header `TRT-<version>-<Calibrator>` (EntropyCalibration2, EntropyCalibration,
//   MinMaxCalibration, LegacyCalibration), then one `tensor_name: <8 hex digits>` line per
//   tensor, the digits being the IEEE-754 bits of the float32 scale amax / 127. It records
//   nothing of the model: its tensor names are checked against the graph instead.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kiln/status.h"

namespace kiln::quant {

enum class CacheFormat { kKiln, kTensorRT };

struct CalibrationTable {
  CacheFormat format = CacheFormat::kKiln;
  // kiln: CalibrationSpec::name(). TensorRT: the calibrator of the header, as kiln names it
  // ("entropy" for EntropyCalibration2/EntropyCalibration, "minmax" for MinMaxCalibration,
  // "legacy" for LegacyCalibration).
  std::string method;
  std::string model;   // kiln only: the model's fingerprint
  std::string inputs;  // kiln only: the inputs calibrated, as `name:dtype[dims]` joined by ' '
  int64_t samples = 0;
  std::map<std::string, double> amax;  // per value name; finite, >= 0
};

// The text of `table` in kiln's format.
std::string to_kiln_text(const CalibrationTable& table);
// The text of `table` in TensorRT's format, with header `TRT-<version>-<calibrator>`: the
// calibrator is EntropyCalibration2 for entropy, MinMaxCalibration for minmax and
// LegacyCalibration (TensorRT's percentile-based one) for a percentile.
std::string to_tensorrt_text(const CalibrationTable& table, int version = 8601);

// Parses either format (the first line decides). `source` names the file in errors.
Result<CalibrationTable> parse_calibration_cache(const std::string& text,
                                                 const std::string& source);

Result<CalibrationTable> read_calibration_cache(const std::string& path);
// Writes atomically (a temporary file renamed over `path`).
Status write_calibration_cache(const std::string& path, const CalibrationTable& table,
                               CacheFormat format);

// Whether `cache` can stand for a calibration of `expected` (method, model and inputs;
// kiln caches only) over `values`, the names of the values the build needs scales for.
// Refuses, naming every difference: another method, model or input; for a TensorRT cache,
// a calibrator other than the method asked for, and tensor names the graph lacks or values
// the cache lacks (the first few of each).
Status check_cache_matches(const CalibrationTable& cache, const CalibrationTable& expected,
                           const std::vector<std::string>& values);

}  // namespace kiln::quant
