// Rotary position embedding (RoPE): the rotation flash-attn applies to q and the new keys in
// flash_attn_with_kvcache(rotary_cos=, rotary_sin=), and that its apply_rotary_emb applies alone.
#pragma once

#include <cstdint>

#include "gpuattn/attention.h"

namespace gpuattn {

// out = x with the first R = 2 * cos.shape[1] features of every row rotated by its position's
// angles; features R .. D - 1 are x's unchanged.
//
// x, out:  [B, S, H, D], float16 or bfloat16 (float32 too on the CPU backend), last dimension
//          contiguous, any other strides. Varlen (cu_seqlens given): [total, H, D], the B
//          sequences packed along the first dimension. out is x itself (the same view: in place) or memory
//          that overlaps none of x, cos, sin and seqlen_offsets.
// cos, sin: [S_ro, R / 2], the rotation's table by position: x's dtype or float32, last dimension
//          contiguous, the two of one shape. 2 <= R <= D.
// Positions: row i of sequence b is at position p = o_b + i, or o_b for every row when
//          same_position (flash-attn's rotation of a non-causal call's queries), where o_b is
//          seqlen_offsets[b] (int32 [B], on x's device) or `seqlen_offset` when seqlen_offsets is
//          absent. Every position a row takes must be in [0, S_ro).
// Varlen:  cu_seqlens (int32 [B + 1], on x's device) rising from 0 to total: sequence b is rows
//          cu_seqlens[b] .. cu_seqlens[b + 1] - 1 of x, its row i at position o_b + i (o_b when
//          same_position). Sequences of no rows are allowed. max_seqlen (>= 0; -1: none), when
//          given, must bound every sequence's length (flash-attn's hint). One launch for the
//          whole batch.
// Feature pairs: (2j, 2j + 1) when interleaved (GPT-J), else (j, j + R / 2) (GPT-NeoX); with
//          c = cos[p][j], s = sin[p][j], a pair (a, b) becomes (a c - b s, a s + b c), in float32,
//          rounded once to out's dtype.
// A seqlen_offset (a host value) is always checked (a trusted varlen call's: in [0, S_ro), the
// lengths being on the device). On CUDA seqlen_offsets and cu_seqlens are checked on host copies
// (one stream synchronization) unless check_indices is false (then trusted: the call stays
// asynchronous and can be captured into a CUDA graph; a checked call with either array on a
// capturing stream is refused, naming check_indices). Every bad input is an invalid_argument
// naming the offending value, with out untouched.
struct RotaryArgs {
  TensorView x, out;
  TensorView cos, sin;
  TensorView seqlen_offsets;  // optional
  std::int64_t seqlen_offset = 0;
  TensorView cu_seqlens;         // optional: varlen x and out
  std::int64_t max_seqlen = -1;  // with cu_seqlens: a bound on every length, or -1
  bool interleaved = false;
  bool same_position = false;
  bool check_indices = true;
  Backend backend = Backend::automatic;
  void* stream = nullptr;  // cudaStream_t for the CUDA backend
};

void apply_rotary(const RotaryArgs& args);

}  // namespace gpuattn
