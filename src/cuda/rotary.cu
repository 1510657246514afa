#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/cuda_check.h"
#include "cuda/half_convert.cuh"
#include "cuda/paged_kv.h"
#include "cuda/rotary.h"

namespace gpuattn::rotary {
namespace {

template <typename T>
__device__ float load(const void* base, std::int64_t i) {
  return cvt::to_f(static_cast<const T*>(base)[i]);
}
template <>
__device__ float load<float>(const void* base, std::int64_t i) {
  return static_cast<const float*>(base)[i];
}

// The sequence that holds packed row `row`: the last b with cu[b] <= row (cu rises from 0 over
// batch + 1 bounds; sequences of no rows share a bound with the next, which is the one found).
__device__ int sequence_of(const std::int32_t* cu, int batch, std::int64_t row) {
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

// One slot of a row a thread and step: slot j < half rotates pair j (both of its features read
// before either is written, so out may be x), a slot past it copies feature 2 * half + (j - half)
// (none in place). Consecutive threads take consecutive slots of a row, then its heads and rows.
// The products are rounded as the CPU backend rounds them (one fma each).
template <typename T, typename Table>
__global__ void rotary_kernel(const __grid_constant__ RotaryParams p) {
  const int slots = p.half + (p.in_place ? 0 : p.head_dim - 2 * p.half);
  const std::int64_t per_row = static_cast<std::int64_t>(p.heads) * slots;
  const std::int64_t total = p.rows() * per_row;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const T* const x = static_cast<const T*>(p.x);
  T* const out = static_cast<T*>(p.out);
  for (std::int64_t w = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; w < total;
       w += step) {
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
      continue;
    }
    int i = static_cast<int>(r);
    if (varlen) {
      b = sequence_of(p.cu_seqlens, p.batch, row);
      i = static_cast<int>(row - p.cu_seqlens[b]);
    }
    const std::int64_t offset =
        p.seqlen_offsets != nullptr ? p.seqlen_offsets[b] : p.seqlen_offset;
    const std::int64_t pos = p.position(offset, i);
    const float c = load<Table>(p.cos, pos * p.cos_stride + j);
    const float s = load<Table>(p.sin, pos * p.sin_stride + j);
    const float x1 = cvt::to_f(x[xo + p.first(j)]), x2 = cvt::to_f(x[xo + p.second(j)]);
    out[oo + p.first(j)] = cvt::from_f<T>(__fmaf_rn(x1, c, -__fmul_rn(x2, s)));
    out[oo + p.second(j)] = cvt::from_f<T>(__fmaf_rn(x1, s, __fmul_rn(x2, c)));
  }
}

template <typename T>
void launch(const RotaryParams& p, unsigned grid, cudaStream_t stream) {
  if (p.table_dtype == DType::f32) {
    rotary_kernel<T, float><<<grid, 256, 0, stream>>>(p);
  } else {
    rotary_kernel<T, T><<<grid, 256, 0, stream>>>(p);
  }
}

}  // namespace

void apply(const RotaryParams& p, cudaStream_t stream) {
  const int slots = p.half + (p.in_place ? 0 : p.head_dim - 2 * p.half);
  const std::int64_t total = p.rows() * p.heads * slots;
  if (total == 0) return;
  const unsigned grid = paged::grid_for(total);
  if (p.dtype == DType::bf16) {
    launch<__nv_bfloat16>(p, grid, stream);
  } else {
    launch<__half>(p, grid, stream);
  }
  GPUATTN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpuattn::rotary
