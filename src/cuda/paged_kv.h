// Copies between KV caches and contiguous K/V: a paged cache (FwdParams::block_table) gathered into
// a contiguous one, for the CUDA calls whose kernels read K/V by row strides (every call but
// decode_16x64's, which reads pages in place), and new keys and values appended to a cache; and
// an FP8 call's q dequantized (its 8-bit conversions are the cache's).
#pragma once

#include <cuda_runtime.h>

#include "core/append_kv.h"
#include "core/fwd_params.h"

namespace gpuattn::paged {

// Copies logical keys [key_start(b), keys_end(b)) of every sequence b of call p (paged, or a
// quantized cache, or both) into rows of the same numbers of k_out / v_out, dense [B, rows, Hkv,
// D] of p's dtype (row stride Hkv * D; a quantized cache dequantized with its scales); rows >=
// every keys_end(b). Other rows are left as they are (the copy's call keeps p's seqused_k and
// leftpad_k, so it reads the copied rows only). The block table must have been checked. (A varlen call passes a copy of p
// with batch 1, no cu_seqlens and seqlen_k = rows = total_k: its packed rows as they are.)
void gather(const FwdParams& p, void* k_out, void* v_out, int rows, cudaStream_t stream);

// An FP8 call's q (p.q_scale) dequantized into q_out, dense [total_q, Hq, D] of p's dtype (f16 or
// bf16): element x of head h becomes x * q_scale[h], rounded once.
void dequantize_q(const FwdParams& p, void* q_out, cudaStream_t stream);

// The grid of a grid-stride loop over `items` of 256 threads: one block per 256, at most 65536
// (these copy kernels and the rotary kernel).
unsigned grid_for(std::int64_t items);

// gpuattn::append_kv on the device: row i of every sequence b of p.k_new / p.v_new into cache slot
// cache_seqlens[b] + i (through the block table for a paged cache), the new keys rotated with
// the rotary tables when given; with p.rotates_q, q rotated too: in the same launch, or (where q
// may share memory with a cache, p.q_in_cache) by the rotary kernel first. The indices must have
// been checked (or be trusted).
void append(const AppendParams& p, cudaStream_t stream);

}  // namespace gpuattn::paged
