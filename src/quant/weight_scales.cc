#include "quant/weight_scales.h"

#include <algorithm>
#include <cmath>

#include "core/half.h"

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

std::vector<float> grid_weight_scales(const Tensor& w, float top, float (*round)(float)) {
  if (w.dtype() != DataType::kFloat32 || w.rank() < 1 || w.shape()[0] <= 0) return {};
  const int64_t m = w.shape()[0], inner = w.numel() / m;
  const float* p = w.data<float>();
  std::vector<float> scales = channel_absmax(w, 0);
  for (int64_t c = 0; c < m; ++c) {
    const float amax = scales[static_cast<size_t>(c)];
    if (!std::isfinite(amax)) return {};
    const float s = amax / top;
    for (int64_t i = 0; i < inner && s > 0.f; ++i) {
      const float v = p[c * inner + i] / s, code = round(v);
      if (!(std::fabs(v - code) <= 1e-5f * std::max(1.f, std::fabs(code)))) return {};
    }
    scales[static_cast<size_t>(c)] = s > 0.f ? s : 1.f;  // an all-zero channel: codes 0
  }
  return scales;
}

float round_e4m3(float v) { return fp8e4m3_bits_to_float(float_to_fp8e4m3_bits(v)); }

}  // namespace kiln::quant
