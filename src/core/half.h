// IEEE fp16 and bfloat16 storage types. Arithmetic goes through float: both convert
// implicitly, so templated reference kernels work on them unchanged (slowly, as intended
// for a reference).
#pragma once

#include <cstdint>
#include <cstring>

namespace kiln {

float half_bits_to_float(uint16_t h);
uint16_t float_to_half_bits(float f);  // round to nearest even; overflow → inf; NaN kept

inline float bf16_bits_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t float_to_bf16_bits(float f);  // round to nearest even; NaN kept

struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(float_to_half_bits(f)) {}  // NOLINT
  operator float() const { return half_bits_to_float(bits); }  // NOLINT
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(float_to_bf16_bits(f)) {}  // NOLINT
  operator float() const { return bf16_bits_to_float(bits); }  // NOLINT
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

}  // namespace kiln
