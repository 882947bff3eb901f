#include "core/half.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace kiln {

float half_bits_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      u = sign | ((127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t float_to_half_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // ≥ 65520 rounds to inf
  if (abs < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    // value * 2^24 rounded to nearest even gives the subnormal mantissa.
    float a;
    std::memcpy(&a, &abs, 4);
    float scaled = a * 16777216.0f;    // exact: power of two
    float r = std::nearbyint(scaled);  // default rounding mode: nearest even
    return sign | static_cast<uint16_t>(r);
  }
  uint32_t mant = abs & 0x7fffffu;
  uint32_t exp = (abs >> 23) - 127 + 15;
  uint32_t half = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // carries into exp: fine
  return sign | static_cast<uint16_t>(half);
}

uint16_t float_to_half_bits_saturated(float f, bool* changed) {
  uint16_t h = float_to_half_bits(f);
  *changed = false;
  if (!std::isfinite(f)) return h;
  const uint16_t sign = h & 0x8000u, abs = h & 0x7fffu;
  if (abs == 0x7c00u) {
    *changed = true;
    return sign | 0x7bffu;  // 65504
  }
  if (abs == 0 && f != 0.f) {
    *changed = true;
    return sign | 0x0001u;  // 2^-24
  }
  return h;
}

std::string Fp16Saturation::note(const std::string& what) const {
  if (!changed) return "";
  char ex[32];
  std::snprintf(ex, sizeof ex, "%g", example);
  return "fp16: " + what + ": " + std::to_string(changed) + " of " + std::to_string(total) +
         " values outside fp16's range (such as " + ex + ") saturated to " +
         (std::fabs(example) > 1.f ? "±65504" : "±2^-24");
}

uint16_t float_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

float fp8e4m3_bits_to_float(uint8_t b) {
  const int exponent = (b >> 3) & 0xf, mantissa = b & 0x7;
  if (exponent == 0xf && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  // Subnormal (exponent 0): mantissa · 2^-9; normal: (8 + mantissa) · 2^(exponent − 10).
  const float magnitude = exponent == 0
                              ? std::ldexp(static_cast<float>(mantissa), -9)
                              : std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
  return (b & 0x80) ? -magnitude : magnitude;
}

uint8_t float_to_fp8e4m3_bits(float f) {
  if (std::isnan(f)) return 0x7f;
  const uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  const float a = std::fabs(f);
  if (a >= 448.f) return sign | 0x7e;  // saturate (±inf too)
  // The spacing of the e4m3 grid around `a`: 2^-9 below 2^-6 (subnormals), else 2^(e − 3)
  // for a in [2^e, 2^(e+1)). a / spacing is then exact in float, and rounding it to the
  // nearest even integer is the round-to-nearest-even of the format.
  int e = 0;
  std::frexp(a, &e);  // a = m · 2^e, m in [0.5, 1): a in [2^(e−1), 2^e)
  const int exp2 = std::max(e - 1, -6);
  const float steps = std::nearbyint(std::ldexp(a, 3 - exp2));  // current mode: to even
  const float r = std::ldexp(steps, exp2 - 3);                  // a, rounded onto the grid
  if (r == 0.f) return sign;
  int re = 0;
  std::frexp(r, &re);
  if (re - 1 < -6) return sign | static_cast<uint8_t>(std::ldexp(r, 9));  // subnormal
  const int mantissa = static_cast<int>(std::ldexp(r, 3 - (re - 1))) - 8;
  return sign | static_cast<uint8_t>(((re - 1 + 7) << 3) | mantissa);
}

void store_floats(const float* src, size_t n, DataType dt, void* dst) {
  auto* out = static_cast<uint8_t*>(dst);
  switch (dt) {
    case DataType::kFloat32:
      if (n) std::memcpy(out, src, n * sizeof(float));
      return;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      for (size_t i = 0; i < n; ++i) {
        const uint16_t h =
            dt == DataType::kFloat16 ? float_to_half_bits(src[i]) : float_to_bf16_bits(src[i]);
        std::memcpy(out + i * 2, &h, 2);
      }
      return;
    case DataType::kFloat8E4M3:
      for (size_t i = 0; i < n; ++i) out[i] = float_to_fp8e4m3_bits(src[i]);
      return;
    default: return;
  }
}

void load_floats(const void* src, size_t n, DataType dt, float* dst) {
  const auto* in = static_cast<const uint8_t*>(src);
  switch (dt) {
    case DataType::kFloat32:
      if (n) std::memcpy(dst, in, n * sizeof(float));
      return;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, in + i * 2, 2);
        dst[i] = dt == DataType::kFloat16 ? half_bits_to_float(h) : bf16_bits_to_float(h);
      }
      return;
    case DataType::kFloat8E4M3:
      for (size_t i = 0; i < n; ++i) dst[i] = fp8e4m3_bits_to_float(in[i]);
      return;
    default: return;
  }
}

}  // namespace kiln
