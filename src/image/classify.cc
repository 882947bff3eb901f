// A classifier's input from an image and its answer's best classes (kiln/images.h), shared by
// `kiln run` and `kiln serve`.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kiln/images.h"

namespace kiln {

void image_to_chw(const Image& image, int channels, int height, int width,
                  const ImageNormalization& n, float* chw) {
  std::vector<uint8_t> hwc(static_cast<size_t>(height) * width * channels);
  resize_into(image, ResizeMode::kStretch, height, width, channels, 0, hwc.data(),
              int64_t{width} * channels);
  const int64_t plane = int64_t{height} * width;
  for (int c = 0; c < channels; ++c) {
    const float mean = n.mean[std::min<size_t>(c, n.mean.size() - 1)];
    const float inv_std = 1.f / n.std[std::min<size_t>(c, n.std.size() - 1)];
    for (int64_t i = 0; i < plane; ++i)
      chw[c * plane + i] = (hwc[i * channels + c] / 255.f - mean) * inv_std;
  }
}

std::vector<ClassProbability> top_classes(const Tensor& output, int k, bool* softmax_applied) {
  if (softmax_applied) *softmax_applied = false;
  if (!output.defined() || dtype_size(output.dtype()) == 0 || output.numel() == 0) return {};
  const int64_t n =
      output.rank() >= 2 ? output.numel() / std::max<int64_t>(output.dim(0), 1) : output.numel();
  std::vector<double> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[i] = output.at_double(i);
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  const bool probabilities =
      std::all_of(p.begin(), p.end(), [](double v) { return v >= 0 && v <= 1; }) &&
      std::fabs(total - 1) < 1e-3;
  if (!probabilities) {
    const double top = *std::max_element(p.begin(), p.end());
    double sum = 0;
    for (double& v : p) sum += (v = std::exp(v - top));
    for (double& v : p) v /= sum;
    if (softmax_applied) *softmax_applied = true;
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  const size_t kk = std::min<size_t>(static_cast<size_t>(std::max(k, 0)), order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kk), order.end(),
                    [&](int64_t a, int64_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  std::vector<ClassProbability> best;
  for (size_t i = 0; i < kk; ++i) best.push_back({order[i], p[order[i]]});
  return best;
}

}  // namespace kiln
