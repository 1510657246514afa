// RotaryArgs validated into plain params (host-side core: no CUDA headers), read by the CPU loop
// and the CUDA kernel alike.
#pragma once

#include <cstdint>

#include "core/mask.h"  // GPUATTN_HD
#include "gpuattn/rotary.h"

namespace gpuattn {

struct RotaryParams {
  const void* x = nullptr;
  void* out = nullptr;
  const void* cos = nullptr;
  const void* sin = nullptr;
  const std::int32_t* seqlen_offsets = nullptr;  // nullptr: seqlen_offset for every sequence
  std::int64_t seqlen_offset = 0;
  // Varlen: [batch + 1] row bounds of the packed sequences (seqlen is then x's total rows and the
  // batch strides 0); nullptr: every sequence is seqlen rows of its own batch entry.
  const std::int32_t* cu_seqlens = nullptr;
  std::int64_t max_seqlen = -1;
  // Element strides of x and out ([B, S, H, D] or varlen [total, H, D], the last 1) and of the
  // tables' rows.
  std::int64_t x_batch_stride = 0, x_row_stride = 0, x_head_stride = 0;
  std::int64_t o_batch_stride = 0, o_row_stride = 0, o_head_stride = 0;
  std::int64_t cos_stride = 0, sin_stride = 0;
  int batch = 0, seqlen = 0, heads = 0, head_dim = 0;
  int half = 0;    // R / 2: the pairs a row rotates
  int table = 0;   // S_ro: the positions the tables hold
  DType dtype = DType::f16;        // x and out
  DType table_dtype = DType::f16;  // cos and sin: dtype or f32
  bool interleaved = false;
  bool same_position = false;
  bool in_place = false;
  bool check_indices = true;
  Device device = Device::cpu;
  int device_index = 0;

  // The rows the call rotates: the packed total of a varlen call, else batch * seqlen.
  GPUATTN_HD std::int64_t rows() const {
    return cu_seqlens != nullptr ? seqlen : static_cast<std::int64_t>(batch) * seqlen;
  }
  // The position of row i of sequence b, given its offset.
  GPUATTN_HD std::int64_t position(std::int64_t offset, int i) const {
    return same_position ? offset : offset + i;
  }
  // The feature indices of pair j.
  GPUATTN_HD int first(int j) const { return interleaved ? 2 * j : j; }
  GPUATTN_HD int second(int j) const { return interleaved ? 2 * j + 1 : j + half; }
};

// The names a caller's errors give the rotation's operands.
struct RotaryNames {
  const char* fn;     // "gpuattn::apply_rotary"
  const char* cos;    // "cos"
  const char* sin;    // "sin"
  const char* x;      // the rotated operand, "x"
  const char* where;  // the operand whose device the tables must share
};

// The tables of a rotation of rows of `x_dtype` and `head_dim` features: cos and sin [S_ro, R / 2],
// of x_dtype or float32, one shape, R <= head_dim, on `where`'s device. Throws invalid_argument
// naming the bad value.
void check_rotary_tables(const TensorView& cos, const TensorView& sin, DType x_dtype,
                         std::int64_t head_dim, const TensorView& where, const RotaryNames& names);

// Validates everything that needs no device memory (seqlen_offsets is checked here when it lives
// on the host). Throws gpuattn::Error naming the offending value.
RotaryParams make_rotary_params(const RotaryArgs& args);

// Checks host copies of the offsets (`offsets`, batch entries; nullptr: p.seqlen_offset for every
// sequence) and, for a varlen call, of cu_seqlens (`cu`, batch + 1 entries): the bounds rise from
// 0 to the total rows within max_seqlen, and every position a row takes is in [0, p.table).
void check_rotary_indices(const RotaryParams& p, const std::int32_t* offsets,
                          const std::int32_t* cu);

}  // namespace gpuattn
