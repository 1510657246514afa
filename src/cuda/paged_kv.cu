#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "cuda/cuda_check.h"
#include "cuda/half_convert.cuh"
#include "cuda/paged_kv.h"
#include "cuda/q8_convert.cuh"
#include "cuda/rotary.cuh"
#include "cuda/rotary.h"

namespace gpuattn::paged {
namespace {

// 8 elements of a 16-bit row: 16 bytes as they are.
struct Copy16 {
  __device__ static uint4 load(const void* base, std::int64_t off, float) {
    return *reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(base) + off);
  }
};
// 8 elements of an 8-bit row (int8 when kInt8, else E4M3) times `scale`, as T.
template <bool kInt8, typename T>
struct Dequant8 {
  __device__ static uint4 load(const void* base, std::int64_t off, float scale) {
    const uint2 w = *reinterpret_cast<const uint2*>(static_cast<const std::uint8_t*>(base) + off);
    const std::uint32_t x0 = q8::prep<kInt8>(w.x), x1 = q8::prep<kInt8>(w.y);
    const std::uint32_t h[4] = {q8::to_f16x2<kInt8, false>(x0), q8::to_f16x2<kInt8, true>(x0),
                                q8::to_f16x2<kInt8, false>(x1), q8::to_f16x2<kInt8, true>(x1)};
    std::uint32_t out[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h[i]));
      const T lo = cvt::from_f<T>(f.x * scale), hi = cvt::from_f<T>(f.y * scale);
      out[i] = static_cast<std::uint32_t>(*reinterpret_cast<const std::uint16_t*>(&lo)) |
               static_cast<std::uint32_t>(*reinterpret_cast<const std::uint16_t*>(&hi)) << 16;
    }
    return make_uint4(out[0], out[1], out[2], out[3]);
  }
};

// One 16-byte output chunk (8 elements) of K and of V per thread and step; consecutive threads
// take consecutive chunks of a row, then the row's heads, so the stores are coalesced and the
// loads read whole runs of a page row. Load: Copy16 (a 16-bit cache) or Dequant8.
template <class Load>
__global__ void gather_kernel(const __grid_constant__ FwdParams p, uint4* __restrict__ k_out,
                              uint4* __restrict__ v_out, int rows) {
  const int chunks = p.head_dim / 8;
  const std::int64_t per_row = static_cast<std::int64_t>(p.hkv) * chunks;
  const std::int64_t total = static_cast<std::int64_t>(p.batch) * rows * per_row;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += step) {
    const int c = static_cast<int>(i % chunks);
    const int hk = static_cast<int>((i / chunks) % p.hkv);
    const std::int64_t row = i / per_row;  // b * rows + j
    const int j = static_cast<int>(row % rows), b = static_cast<int>(row / rows);
    // Row j holds logical key j: those in [key_start(b), keys_end(b)), key j - key_start(b) of
    // the call (the copy's call keeps leftpad_k and seqused_k).
    const int first = p.key_start(b);
    if (j < first || j >= p.keys_end(b)) continue;
    const float ks = p.kv_quantized() ? p.k_scale_of(hk) : 1.f;
    const float vs = p.kv_quantized() ? p.v_scale_of(hk) : 1.f;
    k_out[i] = Load::load(p.k, p.k_offset(b, j - first, hk) + c * 8, ks);
    v_out[i] = Load::load(p.v, p.v_offset(b, j - first, hk) + c * 8, vs);
  }
}

// An FP8 call's q (E4M3, element x of head h standing for x * q_scale[h]) dequantized into q_out,
// dense [total_q, Hq, D] of T: one 16-byte output chunk a thread and step.
template <typename T>
__global__ void dequantize_q_kernel(const __grid_constant__ FwdParams p,
                                    uint4* __restrict__ q_out) {
  const int chunks = p.head_dim / 8;
  const std::int64_t per_row = static_cast<std::int64_t>(p.hq) * chunks;
  const std::int64_t total = p.total_q * per_row;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += step) {
    const int c = static_cast<int>(i % chunks);
    const int h = static_cast<int>((i / chunks) % p.hq);
    const std::int64_t row = i / per_row;  // the packed row (varlen), or b * Sq + j
    const int b = p.is_varlen() ? 0 : static_cast<int>(row / p.seqlen_q);
    const std::int64_t j = p.is_varlen() ? row : row % p.seqlen_q;
    // Varlen: row0_q(0) is 0, so q_offset(0, row, h) is the packed row's.
    q_out[i] = Dequant8<false, T>::load(p.q, p.q_offset(b, j, h) + c * 8, p.q_scale_of(h));
  }
}

