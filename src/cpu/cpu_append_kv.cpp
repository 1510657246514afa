#include "cpu/cpu_append_kv.h"

#include <cstdint>
#include <cstring>

namespace gpuattn {

void cpu_append_kv(const AppendParams& p) {
  const std::size_t es = element_size(p.dtype), row = static_cast<std::size_t>(p.head_dim) * es;
  auto* kc = static_cast<char*>(p.k_cache);
  auto* vc = static_cast<char*>(p.v_cache);
  const auto* kn = static_cast<const char*>(p.k_new);
  const auto* vn = static_cast<const char*>(p.v_new);
  for (int b = 0; b < p.batch; ++b) {
    for (int i = 0; i < p.seqlen_new; ++i) {
      const std::int64_t j = static_cast<std::int64_t>(p.cache_seqlens[b]) + i;
      for (int h = 0; h < p.hkv; ++h) {
        std::memcpy(kc + p.kc_offset(b, j, h) * es,
                    kn + (b * p.kn_batch_stride + i * p.kn_row_stride + h * p.kn_head_stride) * es,
                    row);
        std::memcpy(vc + p.vc_offset(b, j, h) * es,
                    vn + (b * p.vn_batch_stride + i * p.vn_row_stride + h * p.vn_head_stride) * es,
                    row);
      }
    }
  }
}

}  // namespace gpuattn
