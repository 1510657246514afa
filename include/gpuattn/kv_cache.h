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
// cache_seqlens: int32 [B], the keys each sequence holds before the append; it is not updated (the
//        attention call after an append passes cache_seqlens + Snew as its seqused_k, as flash-attn
//        does internally). cache_seqlens[b] + Snew must be <= Sk.
// Strides and alignment as for attention operands (last dimension contiguous, other strides
// multiples of 16 bytes, 16-byte aligned pointers). Everything on one device.
// On CUDA, cache_seqlens and the table entries the append writes through are checked on a host
// copy (a stream synchronization) unless check_indices is false (then trusted; the call stays
// asynchronous and can be captured into a CUDA graph). Every bad input is an invalid_argument
// naming the offending value, with the caches untouched.
struct AppendKvArgs {
  TensorView k_cache, v_cache;
  TensorView k_new, v_new;
  TensorView cache_seqlens;
  TensorView block_table;  // optional: a paged cache
  bool check_indices = true;
  Backend backend = Backend::automatic;
  void* stream = nullptr;  // cudaStream_t for the CUDA backend
};

void append_kv(const AppendKvArgs& args);

}  // namespace gpuattn
