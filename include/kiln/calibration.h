// Calibration: the magnitudes an int8 engine's scales come from, measured on samples like the
// ones it will see.
//
// An int8 engine (EngineOptions::precision = Precision::kInt8) takes them from
// EngineOptions::calibration_cache where that file exists, else calibrates on
// EngineOptions::calibration_data (a .npy or a directory of images) and writes the cache when
// one is named. A program that makes its own samples feeds them through a CalibrationSource:
//
//   auto fp32 = kiln::Engine::load("model.onnx", {});          // the same options, fp32
//   MySource source(...);                                       // : kiln::CalibrationSource
//   kiln::EngineOptions o; o.precision = kiln::Precision::kInt8;
//   o.calibration_cache = "model.calib";
//   auto r = kiln::calibrate(**fp32, source, o);                // writes model.calib
//   auto int8 = kiln::Engine::load("model.onnx", o);           // reads it
//
// Calibration runs the fp32 engine on its device twice over the samples, as TensorRT's
// calibrators do: the first pass finds each value's largest magnitude, the second fills a
// histogram of 2048 bins over [0, that magnitude] (not needed for minmax), and the method
// (EngineOptions::calibration_method: entropy, minmax, percentile[=P]) chooses the magnitude
// that maps to int8's largest code from it. The values calibrated are the inputs of the layers
// an int8 engine quantizes (Conv, Gemm, MatMul of constant weights).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/engine.h"
#include "kiln/options.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

namespace kiln {

// Calibration samples, batch by batch.
class CalibrationSource {
 public:
  virtual ~CalibrationSource() = default;
  // The next batch of at most `max_samples` samples: every input of the model by name, the
  // first dimension counting the samples (the same in every input). An empty map: no sample
  // is left.
  virtual Result<std::map<std::string, Tensor>> next(int max_samples) = 0;
  // Back to the first sample (calibration reads them twice).
  virtual Status rewind() = 0;
  // Samples left out because they could not be read (a corrupt image), so far.
  virtual int64_t skipped() const { return 0; }
  // What the samples are, for reports: "images of photos/", "calib.npy".
  virtual std::string describe() const = 0;
};

// The samples of `path` for `engine`'s inputs (its options decide their form):
//  - a .npy file: a model of one input only; its first dimension counts the samples, the
//    others must be the input's (where the model fixes them), its dtype the input's;
//  - a directory of JPEG and PNG images (other files ignored; a corrupt image is skipped and
//    counted): each decoded, resized to the input's height and width (`calibration_resize`:
//    the whole image stretched, or letterboxed on grey 114), and given as the input takes
//    images: 8-bit pixels for an 8-bit input_format, else float32 NCHW normalized as
//    (pixel / 255 − mean) / std with the engine's mean and std (input_mean, the model's
//    kiln.mean, else ImageNet's). A model of one image input (rank 4) only.
// An empty directory, an unreadable file or a shape that does not fit is an error naming it.
Result<std::unique_ptr<CalibrationSource>> open_calibration_data(const std::string& path,
                                                                 const Engine& engine);

struct CalibrationProgress {
  int pass = 1, passes = 2;   // the pass running; minmax needs one
  int64_t samples_done = 0;   // in this pass
  int64_t samples_total = 0;  // what the pass will take (-1 where the source cannot say yet)
  double seconds = 0;         // since calibration started
};

struct CalibrationResult {
  std::string method;                  // the method's name: "entropy", "minmax", "percentile=99.99"
  int64_t samples = 0;                 // samples calibrated on
  int64_t skipped = 0;                 // samples the source could not read
  double seconds = 0;                  // both passes
  std::map<std::string, double> amax;  // per value calibrated
  // Entropy: the values calibrated by min-max instead, feature vectors (one element per channel
  // and sample: [N, C] or [N, C, 1, 1], as after a global pooling). Clipping drops their few
  // large elements, which carry the signal; their histograms are too thin for the KL search.
  std::vector<std::string> minmax_values;
  std::string cache;  // the cache written, or empty
};

// The options of the fp32 engine that calibrates for an int8 build with `options`: the same
// model form, device and threads, in fp32 with no per-node precision, no shape profiles, CUDA
// graphs or kernel timing (calibration needs the values, not speed).
EngineOptions calibration_engine_options(const EngineOptions& options);

// Calibrates for an int8 build with `options` (its calibration_method, calibration_samples,
// calibration_batch and calibration_cache; its device and the rest as the int8 engine will be
// built) by running `fp32_engine` (built with those options but fp32 precision) on `source`'s
// samples. Writes the cache where one is named. `progress`, where given, is called after each
// batch. Fewer samples than asked is not an error: the result says how many were used.
Result<CalibrationResult> calibrate(
    const Engine& fp32_engine, CalibrationSource& source, const EngineOptions& options,
    const std::function<void(const CalibrationProgress&)>& progress = {});

// One calibration, several methods: the same passes over `source` (two where any method needs
// histograms) give each of `methods` (as calibration_method reads them: "entropy", "minmax",
// "percentile=99.9"...) its magnitudes, in order. Writes no cache: save_calibration does.
Result<std::vector<CalibrationResult>> calibrate_methods(
    const Engine& fp32_engine, CalibrationSource& source, const EngineOptions& options,
    const std::vector<std::string>& methods,
    const std::function<void(const CalibrationProgress&)>& progress = {});

// Writes `result` as the calibration cache `options.calibration_cache` names, for the int8 or
// fp8 engine of `options` (its calibration_method must be result.method's), and records the
// file in result.cache.
Status save_calibration(const Engine& fp32_engine, const EngineOptions& options,
                        CalibrationResult& result);

}  // namespace kiln
