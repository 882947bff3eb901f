#include "quant/calibrator.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "core/check.h"

namespace kiln::quant {

std::string CalibrationSpec::name() const {
  switch (method) {
    case CalibrationMethod::kMinMax: return "minmax";
    case CalibrationMethod::kEntropy: return "entropy";
    case CalibrationMethod::kPercentile: {
      char buf[48];
      std::snprintf(buf, sizeof buf, "percentile=%.10g", percentile);
      return buf;
    }
  }
  return "?";
}

Result<CalibrationSpec> parse_calibration_method(const std::string& text, bool fp8) {
  CalibrationSpec spec;
  if (text == "entropy" && !fp8) return spec;
  if (text == "minmax" || text == "entropy") {
    spec.method = CalibrationMethod::kMinMax;
    return spec;
  }
  const std::string p = "percentile";
  if (text.compare(0, p.size(), p) == 0) {
    spec.method = CalibrationMethod::kPercentile;
    if (text.size() == p.size()) return spec;
    if (text[p.size()] != '=')
      return invalid_argument("calibration method '" + text + "': write percentile=P");
    const std::string num = text.substr(p.size() + 1);
    char* end = nullptr;
    const double v = std::strtod(num.c_str(), &end);
    if (num.empty() || *end != '\0' || !(v > 0 && v <= 100))
      return invalid_argument("calibration method '" + text +
                              "': the percentile must be a number in (0, 100]");
    spec.percentile = v;
    return spec;
  }
  return invalid_argument("unknown calibration method '" + text +
                          "' (entropy, minmax, percentile or percentile=P)");
}

namespace {

// Normalizes `d` to sum 1 and gives each zero entry `eps`, taking it evenly from the nonzero
// ones, so that KL stays finite. False where the distribution is empty or too sparse to
// smooth (a nonzero entry would go negative).
bool normalize_and_smooth(std::vector<double>& d) {
  constexpr double kEps = 1e-4;
  double sum = 0;
  size_t zeros = 0;
  for (double x : d) {
    sum += x;
    zeros += x == 0;
  }
  const size_t nonzeros = d.size() - zeros;
  if (sum <= 0 || nonzeros == 0) return false;
  const double take = kEps * static_cast<double>(zeros) / static_cast<double>(nonzeros);
  for (double& x : d) {
    if (x == 0) {
      x = kEps;
    } else {
      x = x / sum - take;
      if (x <= 0) return false;
    }
  }
  return true;
}

// KL(P || Q) for candidate edge i, Q merging the bins of each group [starts[l], starts[l+1]).
double divergence_at(const std::vector<int64_t>& counts, int i, const std::vector<int>& starts) {
  const int n = static_cast<int>(counts.size());
  std::vector<double> p(counts.begin(), counts.begin() + i);
  double outliers = 0;
  for (int k = i; k < n; ++k) outliers += static_cast<double>(counts[k]);
  p[i - 1] += outliers;

  std::vector<double> q(i, 0.0);
  for (size_t l = 0; l + 1 < starts.size(); ++l) {
    const int begin = starts[l], end = starts[l + 1];
    double total = 0;
    int nonzero = 0;
    for (int k = begin; k < end; ++k) {
      total += static_cast<double>(counts[k]);
      nonzero += counts[k] != 0;
    }
    if (nonzero == 0) continue;
    for (int k = begin; k < end; ++k)
      if (counts[k] != 0) q[k] = total / nonzero;
  }
  if (!normalize_and_smooth(p) || !normalize_and_smooth(q))
    return std::numeric_limits<double>::infinity();
  double kl = 0;
  for (int k = 0; k < i; ++k) kl += p[k] * std::log(p[k] / q[k]);
  return kl;
}

// The even groups of int8's search: `levels` groups of i / levels bins, the last taking the
// remainder.
std::vector<int> even_groups(int i, int levels) {
  std::vector<int> starts;
  const int merged = i / levels;
  for (int l = 0; l < levels; ++l) starts.push_back(l * merged);
  starts.push_back(i);
  return starts;
}

// The least-divergence edge over candidates [first, n], groups by `groups(i)`.
template <class Groups>
double search_amax(const AbsHistogram& h, int first, Groups groups) {
  std::vector<int64_t> counts = h.counts();
  const int n = static_cast<int>(counts.size());
  if (h.total() == 0 || h.range() == 0) return 0;
  if (n > 1) counts[0] = counts[1];  // the zeros' spike (see calibrator.h)
  if (n <= first) return h.range();
  double best = std::numeric_limits<double>::infinity();
  int best_i = n;
  for (int i = first; i <= n; ++i) {
    const double d = divergence_at(counts, i, groups(i));
    if (d < best) {
      best = d;
      best_i = i;
    }
  }
  return best_i * h.bin_width();
}

}  // namespace

double entropy_amax(const AbsHistogram& h, int levels) {
  KILN_CHECK(levels > 0);
  return search_amax(h, levels, [levels](int i) { return even_groups(i, levels); });
}

double percentile_amax(const AbsHistogram& h, double percentile) {
  if (h.total() == 0 || h.range() == 0) return 0;
  const double target = percentile / 100.0 * static_cast<double>(h.total());
  double cumulative = 0;
  const std::vector<int64_t>& counts = h.counts();
  for (size_t k = 0; k < counts.size(); ++k) {
    cumulative += static_cast<double>(counts[k]);
    if (cumulative >= target) return static_cast<double>(k + 1) * h.bin_width();
  }
  return h.range();
}

double choose_amax(const CalibrationSpec& spec, double max_abs, const AbsHistogram* h) {
  if (spec.method == CalibrationMethod::kMinMax || !h) return max_abs;
  const double a = spec.method == CalibrationMethod::kEntropy
                       ? entropy_amax(*h)
                       : percentile_amax(*h, spec.percentile);
  return std::min(a, max_abs);
}

}  // namespace kiln::quant