// 8 new elements (16 bytes of T) as they are, or quantized to 8 bytes of an 8-bit cache: x / scale
// rounded to nearest even and saturated (E4M3: +-448, NaN stays NaN; int8: [-127, 127], NaN 0).
template <typename T>
struct Store16 {
  __device__ static void store(void* base, std::int64_t off, const void* src, float) {
    *reinterpret_cast<uint4*>(static_cast<T*>(base) + off) = *reinterpret_cast<const uint4*>(src);
  }
};
template <bool kInt8, typename T>
struct Quant8 {
  __device__ static void store(void* base, std::int64_t off, const void* src, float scale) {
    const uint4 w = *reinterpret_cast<const uint4*>(src);
    const T* x = reinterpret_cast<const T*>(&w);
    std::uint32_t out[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float f[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) f[e] = cvt::to_f(x[4 * i + e]) / scale;
      if constexpr (kInt8) {
        std::uint32_t v = 0;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int q = max(-127, min(127, __float2int_rn(f[e])));
          v |= (static_cast<std::uint32_t>(q) & 0xffu) << (8 * e);
        }
        out[i] = v;
      } else {
        const __nv_fp8x2_storage_t lo =
            __nv_cvt_float2_to_fp8x2(make_float2(f[0], f[1]), __NV_SATFINITE, __NV_E4M3);
        const __nv_fp8x2_storage_t hi =
            __nv_cvt_float2_to_fp8x2(make_float2(f[2], f[3]), __NV_SATFINITE, __NV_E4M3);
        out[i] = static_cast<std::uint32_t>(lo) | static_cast<std::uint32_t>(hi) << 16;
      }
    }
    *reinterpret_cast<uint2*>(static_cast<std::uint8_t*>(base) + off) = make_uint2(out[0], out[1]);
  }
};

// Rotary table entry (pos, j): float32, or T.
template <typename T>
__device__ float rotary_entry(const AppendParams& p, const void* table, std::int64_t stride,
                              std::int64_t pos, int j) {
  return p.rotary_f32 ? static_cast<const float*>(table)[pos * stride + j]
                      : cvt::to_f(static_cast<const T*>(table)[pos * stride + j]);
}

// Chunk c (8 features) of new key row `row` rotated at `pos` into `out`, as the rotary kernel
// rotates it (rotary.cu: the same products, rounded once); features past the rotated ones copied.
template <typename T>
__device__ void rotate_chunk(const AppendParams& p, const T* row, int c, std::int64_t pos,
                             T* out) {
  const uint4 w = *reinterpret_cast<const uint4*>(row + c * 8);
  const T* x = reinterpret_cast<const T*>(&w);
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    const int d = c * 8 + e;
    if (d >= 2 * p.rotary_half) {
      out[e] = x[e];
      continue;
    }
    const int j = p.rotary_pair(d);
    const float cs = rotary_entry<T>(p, p.rotary_cos, p.rotary_cos_stride, pos, j);
    const float sn = rotary_entry<T>(p, p.rotary_sin, p.rotary_sin_stride, pos, j);
    const float xd = cvt::to_f(x[e]), xp = cvt::to_f(row[p.rotary_partner(d)]);
    out[e] = cvt::from_f<T>(p.rotary_first(d) ? __fmaf_rn(xd, cs, -__fmul_rn(xp, sn))
                                              : __fmaf_rn(xp, sn, __fmul_rn(xd, cs)));
  }
}

// The append's own work items: an 8-element chunk of K and of V of each new row and head.
__host__ __device__ std::int64_t chunks_of(const AppendParams& p) {
  return static_cast<std::int64_t>(p.batch) * p.seqlen_new * p.hkv * (p.head_dim / 8);
}

// q's rotation in the append's launch (fused_q): q apart from the caches the append writes.
__host__ __device__ bool fused_q(const AppendParams& p) { return p.rotates_q && !p.q_in_cache; }

