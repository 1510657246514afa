// Writing into a KV cache: the append step of generation (flash-attn's
// flash_attn_with_kvcache(k=, v=), vLLM's reshape_and_cache).
#pragma once

#include "gpuattn/attention.h"

namespace gpuattn {

// Arguments of one append: for every sequence b, rows [0, Snew) of k_new / v_new become keys
// cache_seqlens[b] .. cache_seqlens[b] + Snew - 1 of its cache, in place.
//
// Cache: k_cache / v_cache [B, Sk, Hkv, D] (a dense cache of Sk slots a sequence), or with
//        block_table a page pool [num_pages, page_size, Hkv, D] (any page_size) and block_table
//        int32 [B, max_pages] as in AttentionArgs::block_table (Sk = max_pages * page_size).
// New:   k_new / v_new [B, Snew, Hkv, D], the cache's dtype (f16, bf16; f32 on the CPU backend).
// A quantized cache (int8 or FP8 E4M3, AttentionArgs::k_scale): k_new / v_new are f16 or bf16 (f32
//        too on the CPU) and k_scale / v_scale float32 [Hkv] or [1] (the two of one shape and
//        stride; positive and finite, on the cache's device; checked on a host copy on CUDA when
//        check_indices is set): element x of KV head hk is stored as x / k_scale[hk] (v_scale for
//        V), rounded to nearest even and saturated (e4m3 to +-448, NaN stays NaN; int8 to [-127,
//        127], NaN becomes 0).
// cache_seqlens: int32 [B], the keys each sequence holds before the append; it is not updated (the
//        attention call after an append passes cache_seqlens + Snew as its seqused_k, as flash-attn
//        does internally). cache_seqlens[b] + Snew must be <= Sk.
// Strides and alignment as for attention operands (last dimension contiguous, other strides
// multiples of 16 bytes, 16-byte aligned pointers). Everything on one device.
// Rotary (optional; flash_attn_with_kvcache(rotary_cos=, rotary_sin=)): with rotary_cos and
//        rotary_sin ([S_ro, R / 2], k_new's dtype or float32, 2 <= R <= D) new key row r of
//        sequence b is rotated at position cache_seqlens[b] + r before it is stored (and
//        quantized), exactly as gpuattn::apply_rotary rotates it (gpuattn/rotary.h: pairs (2j,
//        2j + 1) when rotary_interleaved, else (j, j + R / 2); the same bits); V is stored as
//        given. With q and q_out as well ([B, Sq, Hq, D], k_new's dtype, on the caches' device,
//        last dimension contiguous, any other strides, aligned to their elements; q_out may be q
//        itself, else apart from every other view; q may lie in a cache: it is read before the
//        append writes), q_out = q rotated in the same call: query row i of
//        sequence b at cache_seqlens[b] + i, or cache_seqlens[b] for every row when
//        q_same_position (flash-attn's rule for a call without a causal mask or window). Every
//        position must be < S_ro, checked with cache_seqlens (one host copy for both).
// On CUDA, cache_seqlens and the table entries the append writes through are checked on a host
// copy (a stream synchronization; with k_scale / v_scale, on the same one) unless check_indices is
// false (then trusted; the call stays asynchronous and can be captured into a CUDA graph; a checked
// call on a capturing stream is refused, naming check_indices). Every bad input is an
// invalid_argument naming the offending value, with the caches untouched.
struct AppendKvArgs {
  TensorView k_cache, v_cache;
  TensorView k_new, v_new;
  TensorView cache_seqlens;
  TensorView block_table;       // optional: a paged cache
  TensorView k_scale, v_scale;  // a quantized cache only
  TensorView rotary_cos, rotary_sin;  // optional: the new keys rotated
  bool rotary_interleaved = false;
  TensorView q, q_out;  // optional, with the tables: q rotated into q_out
  bool q_same_position = false;
  bool check_indices = true;
  Backend backend = Backend::automatic;
  void* stream = nullptr;  // cudaStream_t for the CUDA backend
};

void append_kv(const AppendKvArgs& args);

}  // namespace gpuattn
