// Kernels of the distributed layer. All are bandwidth-bound passes over a rank's K/V or output;
// a warp owns one (batch, row, head) row of the output so that its log-sum-exp is read once.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "cuda/cuda_check.h"
#include "cuda/half_convert.cuh"
#include "dist/cuda/dist_kernels.h"

namespace gpuattn::dist {
namespace {

struct CopyDims {
  const char* src;
  char* dst;
  std::int64_t n0, n1, n2, n3;                  // n3: units of a row (vectors, or elements)
  std::int64_t s0, s1, s2, s3, d0, d1, d2, d3;  // strides in bytes
};

// One unit (U: 16, 8, 4 or 2 bytes) a thread, grid-stride.
template <typename U>
__global__ void copy_view_kernel(CopyDims c) {
  const std::int64_t total = c.n0 * c.n1 * c.n2 * c.n3;
  for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t r = t;
    const std::int64_t u = r % c.n3;
    r /= c.n3;
    const std::int64_t i2 = r % c.n2;
    r /= c.n2;
    const std::int64_t i1 = r % c.n1;
    const std::int64_t i0 = r / c.n1;
    *reinterpret_cast<U*>(c.dst + i0 * c.d0 + i1 * c.d1 + i2 * c.d2 + u * c.d3) =
        *reinterpret_cast<const U*>(c.src + i0 * c.s0 + i1 * c.s1 + i2 * c.s2 + u * c.s3);
  }
}

using cvt::from_f;
using cvt::to_f;

struct MergeArgs {
  float* acc_o;
  float* acc_lse;
  int batch, rows, heads, head_dim;
  int row0, n;  // the part covers acc rows [row0, row0 + n)
  const void* part;
  const float* part_lse;
  bool first;
};

// One warp a (b, i, h) row of the part.
template <typename T>
__global__ void merge_kernel(MergeArgs m) {
  const std::int64_t w = (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  const std::int64_t n_rows = static_cast<std::int64_t>(m.batch) * m.n * m.heads;
  if (w >= n_rows) return;
  const int h = static_cast<int>(w % m.heads);
  const int i = static_cast<int>((w / m.heads) % m.n);
  const int b = static_cast<int>(w / (static_cast<std::int64_t>(m.heads) * m.n));
  const T* part = static_cast<const T*>(m.part) + w * m.head_dim;
  float* o =
      m.acc_o + ((static_cast<std::int64_t>(b) * m.rows + m.row0 + i) * m.heads + h) * m.head_dim;
  float* lse = m.acc_lse + (static_cast<std::int64_t>(b) * m.heads + h) * m.rows + m.row0 + i;
  const float p = m.part_lse[(static_cast<std::int64_t>(b) * m.heads + h) * m.n + i];
  if (m.first) {
    for (int d = lane; d < m.head_dim; d += 32) o[d] = to_f(part[d]);
    if (lane == 0) *lse = p;
    return;
  }
  const float a = *lse;
  const float mx = fmaxf(a, p);
  if (mx == -INFINITY) return;  // neither part saw a key
  const float wa = __expf(a - mx), wp = __expf(p - mx);
  const float inv = 1.f / (wa + wp);
  for (int d = lane; d < m.head_dim; d += 32) o[d] = (o[d] * wa + to_f(part[d]) * wp) * inv;
  __syncwarp();
  if (lane == 0) *lse = mx + logf(wa + wp);
}

struct FinishArgs {
  const float* acc_o;
  const float* acc_lse;
  int batch, rows, heads, head_dim;
  void* out;
  std::int64_t os0, os1, os2;  // out strides (elements)
  float* lse;                  // nullptr: not requested
  std::int64_t ls0, ls1, ls2;
};

template <typename T>
__global__ void finish_kernel(FinishArgs f) {
  const std::int64_t w = (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (w >= static_cast<std::int64_t>(f.batch) * f.rows * f.heads) return;
  const int h = static_cast<int>(w % f.heads);
  const int i = static_cast<int>((w / f.heads) % f.rows);
  const int b = static_cast<int>(w / (static_cast<std::int64_t>(f.heads) * f.rows));
  const float* o = f.acc_o + w * f.head_dim;
  T* out = static_cast<T*>(f.out) + b * f.os0 + i * f.os1 + h * f.os2;
  for (int d = lane; d < f.head_dim; d += 32) out[d] = from_f<T>(o[d]);
  if (lane == 0 && f.lse != nullptr) {
    f.lse[b * f.ls0 + h * f.ls1 + i * f.ls2] =
        f.acc_lse[(static_cast<std::int64_t>(b) * f.heads + h) * f.rows + i];
  }
}

constexpr int kThreads = 256;

// Blocks of kThreads for `threads` threads (a grid's x dimension takes up to 2^31 - 1 blocks).
unsigned blocks_for(std::int64_t threads) {
  return static_cast<unsigned>((threads + kThreads - 1) / kThreads);
}

}  // namespace

void launch_copy_view(const TensorView& src, const TensorView& dst, cudaStream_t stream) {
  const std::int64_t es = static_cast<std::int64_t>(element_size(src.dtype));
  CopyDims c{static_cast<const char*>(src.data),
             static_cast<char*>(dst.data),
             src.shape[0],
             src.shape[1],
             src.shape[2],
             src.shape[3],
             src.stride[0] * es,
             src.stride[1] * es,
             src.stride[2] * es,
             src.stride[3] * es,
             dst.stride[0] * es,
             dst.stride[1] * es,
             dst.stride[2] * es,
             dst.stride[3] * es};
  if (c.n0 * c.n1 * c.n2 * c.n3 == 0) return;
  // Rows contiguous on both sides: the widest unit that the row length, every stride and both
  // pointers allow; otherwise element by element.
  std::int64_t unit = es;
  if (src.stride[3] == 1 && dst.stride[3] == 1) {
    const std::int64_t row = c.n3 * es;
    const std::uint64_t align = static_cast<std::uint64_t>(
        row | c.s0 | c.s1 | c.s2 | c.d0 | c.d1 | c.d2 |
        static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(c.src) |
                                  reinterpret_cast<std::uintptr_t>(c.dst)));
    for (std::int64_t w : {16, 8, 4}) {
      if (w > es && align % static_cast<std::uint64_t>(w) == 0) {
        unit = w;
        break;
      }
    }
    c.n3 = row / unit;
    c.s3 = c.d3 = unit;
  }
  const std::int64_t total = c.n0 * c.n1 * c.n2 * c.n3;
  const unsigned blocks = static_cast<unsigned>(
      std::min<std::int64_t>((total + kThreads - 1) / kThreads, std::int64_t{1} << 20));
  switch (unit) {
    case 16: copy_view_kernel<uint4><<<blocks, kThreads, 0, stream>>>(c); break;
    case 8: copy_view_kernel<uint2><<<blocks, kThreads, 0, stream>>>(c); break;
    case 4: copy_view_kernel<std::uint32_t><<<blocks, kThreads, 0, stream>>>(c); break;
    default: copy_view_kernel<std::uint16_t><<<blocks, kThreads, 0, stream>>>(c); break;
  }
  GPUATTN_CUDA_CHECK(cudaGetLastError());
}

void launch_merge(const Accumulator& acc, int row0, const TensorView& part, const float* part_lse,
                  bool first, cudaStream_t stream) {
  MergeArgs m{acc.o,     acc.lse,      acc.batch, acc.rows,
              acc.heads, acc.head_dim, row0,      static_cast<int>(part.shape[1]),
              part.data, part_lse,     first};
  const std::int64_t rows = static_cast<std::int64_t>(m.batch) * m.n * m.heads;
  if (rows == 0) return;
  if (part.dtype == DType::bf16) {
    merge_kernel<__nv_bfloat16><<<blocks_for(rows * 32), kThreads, 0, stream>>>(m);
  } else {
    merge_kernel<__half><<<blocks_for(rows * 32), kThreads, 0, stream>>>(m);
  }
  GPUATTN_CUDA_CHECK(cudaGetLastError());
}

void launch_finish(const Accumulator& acc, const TensorView& out, const TensorView& lse,
                   cudaStream_t stream) {
  FinishArgs f{acc.o,
               acc.lse,
               acc.batch,
               acc.rows,
               acc.heads,
               acc.head_dim,
               out.data,
               out.stride[0],
               out.stride[1],
               out.stride[2],
               nullptr,
               0,
               0,
               0};
  if (lse.present()) {
    f.lse = static_cast<float*>(lse.data);
    f.ls0 = lse.stride[0];
    f.ls1 = lse.stride[1];
    f.ls2 = lse.stride[2];
  }
  const std::int64_t rows = static_cast<std::int64_t>(f.batch) * f.rows * f.heads;
  if (rows == 0) return;
  if (out.dtype == DType::bf16) {
    finish_kernel<__nv_bfloat16><<<blocks_for(rows * 32), kThreads, 0, stream>>>(f);
  } else {
    finish_kernel<__half><<<blocks_for(rows * 32), kThreads, 0, stream>>>(f);
  }
  GPUATTN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpuattn::dist
