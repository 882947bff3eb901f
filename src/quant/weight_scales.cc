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

int output_channel_axis(const Node& n) {
  switch (n.op) {
    case OpKind::Conv: return 0;
    case OpKind::Gemm: return n.attrs.get_int("transB", 0) ? 0 : 1;
    case OpKind::MatMul: return 1;
    default: return -1;
  }
}

std::vector<float> grid_weight_scales(const Tensor& w, float top, float (*round)(float), int axis) {
  if (w.dtype() != DataType::kFloat32 || axis < 0 || axis >= static_cast<int>(w.rank()) ||
      w.shape()[axis] <= 0)
    return {};
  const Shape& sh = w.shape();
  const int64_t m = sh[axis];
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < sh.size(); ++d) inner *= sh[d];
  std::vector<float> scales = channel_absmax(w, axis);
  for (const float amax : scales)
    if (!std::isfinite(amax)) return {};
  const float* p = w.data<float>();
  for (int64_t i = 0; i < w.numel(); ++i) {
    const float s = scales[static_cast<size_t>((i / inner) % m)] / top;
    if (!(s > 0.f)) continue;  // an all-zero channel: codes 0
    const float v = p[i] / s, code = round(v);
    if (!(std::fabs(v - code) <= 1e-5f * std::max(1.f, std::fabs(code)))) return {};
  }
  for (float& s : scales) s = s > 0.f ? s / top : 1.f;
  return scales;
}

float round_e4m3(float v) { return fp8e4m3_bits_to_float(float_to_fp8e4m3_bits(v)); }

}  // namespace kiln::quant
