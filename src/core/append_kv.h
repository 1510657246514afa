// AppendKvArgs validated into plain params (host-side core: no CUDA headers), read by the CPU loop
// and the CUDA kernel alike.
#pragma once

#include <cstdint>

#include "core/mask.h"  // GPUATTN_HD
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
// entries a row): used[b] + seqlen_new <= seqlen_k, and the pages the new rows land in are in
// [0, num_pages).
void check_append_indices(const AppendParams& p, const std::int32_t* used,
                          const std::int32_t* table);

}  // namespace gpuattn
