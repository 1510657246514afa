// AppendKvArgs validated into plain params (host-side core: no CUDA headers), read by the CPU loop
// and the CUDA kernel alike.
#pragma once

#include <cstdint>

#include "core/mask.h"  // GPUATTN_HD
#include "core/rotary.h"
#include "gpuattn/kv_cache.h"

namespace gpuattn {

struct AppendParams {
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  const void* k_new = nullptr;
  const void* v_new = nullptr;
  // Element strides; for a paged cache the batch strides are the pool's page strides.
  std::int64_t kc_batch_stride = 0, kc_row_stride = 0, kc_head_stride = 0;
  std::int64_t vc_batch_stride = 0, vc_row_stride = 0, vc_head_stride = 0;
  std::int64_t kn_batch_stride = 0, kn_row_stride = 0, kn_head_stride = 0;
  std::int64_t vn_batch_stride = 0, vn_row_stride = 0, vn_head_stride = 0;
  const std::int32_t* cache_seqlens = nullptr;
  const std::int32_t* block_table = nullptr;  // nullptr: dense cache
  std::int64_t block_table_stride = 0;
  int page_size = 0;
  int num_pages = 0;
  int batch = 0;
  int seqlen_new = 0;
  int seqlen_k = 0;  // slots a sequence has: Sk, or max_pages * page_size
  int hkv = 0;
  int head_dim = 0;
  DType dtype = DType::f16;        // k_new / v_new
  DType cache_dtype = DType::f16;  // k_cache / v_cache: dtype, or a quantized cache (i8, e4m3)
  // A quantized cache's scales (nullptr: none): new element x of KV head hk is stored as x /
  // k_scale[hk * scale_stride] rounded (v: v_scale).
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  int scale_stride = 0;
  // Rotary tables (rotary_half 0: none): new key row r of sequence b rotated at position
  // cache_seqlens[b] + r, pair j's cos at rotary_cos[pos * rotary_cos_stride + j] (float32 when
  // rotary_f32, else k_new's dtype).
  const void* rotary_cos = nullptr;
  const void* rotary_sin = nullptr;
  std::int64_t rotary_cos_stride = 0, rotary_sin_stride = 0;
  int rotary_half = 0;
  int rotary_table = 0;  // S_ro
  bool rotary_f32 = false;
  bool rotary_interleaved = false;
  // q's rotation (AppendKvArgs::q), run beside the append; rotates_q false: none. The CPU backend
  // rotates q first. On CUDA, q apart from both caches is rotated in the append kernel's launch;
  // q_in_cache (q's memory may share elements with a cache the append writes): by the rotary
  // kernel in a launch before the append's.
  bool rotates_q = false;
  bool q_in_cache = false;
  RotaryParams q_rotary;
  Device device = Device::cpu;
  int device_index = 0;
  bool check_indices = true;

  // Element offset of cache slot j of sequence b, head hk (the table read from the caller's side).
  GPUATTN_HD std::int64_t kc_offset(int b, std::int64_t j, int hk) const {
    return slot_base(b, j, kc_batch_stride, kc_row_stride) + hk * kc_head_stride;
  }
  GPUATTN_HD std::int64_t vc_offset(int b, std::int64_t j, int hk) const {
    return slot_base(b, j, vc_batch_stride, vc_row_stride) + hk * vc_head_stride;
  }
  // Feature d < 2 * rotary_half of a rotated row: its pair's other feature, its pair index and
  // whether d is the pair's first (a c - b s) or second (a s + b c).
  GPUATTN_HD int rotary_partner(int d) const {
    return rotary_interleaved ? (d ^ 1) : d < rotary_half ? d + rotary_half : d - rotary_half;
  }
  GPUATTN_HD int rotary_pair(int d) const {
    return rotary_interleaved ? d / 2 : d < rotary_half ? d : d - rotary_half;
  }
  GPUATTN_HD bool rotary_first(int d) const {
    return rotary_interleaved ? d % 2 == 0 : d < rotary_half;
  }
  GPUATTN_HD std::int64_t slot_base(int b, std::int64_t j, std::int64_t batch_stride,
                                    std::int64_t row_stride) const {
    if (block_table == nullptr) return b * batch_stride + j * row_stride;
    const std::int64_t page = block_table[b * block_table_stride + j / page_size];
    return page * batch_stride + (j % page_size) * row_stride;
  }
};

// Validates everything that needs no device memory (cache_seqlens and the table are checked here
// when they live on the host). Throws gpuattn::Error naming the offending value.
AppendParams make_append_params(const AppendKvArgs& args);

// Checks host copies of cache_seqlens (`used`) and, for a paged cache, the table (packed, max_pages
// entries a row): used[b] + seqlen_new <= seqlen_k, the pages the new rows land in are in
// [0, num_pages), and with rotary tables every new row's position (and q's rows') is under
// rotary_table.
void check_append_indices(const AppendParams& p, const std::int32_t* used,
                          const std::int32_t* table);

}  // namespace gpuattn
