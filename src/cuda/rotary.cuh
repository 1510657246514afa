// One work item of the rotary embedding on the device: shared by the rotary kernel (rotary.cu) and
// the append kernel (paged_kv.cu), which rotates an append's q beside its new keys in one launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/rotary.h"
#include "cuda/half_convert.cuh"

namespace gpuattn::rotary {

template <typename T>
__device__ __forceinline__ float load(const void* base, std::int64_t i) {
  return cvt::to_f(static_cast<const T*>(base)[i]);
}
template <>
__device__ __forceinline__ float load<float>(const void* base, std::int64_t i) {
  return static_cast<const float*>(base)[i];
}

// The sequence that holds packed row `row`: the last b with cu[b] <= row (cu rises from 0 over
// batch + 1 bounds; sequences of no rows share a bound with the next, which is the one found).
__device__ __forceinline__ int sequence_of(const std::int32_t* cu, int batch, std::int64_t row) {
  int lo = 0, hi = batch - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (cu[mid] <= row) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// A row's slots: its pairs, and without in_place the features past them, copied.
__host__ __device__ __forceinline__ int slots_of(const RotaryParams& p) {
  return p.half + (p.in_place ? 0 : p.head_dim - 2 * p.half);
}

// The call's work items: a slot of every row and head.
__host__ __device__ __forceinline__ std::int64_t items_of(const RotaryParams& p) {
  return p.rows() * p.heads * slots_of(p);
}

// Work item w: slot j < half rotates pair j (both of its features read before either is written,
// so out may be x), a slot past it copies feature 2 * half + (j - half) (none in place).
// Consecutive items take consecutive slots of a row, then its heads and rows. The products are
// rounded as the CPU backend rounds them (one fma each). T: x's dtype; Table: the tables' (T or
// float).
template <typename T, typename Table>
__device__ __forceinline__ void rotate_item(const RotaryParams& p, std::int64_t w) {
  const int slots = slots_of(p);
  const std::int64_t per_row = static_cast<std::int64_t>(p.heads) * slots;
  const T* const x = static_cast<const T*>(p.x);
  T* const out = static_cast<T*>(p.out);
  const int j = static_cast<int>(w % slots);
  const int h = static_cast<int>((w / slots) % p.heads);
  const std::int64_t row = w / per_row;  // b * seqlen + i, or varlen the packed row
  // A varlen view has batch strides 0: its packed row addresses it; its sequence and the row's
  // place in it are only needed for a rotated pair's position.
  const bool varlen = p.cu_seqlens != nullptr;
  int b = varlen ? 0 : static_cast<int>(row / p.seqlen);
  const std::int64_t r = varlen ? row : row % p.seqlen;  // the row in x's row dimension
  const std::int64_t xo = b * p.x_batch_stride + r * p.x_row_stride + h * p.x_head_stride;
  const std::int64_t oo = b * p.o_batch_stride + r * p.o_row_stride + h * p.o_head_stride;
  if (j >= p.half) {
    const int d = 2 * p.half + (j - p.half);
    out[oo + d] = x[xo + d];
    return;
  }
  int i = static_cast<int>(r);
  if (varlen) {
    b = sequence_of(p.cu_seqlens, p.batch, row);
    i = static_cast<int>(row - p.cu_seqlens[b]);
  }
  const std::int64_t offset = p.seqlen_offsets != nullptr ? p.seqlen_offsets[b] : p.seqlen_offset;
  const std::int64_t pos = p.position(offset, i);
  const float c = load<Table>(p.cos, pos * p.cos_stride + j);
  const float s = load<Table>(p.sin, pos * p.sin_stride + j);
  const float x1 = cvt::to_f(x[xo + p.first(j)]), x2 = cvt::to_f(x[xo + p.second(j)]);
  out[oo + p.first(j)] = cvt::from_f<T>(__fmaf_rn(x1, c, -__fmul_rn(x2, s)));
  out[oo + p.second(j)] = cvt::from_f<T>(__fmaf_rn(x1, s, __fmul_rn(x2, c)));
}

}  // namespace gpuattn::rotary
