#include "quant/histogram.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/check.h"

namespace kiln::quant {

AbsHistogram::AbsHistogram(double range, int bins) : range_(range), counts_(bins, 0) {
  KILN_CHECK(bins > 0 && std::isfinite(range) && range >= 0);
  width_ = range > 0 ? range / bins : 1.0;
  inv_width_ = range > 0 ? bins / range : 0.0;
}

void AbsHistogram::add(const float* p, int64_t n) {
  const int64_t last = static_cast<int64_t>(counts_.size()) - 1;
  int64_t skipped = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(p[i]);
    if (!std::isfinite(a)) {
      ++skipped;
      continue;
    }
    // Bin k holds [k·w, (k+1)·w); amax itself falls in the last bin.
    const int64_t k = static_cast<int64_t>(static_cast<double>(a) * inv_width_);
    ++counts_[std::min(k, last)];
  }
  total_ += n - skipped;
  nonfinite_ += skipped;
}

Status AbsHistogram::merge(const AbsHistogram& other) {
  if (other.counts_.size() != counts_.size() || other.range_ != range_)
    return invalid_argument("merging histograms of different ranges or bins (" +
                            std::to_string(range_) + "/" + std::to_string(counts_.size()) +
                            " and " + std::to_string(other.range_) + "/" +
                            std::to_string(other.counts_.size()) + ")");
  for (size_t k = 0; k < counts_.size(); ++k) counts_[k] += other.counts_[k];
  total_ += other.total_;
  nonfinite_ += other.nonfinite_;
  return Status::ok();
}

void AbsMax::add(const float* p, int64_t n) {
  float m = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(p[i]);
    if (!std::isfinite(a)) {
      ++nonfinite;
      continue;
    }
    m = std::max(m, a);
  }
  amax = std::max<double>(amax, m);
}

}  // namespace kiln::quant
