#include "cpu/cpu_append_kv.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/rotary.h"
#include "cpu/cpu_rotary.h"
#include "gpuattn/numeric.h"

namespace gpuattn {
namespace {

// Row `src` (head_dim elements of p.dtype) quantized into `dst` of p.cache_dtype: x / scale,
// rounded to nearest even and saturated.
void quantize_row(const AppendParams& p, const void* src, std::int64_t src_off, void* dst,
                  std::int64_t dst_off, float scale) {
  for (int d = 0; d < p.head_dim; ++d) {
    const float x = element_to_float(src, p.dtype, src_off + d) / scale;
    if (p.cache_dtype == DType::i8) {
      static_cast<std::int8_t*>(dst)[dst_off + d] = float_to_i8(x);
    } else {
      static_cast<std::uint8_t*>(dst)[dst_off + d] = float_to_e4m3(x);
    }
  }
}

}  // namespace

void cpu_append_kv(const AppendParams& params) {
  if (params.rotates_q) cpu_apply_rotary(params.q_rotary);  // first: q may lie in a cache
  // With rotary tables the new keys are rotated first, into a packed copy, by the rotation
  // apply_rotary runs (the same bits), at positions cache_seqlens[b] + r.
  AppendParams p = params;
  std::vector<std::uint32_t> rotated;
  if (params.rotary_half > 0) {
    const std::int64_t row_elems = static_cast<std::int64_t>(p.hkv) * p.head_dim;
    rotated.resize(static_cast<std::size_t>(
        (static_cast<std::int64_t>(p.batch) * p.seqlen_new * row_elems * element_size(p.dtype) + 3) /
        4));
    RotaryParams r;
    r.x = p.k_new;
    r.out = rotated.data();
    r.cos = p.rotary_cos;
    r.sin = p.rotary_sin;
    r.seqlen_offsets = p.cache_seqlens;
    r.x_batch_stride = p.kn_batch_stride;
    r.x_row_stride = p.kn_row_stride;
    r.x_head_stride = p.kn_head_stride;
    r.o_batch_stride = p.seqlen_new * row_elems;
    r.o_row_stride = row_elems;
    r.o_head_stride = p.head_dim;
    r.cos_stride = p.rotary_cos_stride;
    r.sin_stride = p.rotary_sin_stride;
    r.batch = p.batch;
    r.seqlen = p.seqlen_new;
    r.heads = p.hkv;
    r.head_dim = p.head_dim;
    r.half = p.rotary_half;
    r.table = p.rotary_table;
    r.dtype = p.dtype;
    r.table_dtype = p.rotary_f32 ? DType::f32 : p.dtype;
    r.interleaved = p.rotary_interleaved;
    cpu_apply_rotary(r);
    p.k_new = rotated.data();
    p.kn_batch_stride = r.o_batch_stride;
    p.kn_row_stride = r.o_row_stride;
    p.kn_head_stride = r.o_head_stride;
  }
  const std::size_t es = element_size(p.dtype), row = static_cast<std::size_t>(p.head_dim) * es;
  auto* kc = static_cast<char*>(p.k_cache);
  auto* vc = static_cast<char*>(p.v_cache);
  const auto* kn = static_cast<const char*>(p.k_new);
  const auto* vn = static_cast<const char*>(p.v_new);
  const bool quantized = p.k_scale != nullptr;
  for (int b = 0; b < p.batch; ++b) {
    for (int i = 0; i < p.seqlen_new; ++i) {
      const std::int64_t j = static_cast<std::int64_t>(p.cache_seqlens[b]) + i;
      for (int h = 0; h < p.hkv; ++h) {
        const std::int64_t ko = b * p.kn_batch_stride + i * p.kn_row_stride + h * p.kn_head_stride;
        const std::int64_t vo = b * p.vn_batch_stride + i * p.vn_row_stride + h * p.vn_head_stride;
        if (quantized) {
          quantize_row(p, kn, ko, kc, p.kc_offset(b, j, h), p.k_scale[h * p.scale_stride]);
          quantize_row(p, vn, vo, vc, p.vc_offset(b, j, h), p.v_scale[h * p.scale_stride]);
          continue;
        }
        std::memcpy(kc + p.kc_offset(b, j, h) * es, kn + ko * es, row);
        std::memcpy(vc + p.vc_offset(b, j, h) * es, vn + vo * es, row);
      }
    }
  }
}

}  // namespace gpuattn
