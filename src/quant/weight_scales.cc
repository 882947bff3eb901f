#include "quant/weight_scales.h"

#include <algorithm>
#include <cmath>

namespace kiln::quant {

std::vector<float> channel_absmax(const Tensor& w, int axis) {
  const Shape& s = w.shape();
  const int64_t channels = s[static_cast<size_t>(axis)];
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) inner *= s[d];
  std::vector<float> amax(static_cast<size_t>(channels), 0.f);
  const float* p = w.data<float>();
  for (int64_t i = 0; i < w.numel(); ++i) {
    float& a = amax[static_cast<size_t>((i / inner) % channels)];
    a = std::max(a, std::fabs(p[i]));
  }
  return amax;
}

}  // namespace kiln::quant
