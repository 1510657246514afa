// Token sampling shared by the CPU and CUDA backends: the per-row parameters, the counter-based
// Gumbel noise (a pure function of seed, request, position and token, so a draw does not depend on
// the batch it runs in), and the host sampler. The CUDA kernel follows the same definition.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GPUATTN_HD_INLINE __host__ __device__ inline
#else
#define GPUATTN_HD_INLINE inline
#endif

namespace gpuattn::engine {

// One row of a sampling call (plain data: copied to the device as is).
struct SampleRow {
  float temperature = 0.0f;  // 0: greedy
  int top_k = 0;             // 0: all
  float top_p = 1.0f;        // 1: all
  std::uint32_t pad = 0;
  std::uint64_t seed = 0;
  std::int64_t request = 0;
  std::int64_t position = 0;  // of the token being drawn
};

GPUATTN_HD_INLINE std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A uniform in (0, 1) from the top 23 bits of a hash: (k + 0.5) / 2^23, in [2^-24, 1 - 2^-24]. With
// 24 bits, k = 2^24 - 1 gave 16777215.5f, which rounds to 2^24: u = 1, a Gumbel score of +inf,
// and a token drawn whatever its logit (one draw in 2^24: 0.3% of GPT-2 tokens at top_k 0).
GPUATTN_HD_INLINE float uniform_of_bits(std::uint64_t h) {
  return (static_cast<float>(h >> 41) + 0.5f) * (1.0f / 8388608.0f);
}

// The uniform of (seed, request, position, token).
GPUATTN_HD_INLINE float uniform01(const SampleRow& r, std::int32_t token) {
  std::uint64_t h = mix64(r.seed + 0x9e3779b97f4a7c15ull);
  h = mix64(h ^ static_cast<std::uint64_t>(r.request));
  h = mix64(h ^ static_cast<std::uint64_t>(r.position));
  h = mix64(h ^ static_cast<std::uint64_t>(static_cast<std::uint32_t>(token)));
  return uniform_of_bits(h);
}

// The token a sampler returns for a row it cannot draw from: a logit NaN or +inf, or every logit
// -inf (-inf alone is a token never drawn). The engine names the request and position.
constexpr std::int32_t kBadLogits = -2;

// Floats as integers in the same order (for an exact k-th largest by bisection over bits).
GPUATTN_HD_INLINE std::int32_t ordered_bits(float f) {
  std::int32_t i;
#if defined(__CUDA_ARCH__)
  i = __float_as_int(f);
#else
  __builtin_memcpy(&i, &f, 4);
#endif
  return i >= 0 ? i : static_cast<std::int32_t>(0x80000000u - static_cast<std::uint32_t>(i));
}

// The token one row draws from logits[0, V) (fp32), on the host:
//   kBadLogits if a logit is NaN or +inf, or all are -inf;
//   temperature 0: the argmax (ties: the lower id);
//   otherwise z = (logits - max logit) / temperature (at most 0, so no temperature overflows it:
//   a tiny one draws among the maxima); the kept set is {z >= the top_k-th largest z} (all when
//   top_k is 0 or >= V), then within it {z >= t} for the largest logit value t whose kept
//   softmax mass reaches top_p; the token is argmax over the kept set of z + Gumbel noise
//   -log(-log(uniform01)) (ties: the lower id).
std::int32_t sample_row_host(const float* logits, int V, const SampleRow& row);

}  // namespace gpuattn::engine
