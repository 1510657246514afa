// Weight-only int8 and int4 linears (LinearWeights::int8 / int4, gpt2.h): the quantizers and the
// layouts a backend stores them in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpuattn/gpt2.h"

namespace gpuattn::engine {

// W [K, N] (row-major, y = x W) into q int8 [K, N] and scales fp32 [K / kGpt2Q8Group, N]:
// scale = the group-column's largest |w| / 127 (0 for an all-zero group, and for one whose largest
// |w| is under 127 x FLT_MIN, about 1.5e-36, where the scale would be subnormal; one float below
// when 127 x scale would overflow), q = w / scale rounded to nearest (ties away from zero), so
// |q| <= 127 and |q * scale - w| <= scale / 2 (up to the float division's rounding).
// invalid_argument naming K when it is not a positive multiple of kGpt2Q8Group, or N when it is
// not positive; a non-finite weight is an invalid_argument naming its row and column (the first
// in row-major order), and q and scales are then left partly written. Past 2^20 weights the
// groups are spread over up to 16 threads, with the same results.
void quantize_q8(const float* W, int K, int N, std::int8_t* q, float* scales);

// The shape checks quantize_q8 / quantize_q4 make, alone (for callers that size buffers from K
// and N first): invalid_argument naming K when it is not a positive multiple of kGpt2Q8Group, or N
// when it is not positive; `what` ("int8", "int4") starts the message.
void check_quantized_shape(int K, int N, const char* what);

// One block of backend memory a linear: q [K, N] first, then the scales from this byte offset
// (q's size rounded up to 16 bytes).
std::size_t q8_scales_offset(int K, int N);
std::size_t q8_bytes(int K, int N);

// The CUDA backend's order of q, for its tensor-core int8 kernel (engine/cuda/skinny.cu): W^T in
// 16-column tiles as mma.m16n8k16's A operand (16 columns x 16 rows of W a k-step). Bytes
// [N16 / 16][K / 32][32 lanes][16]: lane l's 16 bytes are its A fragments of k-steps 2s and 2s + 1,
// 8 bytes each, in register order: with g = l / 4, t = l % 4 and the tile's columns c, its rows
// of the step k, register r (0-3) holds columns c0 + g + 8 (r % 2), rows k0 + 2t + 8 (r / 2) and
// the next row, low byte first. N16 is N rounded up to 16 (columns past N are zeros), so the block
// is K * N16 bytes, and the scales follow at q8_mma_scales_offset. invalid_argument naming K when
// it is not a positive multiple of 32 or N when it is not positive.
void shuffle_q8_mma(const std::int8_t* q, int K, int N, std::int8_t* out);
std::size_t q8_mma_scales_offset(int K, int N);
std::size_t q8_mma_bytes(int K, int N);

// Int4 (LinearWeights::int4): as quantize_q8 with 7 for 127: scale = the group-column's largest
// |w| / 7, q = w / scale rounded to nearest (ties away from zero), |q| <= 7, one byte a value.
// The same errors, naming int4.
void quantize_q4(const float* W, int K, int N, std::int8_t* q, float* scales);

// The CPU backend's int4 block (ModelOps::upload_q4_weights): q + 8 two values a byte, rows 2j
// (low nibble) and 2j + 1 of a column in byte j * N + n, [K / 2, N] bytes, then the scales
// [K / 64, N] fp32 from q4_scales_offset (16 bytes aligned). pack_q4_rows writes the first part:
// invalid_argument naming K when it is not a positive even number, N when it is not positive, or
// the first value outside [-7, 7] (row and column).
void pack_q4_rows(const std::int8_t* q, int K, int N, std::uint8_t* out);
std::size_t q4_scales_offset(int K, int N);
std::size_t q4_bytes(int K, int N);

// The CUDA backend's order of int4 q (values in [-7, 7]), for its tensor-core kernel: W^T in
// 16-column tiles as mma.m16n8k16's A operand, as shuffle_q8_mma's, two values a byte. Bytes
// [N16 / 16][K / 64][32 lanes][16]: lane l's 16 bytes are its A fragments of the 4 k-steps of a
// 64-row group (one scale), a 32-bit word a k-step. In k-step j's word, the register r (0-3) of
// shuffle_q8_mma's order holds its low-row value in nibble r (bits 4r..4r+3) and its high-row value
// in nibble r + 4, each stored as q + 8 (1-15): so (word >> 4r) & 0x000F000F puts register r's two
// values in the low bits of two 16-bit halves. Columns past N are q = 0 (nibble 8). The block is
// K * N16 / 2 bytes, the scales ([K / 64, N] fp32) following at q4_mma_scales_offset.
// invalid_argument naming K when it is not a positive multiple of 64, N when it is not positive,
// or the first value outside [-7, 7] (its row and column).
void shuffle_q4_mma(const std::int8_t* q, int K, int N, std::uint8_t* out);
std::size_t q4_mma_scales_offset(int K, int N);
std::size_t q4_mma_bytes(int K, int N);

// The output head as a linear's W (EngineOptions::head_weights): wte [V, C] transposed into
// [C, Vp], Vp = padded_vocab(V) (model_ops.h) with zero columns past V, so that the logits are
// x W, and a linear's groups of 64 rows are 64 features of a token's row. invalid_argument naming
// the token and feature of the first non-finite value of wte (row-major order), or V or C where
// it is not positive.
std::vector<float> head_linear(const float* wte, int V, int C);
// wte [V, C] replaced by the values a head stored as `w` computes with (int8 / int4: head_linear's
// W quantized, dequantized and transposed back; dense: unchanged). The errors of head_linear, and
// of the quantizer (C not a multiple of 64).
void round_trip_head(std::vector<float>& wte, int V, int C, LinearWeights w);

}  // namespace gpuattn::engine
