// A histogram of |x| for one value over a calibration set: the input of the entropy and
// percentile calibrators (calibrator.h).
//
// Calibration runs in two passes over the samples, as TensorRT's calibrators do: the first
// finds each value's largest magnitude (`amax`), the second fills a histogram of a fixed range
// [0, amax] in `bins` equal bins. A fixed range keeps every bin the same width, so the
// thresholds the calibrators search are exact bin edges, and merging histograms of several
// batches (or devices) is an addition.
//
// Not thread-safe; one per value.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/status.h"

namespace kiln::quant {

inline constexpr int kDefaultHistogramBins = 2048;

class AbsHistogram {
 public:
  // `range` is the first pass's amax (> 0, finite). A range of 0 (a value that was all
  // zeros) gives a histogram whose every count lands in bin 0.
  explicit AbsHistogram(double range, int bins = kDefaultHistogramBins);

  // Counts |p[i]|. Magnitudes beyond the range (a sample the first pass did not see) go to
  // the last bin; non-finite ones are counted apart and nowhere else.
  void add(const float* p, int64_t n);
  // Adds another histogram of the same range and bins (one batch's, one device's).
  Status merge(const AbsHistogram& other);

  double range() const { return range_; }
  double bin_width() const { return width_; }
  int bins() const { return static_cast<int>(counts_.size()); }
  const std::vector<int64_t>& counts() const { return counts_; }
  int64_t total() const { return total_; }  // finite values counted
  int64_t nonfinite() const { return nonfinite_; }

 private:
  double range_;
  double width_;
  double inv_width_;
  std::vector<int64_t> counts_;
  int64_t total_ = 0;
  int64_t nonfinite_ = 0;
};

// The largest finite |p[i]| (0 for none), and how many were not finite.
struct AbsMax {
  double amax = 0;
  int64_t nonfinite = 0;
  void add(const float* p, int64_t n);
};

}  // namespace kiln::quant
