// IEEE fp16 and bfloat16 storage types. Arithmetic goes through float: both convert
// implicitly, so templated reference kernels work on them unchanged (slowly, as intended
// for a reference).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "kiln/tensor.h"

namespace kiln {

// float32, float16 or bfloat16: the dtypes a float activation may have on a device, all
// convertible into each other (store_floats, load_floats).
inline bool is_device_float(DataType dt) {
  return dt == DataType::kFloat32 || dt == DataType::kFloat16 || dt == DataType::kBFloat16;
}

float half_bits_to_float(uint16_t h);
uint16_t float_to_half_bits(float f);  // round to nearest even; overflow → inf; NaN kept
// As float_to_half_bits, but a finite value beyond fp16's range becomes ±65504 and a nonzero
// one that would round to zero becomes ±2^-24 (the smallest subnormal); *changed says whether
// either happened. For constants: an epsilon of 1e-12 must not become 0, nor a mask's -1e9
// become -inf.
uint16_t float_to_half_bits_saturated(float f, bool* changed);

// Converts the values of one constant with float_to_half_bits_saturated and tells how many
// were saturated, for a note naming the constant.
struct Fp16Saturation {
  int64_t changed = 0, total = 0;
  float example = 0.f;  // the first value saturated
  uint16_t convert(float f) {
    bool c = false;
    const uint16_t h = float_to_half_bits_saturated(f, &c);
    ++total;
    if (c && changed++ == 0) example = f;
    return h;
  }
  // "fp16: constant 'eps': 1 of 1 values outside fp16's range (such as 1e-12) saturated to
  // ±2^-24", or "" when none was.
  std::string note(const std::string& what) const;
};

inline float bf16_bits_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t float_to_bf16_bits(float f);  // round to nearest even; NaN kept

// float8 e4m3fn (DataType::kFloat8E4M3): to float exactly; from float rounding to nearest even,
// a finite value beyond ±448 saturating to ±448 (QuantizeLinear's saturate=1), ±inf to ±448,
// NaN to 0x7f.
float fp8e4m3_bits_to_float(uint8_t b);
uint8_t float_to_fp8e4m3_bits(float f);

// Writes n floats as `dt` (float32, float16 rounded to nearest even, or bfloat16 likewise) to
// dst, which holds n elements of dt. Any other dt is the caller's error (nothing written).
void store_floats(const float* src, size_t n, DataType dt, void* dst);
// Reads n elements of `dt` (float32, float16 or bfloat16) from src as floats; the inverse of
// store_floats.
void load_floats(const void* src, size_t n, DataType dt, float* dst);

struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(float_to_half_bits(f)) {}               // NOLINT
  operator float() const { return half_bits_to_float(bits); }  // NOLINT
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(float_to_bf16_bits(f)) {}           // NOLINT
  operator float() const { return bf16_bits_to_float(bits); }  // NOLINT
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

}  // namespace kiln
