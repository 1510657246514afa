#include "cpu/cpu_rotary.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gpuattn/numeric.h"

namespace gpuattn {
namespace {

void store(void* base, DType t, std::int64_t i, float v) {
  switch (t) {
    case DType::f16: static_cast<std::uint16_t*>(base)[i] = float_to_f16(v); break;
    case DType::bf16: static_cast<std::uint16_t*>(base)[i] = float_to_bf16(v); break;
    default: static_cast<float*>(base)[i] = v; break;  // f32: make_rotary_params allows no other
  }
}

}  // namespace

// Each row is read whole before it is written (out may be x). The pair's two products are rounded
// as the CUDA kernel rounds them (one fma each), so both backends give the same bits.
void cpu_apply_rotary(const RotaryParams& p) {
  std::vector<float> row(static_cast<std::size_t>(p.head_dim));
  for (int b = 0; b < p.batch; ++b) {
    const std::int64_t offset = p.seqlen_offsets != nullptr ? p.seqlen_offsets[b] : p.seqlen_offset;
    // A varlen sequence is rows cu_seqlens[b] .. cu_seqlens[b + 1] - 1 of x (batch strides 0).
    const int first = p.cu_seqlens != nullptr ? p.cu_seqlens[b] : 0;
    const int rows = p.cu_seqlens != nullptr ? p.cu_seqlens[b + 1] - first : p.seqlen;
    for (int i = 0; i < rows; ++i) {
      const std::int64_t pos = p.position(offset, i);
      const std::int64_t r = first + i;
      for (int h = 0; h < p.heads; ++h) {
        const std::int64_t xo = b * p.x_batch_stride + r * p.x_row_stride + h * p.x_head_stride;
        const std::int64_t oo = b * p.o_batch_stride + r * p.o_row_stride + h * p.o_head_stride;
        for (int d = 0; d < p.head_dim; ++d) row[d] = element_to_float(p.x, p.dtype, xo + d);
        for (int j = 0; j < p.half; ++j) {
          const float c = element_to_float(p.cos, p.table_dtype, pos * p.cos_stride + j);
          const float s = element_to_float(p.sin, p.table_dtype, pos * p.sin_stride + j);
          const float x1 = row[p.first(j)], x2 = row[p.second(j)];
          store(p.out, p.dtype, oo + p.first(j), std::fma(x1, c, -(x2 * s)));
          store(p.out, p.dtype, oo + p.second(j), std::fma(x1, s, x2 * c));
        }
        if (!p.in_place) {
          for (int d = 2 * p.half; d < p.head_dim; ++d) store(p.out, p.dtype, oo + d, row[d]);
        }
      }
    }
  }
}

}  // namespace gpuattn
