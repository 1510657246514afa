// TMA tensor maps of the attention operands (host side).
#pragma once

#include <cuda.h>

#include <cstdint>

#include "core/fwd_params.h"

namespace gpuattn {

struct QkvTensorMaps {
  CUtensorMap q, k, v;
  union {
    CUtensorMap o;  // dense: out (the kernel stores O through it)
    // Varlen (out stored by the threads): V's rows once more, through a map whose tiles end at a
    // sequence's end, zeros past it. Dims (head dim, head, rows_kv, total_k + 1) over
    // v - rows_kv rows, the last two dims one row apart each: the box at (c, h, rows_kv - r, end)
    // holds rows end - r .. end - 1, then zeros (dim 2 ends after r of its rows).
    CUtensorMap v_tail;
  };
};

// Describes q, k, v and out as 4-D tensors (head dim, head, row, batch) with their strides
// (varlen: batch 1, rows = the packed total, or 1 where it is 0) and a box of 64 elements x 1 head
// x `rows_q` / `rows_kv` / `rows_o` rows, 128-byte swizzled: one box fills (or, for out, is stored
// from) one 128-byte-wide column slab of a tile in shared memory. Throws gpuattn::Error(cuda_error)
// when the driver rejects a map.
QkvTensorMaps make_qkv_tensor_maps(const FwdParams& p, int rows_q, int rows_kv, int rows_o);

// The stride a tensor map takes for a dim of `size`: its own, but for a size-1 dim (whose stride
// is never used, its coordinate always 0, and may be 0 or past what a map holds: 2^40 bytes;
// strides_fit_tma bounds only the others) or a stride of 0, the packed layout's (`packed`).
inline std::int64_t map_stride(std::int64_t stride, std::int64_t size, std::int64_t packed) {
  return size > 1 && stride > 0 ? stride : packed;
}

// How one operand's elements sit in a rows map (see make_rows_map): the element type and size,
// the box's width in elements (dim 0) and the swizzle the kernel's descriptors read with.
struct RowsMapFormat {
  CUtensorMapDataType type;
  int elem_bytes;
  std::uint32_t box_cols;
  CUtensorMapSwizzle swizzle;
};

// One operand as a 4-D map: dims (head dim, head, row, batch) of `format`'s elements, its element
// strides through map_stride, `rows` at least 1 (a map cannot have a dimension of 0; no tile reads
// the extra row), and a box of format.box_cols elements x 1 head x `box_rows` rows. The 16-bit
// and FP8 kernels' maps are all built with it.
CUtensorMap make_rows_map(const char* name, const void* base, const RowsMapFormat& format,
                          int head_dim, int heads, std::int64_t rows, int batch,
                          std::int64_t head_stride, std::int64_t row_stride,
                          std::int64_t batch_stride, int box_rows);

// A 16-bit operand of `dtype` (f16 or bf16): boxes of 64 elements (one 128-byte-wide column
// slab), 128-byte swizzled. make_qkv_tensor_maps builds its maps with it.
CUtensorMap make_rows_map(const char* name, const void* base, DType dtype, int head_dim, int heads,
                          std::int64_t rows, int batch, std::int64_t head_stride,
                          std::int64_t row_stride, std::int64_t batch_stride, int box_rows);

// A 4-D tiled map of `type` elements over `base` (dims innermost first; byte strides of dims 1..3,
// each a multiple of 16), box `box`, swizzled by `swizzle` (128 bytes unless asked; box[0]
// elements must span at most the swizzle's width), out-of-bounds elements read as zero. Throws
// gpuattn::Error(cuda_error), naming `name`, when the driver rejects it.
CUtensorMap make_tensor_map_4d(const char* name, const void* base, CUtensorMapDataType type,
                               const std::uint64_t (&dims)[4],
                               const std::uint64_t (&byte_strides)[3],
                               const std::uint32_t (&box)[4],
                               CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B);

}  // namespace gpuattn