// One 8-element chunk of K and of V per thread and step, over (b, i, hk, chunk) of the new rows;
// with rotary tables the K chunk is rotated on the way (T: the new rows' dtype). With fused_q,
// q's rotation items (rotary::rotate_item, the rotary kernel's) follow the chunks.
template <class Store, typename T>
__global__ void append_kernel(const __grid_constant__ AppendParams p) {
  const int chunks = p.head_dim / 8;
  const std::int64_t per_row = static_cast<std::int64_t>(p.hkv) * chunks;
  const std::int64_t kv_total = chunks_of(p);
  const std::int64_t total = kv_total + (fused_q(p) ? rotary::items_of(p.q_rotary) : 0);
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += step) {
    if (i >= kv_total) {
      if (p.q_rotary.table_dtype == DType::f32) {
        rotary::rotate_item<T, float>(p.q_rotary, i - kv_total);
      } else {
        rotary::rotate_item<T, T>(p.q_rotary, i - kv_total);
      }
      continue;
    }
    const int c = static_cast<int>(i % chunks);
    const int hk = static_cast<int>((i / chunks) % p.hkv);
    const std::int64_t row = i / per_row;  // b * seqlen_new + r
    const int r = static_cast<int>(row % p.seqlen_new), b = static_cast<int>(row / p.seqlen_new);
    const std::int64_t j = static_cast<std::int64_t>(p.cache_seqlens[b]) + r;
    const T* const kn_row = static_cast<const T*>(p.k_new) + b * p.kn_batch_stride +
                            r * p.kn_row_stride + hk * p.kn_head_stride;
    const auto* vn = static_cast<const T*>(p.v_new) + b * p.vn_batch_stride +
                     r * p.vn_row_stride + hk * p.vn_head_stride + c * 8;
    const float ks = p.k_scale ? p.k_scale[hk * p.scale_stride] : 1.f;
    const float vs = p.v_scale ? p.v_scale[hk * p.scale_stride] : 1.f;
    if (c * 8 < 2 * p.rotary_half) {  // never without tables (rotary_half 0)
      alignas(16) T rotated[8];
      rotate_chunk<T>(p, kn_row, c, j, rotated);
      Store::store(p.k_cache, p.kc_offset(b, j, hk) + c * 8, rotated, ks);
    } else {
      Store::store(p.k_cache, p.kc_offset(b, j, hk) + c * 8, kn_row + c * 8, ks);
    }
    Store::store(p.v_cache, p.vc_offset(b, j, hk) + c * 8, vn, vs);
  }
}

}  // namespace

unsigned grid_for(std::int64_t items) {
  const std::int64_t blocks = (items + 255) / 256;
  return static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
}

void append(const AppendParams& p, cudaStream_t stream) {
  // q in a cache: rotated first, in a launch of its own (the append may write its rows).
  if (p.rotates_q && !fused_q(p)) rotary::apply(p.q_rotary, stream);
  const std::int64_t items = chunks_of(p) + (fused_q(p) ? rotary::items_of(p.q_rotary) : 0);
  if (items == 0) return;
  const unsigned grid = grid_for(items);
  const bool bf16 = p.dtype == DType::bf16;
  using BF = __nv_bfloat16;
  if (p.cache_dtype == DType::i8) {
    bf16 ? append_kernel<Quant8<true, BF>, BF><<<grid, 256, 0, stream>>>(p)
         : append_kernel<Quant8<true, __half>, __half><<<grid, 256, 0, stream>>>(p);
  } else if (p.cache_dtype == DType::e4m3) {
    bf16 ? append_kernel<Quant8<false, BF>, BF><<<grid, 256, 0, stream>>>(p)
         : append_kernel<Quant8<false, __half>, __half><<<grid, 256, 0, stream>>>(p);
  } else {
    bf16 ? append_kernel<Store16<BF>, BF><<<grid, 256, 0, stream>>>(p)
         : append_kernel<Store16<__half>, __half><<<grid, 256, 0, stream>>>(p);
  }
  GPUATTN_CUDA_CHECK(cudaGetLastError());
}

void gather(const FwdParams& p, void* k_out, void* v_out, int rows, cudaStream_t stream) {
  const std::int64_t chunks = static_cast<std::int64_t>(p.batch) * rows * p.hkv * (p.head_dim / 8);
  if (chunks == 0) return;
  const unsigned grid = grid_for(chunks);
  auto* const k = static_cast<uint4*>(k_out);
  auto* const v = static_cast<uint4*>(v_out);
  const bool bf16 = p.dtype == DType::bf16;
  if (!p.kv_quantized()) {
    gather_kernel<Copy16><<<grid, 256, 0, stream>>>(p, k, v, rows);
  } else if (p.kv_dtype == DType::i8) {
    bf16 ? gather_kernel<Dequant8<true, __nv_bfloat16>><<<grid, 256, 0, stream>>>(p, k, v, rows)
         : gather_kernel<Dequant8<true, __half>><<<grid, 256, 0, stream>>>(p, k, v, rows);
  } else {
    bf16 ? gather_kernel<Dequant8<false, __nv_bfloat16>><<<grid, 256, 0, stream>>>(p, k, v, rows)
         : gather_kernel<Dequant8<false, __half>><<<grid, 256, 0, stream>>>(p, k, v, rows);
  }
  GPUATTN_CUDA_CHECK(cudaGetLastError());
}

void dequantize_q(const FwdParams& p, void* q_out, cudaStream_t stream) {
  const std::int64_t chunks = p.total_q * p.hq * (p.head_dim / 8);
  if (chunks == 0) return;
  const unsigned grid = grid_for(chunks);
  auto* const q = static_cast<uint4*>(q_out);
  if (p.dtype == DType::bf16) {
    dequantize_q_kernel<__nv_bfloat16><<<grid, 256, 0, stream>>>(p, q);
  } else {
    dequantize_q_kernel<__half><<<grid, 256, 0, stream>>>(p, q);
  }
  GPUATTN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpuattn::paged
