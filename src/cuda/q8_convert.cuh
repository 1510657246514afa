// Device conversions of a quantized KV cache's 8-bit elements (int8, FP8 E4M3) to fp16 pairs, two
// at a time from a 32-bit word of four: every int8 and every finite E4M3 value is exact in fp16.
// Shared by the 8-bit decode kernel (fwd_decode_q8.cuh) and the dequantizing gather (paged_kv.cu).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace gpuattn::q8 {

// A loaded word prepared for lo()/hi(): int8 bytes get 128 added (x ^ 0x80, so that the bytes can
// become the low mantissa bits of 1024 + x + 128); E4M3 words are used as they are.
template <bool kInt8>
__device__ __forceinline__ std::uint32_t prep(std::uint32_t w) {
  return kInt8 ? w ^ 0x80808080u : w;
}

// Bytes 0, 1 (lo) or 2, 3 (hi) of a prepared word as an fp16 pair (byte 0 / 2 in the low half).
template <bool kInt8, bool kHigh>
__device__ __forceinline__ std::uint32_t to_f16x2(std::uint32_t w) {
  std::uint32_t d;
  if constexpr (kInt8) {
    // [b, 0x64, b', 0x64] = fp16 1024 + (x + 128) per half, minus 1152: x, exactly.
    asm("prmt.b32 %0, %1, 0x64646464, %2;" : "=r"(d) : "r"(w), "n"(kHigh ? 0x7362 : 0x5140));
    asm("sub.rn.f16x2 %0, %0, %1;" : "+r"(d) : "r"(0x64806480u));
  } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    if constexpr (kHigh) {
      asm("{\n .reg .b16 lo, hi;\n mov.b32 {lo, hi}, %1;\n cvt.rn.f16x2.e4m3x2 %0, hi;\n}"
          : "=r"(d)
          : "r"(w));
    } else {
      asm("{\n .reg .b16 lo, hi;\n mov.b32 {lo, hi}, %1;\n cvt.rn.f16x2.e4m3x2 %0, lo;\n}"
          : "=r"(d)
          : "r"(w));
    }
#else
    // Before sm_89 (no FP8 conversions): sign to bit 15, exponent and mantissa to bits 13..7 (an
    // fp16 of exponent e - 8 for E4M3's e - 7, subnormals included), times 2^8. An E4M3 NaN
    // (0x7f) reads as 480 here, not NaN.
    std::uint32_t t;
    asm("prmt.b32 %0, %1, 0, %2;" : "=r"(t) : "r"(w), "n"(kHigh ? 0x3424 : 0x1404));
    d = (t & 0x80008000u) | ((t >> 1) & 0x3f803f80u);
    asm("mul.rn.f16x2 %0, %0, %1;" : "+r"(d) : "r"(0x5c005c00u));
#endif
  }
  return d;
}

}  // namespace gpuattn::q8
