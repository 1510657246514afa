// Weight-only int8 linears (LinearWeights::int8, gpt2.h): the quantizer and the layout a backend
// stores them in.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpuattn::engine {

// W [K, N] (row-major, y = x W) into q int8 [K, N] and scales fp32 [K / kGpt2Q8Group, N]:
// scale = the group-column's largest |w| / 127 (0 for an all-zero group), q = w / scale rounded
// to nearest (ties away from zero), so |q| <= 127 and |q * scale - w| <= scale / 2.
// invalid_argument naming K when it is not a positive multiple of kGpt2Q8Group, or N when it is
// not positive; a non-finite weight is an invalid_argument naming its row and column.
void quantize_q8(const float* W, int K, int N, std::int8_t* q, float* scales);

// One block of backend memory a linear: q [K, N] first, then the scales from this byte offset
// (q's size rounded up to 16 bytes).
std::size_t q8_scales_offset(int K, int N);
std::size_t q8_bytes(int K, int N);

}  // namespace gpuattn::engine
