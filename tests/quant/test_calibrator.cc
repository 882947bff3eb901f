// The calibrators against small independent implementations: the percentile from sorted
// values, min-max from the values, and the entropy search written the plain way (P and Q
// built bin by bin from a level map, KL summed directly).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "quant/calibrator.h"
#include "quant/histogram.h"

namespace kiln::quant {
namespace {

std::vector<float> laplace_with_outliers(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::exponential_distribution<float> e(1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = (rng() & 1 ? 1.f : -1.f) * e(rng);
  v[3] = 40.f;  // a few far outliers, as activations after a bad sample have
  v[7] = -35.f;
  return v;
}

double max_abs_of(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max<double>(m, std::fabs(x));
  return m;
}

// The entropy search, written independently of calibrator.cc. `level_of(i, k)`: the level of
// bin k < i for candidate i, in [0, levels).
template <class LevelOf>
double reference_search(const std::vector<int64_t>& h, double width, int first, int levels,
                        LevelOf level_of_at) {
  const int n = static_cast<int>(h.size());
  double best = std::numeric_limits<double>::infinity();
  int best_i = n;
  for (int i = first; i <= n; ++i) {
    auto level_of = [&](int k) { return level_of_at(i, k); };
    std::vector<double> level_total(levels, 0), level_nonzero(levels, 0);
    for (int k = 0; k < i; ++k) {
      level_total[level_of(k)] += h[k];
      level_nonzero[level_of(k)] += h[k] > 0;
    }
    std::vector<double> p(i), q(i);
    double tail = 0;
    for (int k = i; k < n; ++k) tail += h[k];
    for (int k = 0; k < i; ++k) {
      p[k] = h[k] + (k == i - 1 ? tail : 0);
      q[k] = h[k] > 0 ? level_total[level_of(k)] / level_nonzero[level_of(k)] : 0;
    }
    bool ok = true;
    for (auto* d : {&p, &q}) {
      double sum = 0, zeros = 0;
      for (double x : *d) sum += x, zeros += x == 0;
      const double give = 1e-4, take = give * zeros / (d->size() - zeros);
      for (double& x : *d) {
        x = x == 0 ? give : x / sum - take;
        ok = ok && x > 0;
      }
    }
    if (!ok) continue;
    double kl = 0;
    for (int k = 0; k < i; ++k) kl += p[k] * std::log(p[k] / q[k]);
    if (kl < best) best = kl, best_i = i;
  }
  return best_i * width;
}

// int8: `levels` even levels of i / levels bins, the last taking the rest.
double reference_entropy_amax(const std::vector<int64_t>& h, double width, int levels) {
  return reference_search(h, width, levels, levels, [levels](int i, int k) {
    return std::min(k / (i / levels), levels - 1);
  });
}

TEST(AbsHistogram, CountsMagnitudesAndNonFinite) {
  AbsHistogram h(4.0, 4);
  const float v[] = {0.f, -0.5f, 1.f, 1.5f, -3.99f, 4.f, 9.f, NAN, INFINITY};
  h.add(v, 9);
  EXPECT_EQ(h.counts(), (std::vector<int64_t>{2, 2, 0, 3}));  // 4 and 9 land in the last bin
  EXPECT_EQ(h.total(), 7);
  EXPECT_EQ(h.nonfinite(), 2);
  AbsHistogram other(4.0, 4);
  other.add(v, 2);
  ASSERT_TRUE(h.merge(other).is_ok());
  EXPECT_EQ(h.counts()[0], 4);
  EXPECT_FALSE(h.merge(AbsHistogram(5.0, 4)).is_ok());
}

TEST(Calibrator, MinMaxIsTheLargestMagnitude) {
  const std::vector<float> v = laplace_with_outliers(10000, 1);
  AbsMax m;
  m.add(v.data(), static_cast<int64_t>(v.size()));
  EXPECT_EQ(m.amax, 40.0);
  CalibrationSpec spec;
  spec.method = CalibrationMethod::kMinMax;
  EXPECT_EQ(choose_amax(spec, m.amax, nullptr), 40.0);
}

TEST(Calibrator, PercentileMatchesSortedValues) {
  const std::vector<float> v = laplace_with_outliers(20000, 2);
  AbsHistogram h(max_abs_of(v));
  h.add(v.data(), static_cast<int64_t>(v.size()));
  std::vector<double> mags;
  for (float x : v) mags.push_back(std::fabs(x));
  std::sort(mags.begin(), mags.end());
  for (double pct : {50.0, 99.0, 99.9, 99.99, 100.0}) {
    SCOPED_TRACE(pct);
    const size_t rank = static_cast<size_t>(std::ceil(pct / 100 * mags.size())) - 1;
    const double a = percentile_amax(h, pct);
    // The histogram's answer is the upper edge of the bin that holds the sorted quantile.
    EXPECT_GE(a, mags[rank]);
    EXPECT_LE(a, mags[rank] + h.bin_width());
  }
}

TEST(Calibrator, EntropyMatchesTheIndependentSearch) {
  for (uint32_t seed : {3u, 4u, 5u}) {
    const std::vector<float> v = laplace_with_outliers(50000, seed);
    AbsHistogram h(max_abs_of(v));
    h.add(v.data(), static_cast<int64_t>(v.size()));
    std::vector<int64_t> counts = h.counts();
    counts[0] = counts[1];  // bin 0 counts as bin 1 (calibrator.h)
    const double want = reference_entropy_amax(counts, h.bin_width(), kInt8Levels);
    EXPECT_DOUBLE_EQ(entropy_amax(h), want) << "seed " << seed;
    // The outliers are clipped: the threshold lies well inside the range, above the bulk.
    EXPECT_LT(want, 0.6 * h.range());
    EXPECT_GT(want, 5.0);
  }
}

// A value after a ReLU: 60% exact zeros, the rest half-normal. The zeros do not pull the
// threshold down: it is the threshold of the same values without them.
TEST(Calibrator, EntropyIgnoresTheZerosOfAReluOutput) {
  std::mt19937 gen(11);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> positive, with_zeros;
  for (int i = 0; i < 40000; ++i) positive.push_back(std::fabs(d(gen)));
  with_zeros = positive;
  with_zeros.insert(with_zeros.end(), 60000, 0.f);
  const double range = max_abs_of(positive);
  AbsHistogram a(range), b(range);
  a.add(positive.data(), static_cast<int64_t>(positive.size()));
  b.add(with_zeros.data(), static_cast<int64_t>(with_zeros.size()));
  EXPECT_DOUBLE_EQ(entropy_amax(b), entropy_amax(a));
  EXPECT_GT(entropy_amax(b), 2.5);  // a unit half-normal: most of its range kept
}

TEST(Calibrator, EntropyKeepsAFlatDistributionWhole) {
  // Evenly spread values lose information wherever they are clipped: keep the whole range.
  std::vector<int64_t> flat(2048, 10);
  AbsHistogram h(2.0);
  std::vector<float> v;
  for (int k = 0; k < 2048; ++k)
    for (int r = 0; r < 10; ++r) v.push_back((k + 0.5f) * 2.0f / 2048);
  h.add(v.data(), static_cast<int64_t>(v.size()));
  EXPECT_EQ(h.counts(), flat);
  EXPECT_DOUBLE_EQ(entropy_amax(h), 2.0);
  EXPECT_DOUBLE_EQ(reference_entropy_amax(flat, h.bin_width(), kInt8Levels), 2.0);
}

TEST(Calibrator, EmptyAndZeroValues) {
  AbsHistogram zeros(0.0);
  const float z[] = {0.f, 0.f};
  zeros.add(z, 2);
  EXPECT_EQ(entropy_amax(zeros), 0.0);
  EXPECT_EQ(percentile_amax(zeros, 99.9), 0.0);
  EXPECT_EQ(entropy_amax(AbsHistogram(1.0)), 0.0);
}

TEST(Calibrator, ParsesMethods) {
  EXPECT_EQ(parse_calibration_method("entropy")->name(), "entropy");
  // fp8 takes min-max where entropy is asked (calibrator.h).
  EXPECT_EQ(parse_calibration_method("entropy", true)->name(), "minmax");
  EXPECT_EQ(parse_calibration_method("minmax", true)->name(), "minmax");
  EXPECT_EQ(parse_calibration_method("minmax")->name(), "minmax");
  EXPECT_EQ(parse_calibration_method("percentile")->name(), "percentile=99.99");
  auto p = parse_calibration_method("percentile=99.9");
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->percentile, 99.9);
  EXPECT_EQ(parse_calibration_method(p->name())->percentile, 99.9);
  for (const char* bad : {"percentile=", "percentile=0", "percentile=101", "percentile=x",
                          "percentile99", "kl", ""}) {
    auto r = parse_calibration_method(bad);
    EXPECT_FALSE(r.is_ok()) << bad;
  }
}

}  // namespace
}  // namespace kiln::quant
