// Calibrators: from what a value held over the calibration samples to the magnitude `amax`
// that its 8-bit scale maps to the largest code (int8: scale = amax / 127, symmetric;
// fp8 e4m3: scale = amax / 448).
//
// - min-max: the largest magnitude seen. Nothing is clipped; rare outliers cost resolution.
// - percentile=P: the smallest histogram edge below which P% of the magnitudes lie.
// - entropy: the threshold whose clipped-and-quantized distribution loses the least
//   information (KL divergence) against the clipped original, searched over the histogram's
//   bin edges, as TensorRT's entropy calibrator does (entropy_amax below gives the steps).
//
// For fp8 (e4m3), min-max and percentile give the same amax as for int8, and entropy means
// min-max. e4m3's error is relative (3 mantissa bits at every magnitude), so clipping buys no
// resolution for the values kept; a KL search over the e4m3 grid (the bins merged by the code
// they round to) was tried and chose thresholds far too low: Fashion-MNIST validation top-1
// 0.875 against min-max's 0.976 (bench/results/int8.md).
#pragma once

#include <string>

#include "kiln/status.h"
#include "quant/histogram.h"

namespace kiln::quant {

enum class CalibrationMethod { kMinMax, kEntropy, kPercentile };

struct CalibrationSpec {
  CalibrationMethod method = CalibrationMethod::kEntropy;
  double percentile = 99.99;  // kPercentile only, in (0, 100]
  // "entropy", "minmax" or "percentile=99.99": what parse_calibration_method reads back.
  std::string name() const;
  // Whether this method needs the second pass's histograms.
  bool needs_histogram() const { return method != CalibrationMethod::kMinMax; }
};

// "entropy", "minmax", "percentile" (99.99) or "percentile=P" with 0 < P <= 100. With `fp8`,
// entropy is min-max (see above).
Result<CalibrationSpec> parse_calibration_method(const std::string& text, bool fp8 = false);

// The number of positive int8 levels the entropy search quantizes into (codes 0..127).
inline constexpr int kInt8Levels = 128;

// The entropy calibrator's threshold for `h`. Bin 0 counts as bin 1 does: it holds the exact
// zeros of a value after a ReLU (half of it or more), a spike that merging bins would smear
// and the search would then avoid by clipping far too low (TensorRT's histogram calibrator
// does the same). For each candidate i from `levels` to the number of bins:
//   P = bins [0, i) of the histogram, the counts of the bins beyond added to bin i-1 (what
//       clipping at edge i does to the value);
//   Q = bins [0, i) merged into `levels` groups of i / levels bins (the last group takes the
//       remainder), each group's count spread evenly over its bins that were nonzero (an
//       empty bin stays empty: quantization does not create values);
//   both normalized and smoothed (a zero entry gets a small epsilon, taken from the others),
//   divergence(i) = KL(P || Q) = Σ P·ln(P/Q).
// The threshold is the upper edge i·width of the i with the least divergence (the first on
// ties). An empty histogram gives 0.
double entropy_amax(const AbsHistogram& h, int levels = kInt8Levels);

// The smallest bin edge below which at least `percentile`% of the finite magnitudes lie.
double percentile_amax(const AbsHistogram& h, double percentile);

// The method's amax for one value: `max_abs` from the first pass, `h` from the second (may
// be null for min-max). Never more than max_abs.
double choose_amax(const CalibrationSpec& spec, double max_abs, const AbsHistogram* h);

}  // namespace kiln::quant
