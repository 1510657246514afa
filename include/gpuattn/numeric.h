// Host-side conversions between float and the 16-bit storage types (IEEE fp16, bfloat16) and the
// 8-bit ones of a quantized KV cache (FP8 E4M3, int8), round to nearest even. Used by the CPU
// backend, the tests and the tools; no CUDA headers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "gpuattn/types.h"

namespace gpuattn {

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // NaN
  const std::uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}
inline float bf16_to_float(std::uint16_t h) {
  return bits_float(static_cast<std::uint32_t>(h) << 16);
}

inline std::uint16_t float_to_f16(float f) {
  const std::uint32_t u = float_bits(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (a < 0x38800000u) {  // subnormal or zero in fp16
    if (a < 0x33000000u) return static_cast<std::uint16_t>(sign);
    const std::uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    const int shift = 113 - static_cast<int>(a >> 23) + 13;  // to 10-bit subnormal mantissa
    std::uint32_t r = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<std::uint16_t>(sign | r);
  }
  std::uint32_t r = ((a - 0x38000000u) >> 13);
  const std::uint32_t rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
  return static_cast<std::uint16_t>(sign | r);
}

inline float f16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    return bits_float(sign | static_cast<std::uint32_t>(112 - e) << 23 | (mant & 0x3ffu) << 13);
  }
  return bits_float(sign | (exp + 112) << 23 | mant << 13);
}

// FP8 E4M3 (OCP "fn": exponent bias 7, no infinities, 0x7f/0xff NaN, largest finite 448).
// float -> e4m3 rounds to nearest even and saturates to +-448 (PTX cvt.rn.satfinite); NaN stays
// NaN.
inline float e4m3_to_float(std::uint8_t b) {
  const float sign = (b & 0x80u) ? -1.f : 1.f;
  const int e = (b >> 3) & 0xf, m = b & 7;
  if (e == 15 && m == 7) return std::nanf("");
  if (e == 0) return sign * std::ldexp(static_cast<float>(m), -9);
  return sign * std::ldexp(1.f + static_cast<float>(m) / 8.f, e - 7);
}
inline std::uint8_t float_to_e4m3(float f) {
  if (std::isnan(f)) return 0x7f;
  const std::uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  const float a = std::fabs(f);
  if (a >= 448.f) return sign | 0x7e;
  if (a < 0.015625f) {  // below 2^-6: subnormal steps of 2^-9 (the result 8 is 2^-6, normal)
    return sign | static_cast<std::uint8_t>(std::nearbyint(std::ldexp(a, 9)));
  }
  int e = 0;
  const float frac = std::frexp(a, &e);  // a = frac * 2^e, frac in [0.5, 1)
  --e;                                   // a = (2 frac) * 2^e, 2 frac in [1, 2)
  int m = static_cast<int>(std::nearbyint((2.f * frac - 1.f) * 8.f));
  if (m == 8) {
    m = 0;
    ++e;
  }
  const int bits = ((e + 7) << 3) | m;
  return sign | static_cast<std::uint8_t>(bits > 0x7e ? 0x7e : bits);
}

// int8 of a quantized KV cache: round to nearest even, clamped to [-127, 127] (symmetric); NaN
// becomes 0 (PTX cvt.rni.sat).
inline std::int8_t float_to_i8(float f) {
  if (std::isnan(f)) return 0;
  const float r = std::nearbyint(f);
  return static_cast<std::int8_t>(r > 127.f ? 127.f : r < -127.f ? -127.f : r);
}

// Element i of host memory `base` holding values of type t, as a float (exact for every floating
// and 8-bit type); NaN for the index types (i32, u8), which hold no values.
inline float element_to_float(const void* base, DType t, std::int64_t i) {
  switch (t) {
    case DType::f16: return f16_to_float(static_cast<const std::uint16_t*>(base)[i]);
    case DType::bf16: return bf16_to_float(static_cast<const std::uint16_t*>(base)[i]);
    case DType::f32: return static_cast<const float*>(base)[i];
    case DType::i8: return static_cast<const std::int8_t*>(base)[i];
    case DType::e4m3: return e4m3_to_float(static_cast<const std::uint8_t*>(base)[i]);
    case DType::i32:
    case DType::u8: break;
  }
  return std::numeric_limits<float>::quiet_NaN();
}

}  // namespace gpuattn
