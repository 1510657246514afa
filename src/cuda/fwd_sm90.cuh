// Attention forward for Hopper (sm_90a): the same algorithm as the sm_80 kernel, with both GEMMs
// on warpgroup MMA. Two warpgroups own 64 query rows each of a 128-row block; K/V tiles of 128 keys
// stream through a 2-stage cp.async pipeline into 128-byte-swizzled shared memory that wgmma reads
// through descriptors: S = Q K^T with both operands in shared memory, O += P V with P straight
// from the S registers (the accumulator layout of S is the register-A layout of the second GEMM).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "core/fwd_params.h"
#include "cuda/cuda_check.h"
#include "cuda/ptx.cuh"
#include "cuda/wgmma.cuh"

namespace gpuattn::sm90 {

template <typename T_, int kHeadDim_>
struct FwdTraits {
  using T = T_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kWarpgroups = 2;  // each owns 64 rows (the wgmma M)
  static constexpr int kThreads = kWarpgroups * 128;
  static constexpr int kBlockM = kWarpgroups * 64;
  // 128 keys per tile: wgmma N = 128 for S keeps the tensor core busy per instruction, and
  // S + O accumulators (64 + D/2 floats per thread) leave registers to spare.
  static constexpr int kBlockN = 128;
  static constexpr int kChunks = kHeadDim / 8;  // 16-byte chunks per row
  static constexpr int kSlabs = kHeadDim / 64;  // 128-byte-wide column slabs (swizzle atoms)
  static constexpr int kQBytes = kBlockM * kHeadDim * 2;
  static constexpr int kKVBytes = kBlockN * kHeadDim * 2;
  // Three K/V stages: tile t + 2 loads into the stage of tile t - 1 while tiles t and t + 1 are
  // in use (the overlap of S_{t+1} with the softmax of S_t needs two resident tiles).
  static constexpr int kStages = 3;
  static constexpr int kSmemBytes = kQBytes + 2 * kStages * kKVBytes + 1024;  // + align slack
  static constexpr int kRowStep = kThreads / kChunks;                // rows between a thread's loads

  static_assert(kHeadDim == 64 || kHeadDim == 128, "head dims 64 and 128");
  static_assert(kBlockM == kBlockN, "tile loads share one per-thread offset");
  static_assert(kBlockN % kRowStep == 0 && kRowStep % 8 == 0, "loads keep the row's swizzle");
};

// Byte offset of chunk c (16 bytes) of row r in a swizzled tile of `rows` rows: column slabs of 64
// elements, rows of 128 bytes, chunk index XOR row mod 8.
__device__ __forceinline__ std::uint32_t swizzled_off(int rows, int r, int c) {
  return static_cast<std::uint32_t>((c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4));
}

// cp.async of one tile: this thread's chunk of every kRowStep-th row from its first row on; rows
// at or past `rows_left` (counted from that first row) are zero-filled.
template <class Tr>
__device__ __forceinline__ void load_tile(std::uint32_t dst, const typename Tr::T* src, int step,
                                          int rows_left) {
  constexpr int kLoads = Tr::kBlockN / Tr::kRowStep;
  if (rows_left > (kLoads - 1) * Tr::kRowStep) {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      ptx::cp_async_16(dst + i * Tr::kRowStep * 128, src, true);
      src += step;
    }
  } else {
    const typename Tr::T* base = src;
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const bool valid = i * Tr::kRowStep < rows_left;
      ptx::cp_async_16(dst + i * Tr::kRowStep * 128, valid ? src : base, valid);
      src += step;
    }
  }
}

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Stale running max slack in log2 units, as in the sm_80 kernel: O is rescaled only when a row's
// max grows by more than 2^8.
constexpr float kRescaleSlack = 8.f;

template <class Tr>
__global__ void __launch_bounds__(Tr::kThreads, 1) fwd_kernel(const __grid_constant__ FwdParams p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = typename Tr::T;
  constexpr int kBlockM = Tr::kBlockM, kBlockN = Tr::kBlockN, D = Tr::kHeadDim;
  constexpr int kNS = kBlockN / 8, kNO = D / 8;  // n8 column groups of S and O

  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t base = (ptx::smem_addr(smem_raw) + 1023u) & ~1023u;  // swizzle atoms
  const std::uint32_t sq = base;
  const std::uint32_t sk0 = sq + Tr::kQBytes;
  const std::uint32_t sv0 = sk0 + Tr::kStages * Tr::kKVBytes;

  const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31, warp = (tid >> 5) & 3;
  const int g = lane >> 2, t4 = lane & 3;

  const int m_block = p.causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z;
  const int lq = p.len_q(b), lk = p.len_k(b);
  const int m0 = m_block * kBlockM;
  if (m0 >= lq) return;
  const int hk = p.kv_head(h);
  int n_end = lk;
  if (p.causal) n_end = max(0, min(lk, m0 + kBlockM + lk - lq));
  const int n_tiles = (n_end + kBlockN - 1) / kBlockN;

  const T* q = static_cast<const T*>(p.q) + p.q_offset(b, m0, h);
  const T* k = static_cast<const T*>(p.k) + p.k_offset(b, 0, hk);
  const T* v = static_cast<const T*>(p.v) + p.v_offset(b, 0, hk);

  const int ld_row = tid / Tr::kChunks, ld_col = tid % Tr::kChunks;
  const std::uint32_t ld_off = swizzled_off(kBlockN, ld_row, ld_col);
  const T* k_ld = k + ld_row * p.k_row_stride + ld_col * 8;
  const T* v_ld = v + ld_row * p.v_row_stride + ld_col * 8;
  const int k_step = Tr::kRowStep * static_cast<int>(p.k_row_stride);
  const int v_step = Tr::kRowStep * static_cast<int>(p.v_row_stride);
  const int k_tile_step = kBlockN * static_cast<int>(p.k_row_stride);
  const int v_tile_step = kBlockN * static_cast<int>(p.v_row_stride);

  load_tile<Tr>(sq + ld_off, q + ld_row * p.q_row_stride + ld_col * 8,
                Tr::kRowStep * static_cast<int>(p.q_row_stride), lq - m0 - ld_row);
  if (n_tiles > 0) {
    load_tile<Tr>(sk0 + ld_off, k_ld, k_step, lk - ld_row);
    load_tile<Tr>(sv0 + ld_off, v_ld, v_step, lk - ld_row);
  }
  ptx::cp_async_commit();
  // Tile t lives in stage t % 3 and is loaded two steps ahead of its softmax.
  auto load_kv = [&](int t) {
    const int rows_left = lk - t * kBlockN - ld_row;
    const std::uint32_t off = (t % Tr::kStages) * Tr::kKVBytes + ld_off;
    load_tile<Tr>(sk0 + off, k_ld + t * k_tile_step, k_step, rows_left);
    load_tile<Tr>(sv0 + off, v_ld + t * v_tile_step, v_step, rows_left);
    ptx::cp_async_commit();
  };
  if (n_tiles > 1) load_kv(1);

  float o[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};

  const int row_base = wg * 64 + warp * 16 + g;  // this thread's first row inside the block
  const int diag = lk - lq;
  const std::uint32_t q_wg = sq + wg * 64 * 128;  // this warpgroup's 64 rows of Q

  // S = Q K^T of the tile in `stage`: D / 16 k-steps, each 32 bytes into a 128-byte slab row.
  auto issue_qk = [&](float(&s)[kBlockN / 2], int stage) {
    const std::uint32_t sk = sk0 + stage * Tr::kKVBytes;
    ptx::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks) {
      const std::uint32_t koff = (ks & 3) * 32;
      const std::uint64_t a_desc =
          ptx::smem_desc_sw128(q_wg + (ks >> 2) * kBlockM * 128 + koff, 16, 1024);
      const std::uint64_t b_desc =
          ptx::smem_desc_sw128(sk + (ks >> 2) * kBlockN * 128 + koff, 16, 1024);
      ptx::wgmma_ss<T, kBlockN>(s, a_desc, b_desc, ks > 0 ? 1 : 0);
    }
    ptx::wgmma_commit();
  };

  // Masks and softmaxes S of tile j in place, updates the row statistics, packs P into `pa` (the
  // register-A fragments of P V) and returns whether O needs the rescale by `alpha`.
  auto softmax = [&](float(&s)[kBlockN / 2], std::uint32_t(&pa)[kBlockN / 16][4], int j,
                     float(&alpha)[2]) {
    const int n0 = j * kBlockN;
    const bool need_mask = (n0 + kBlockN > lk) || (p.causal && n0 + kBlockN - 1 > m0 + diag);
    if (need_mask) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = m0 + row_base + 8 * r;
        const int limit = (p.causal ? min(lk, row + diag + 1) : lk) - (n0 + 2 * t4);
#pragma unroll
        for (int n = 0; n < kNS; ++n)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if (n * 8 + e >= limit) s[4 * n + 2 * r + e] = -INFINITY;
      }
    }
    bool any_rescale = false;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = -INFINITY;
#pragma unroll
      for (int n = 0; n < kNS; ++n) mx = fmaxf(mx, fmaxf(s[4 * n + 2 * r], s[4 * n + 2 * r + 1]));
      mx = quad_max(mx) * p.scale_log2;
      const bool grow = mx > row_max[r] + kRescaleSlack;
      const float m_new = grow ? mx : row_max[r];
      const float m_use = m_new == -INFINITY ? 0.f : m_new;
      alpha[r] = ptx::fast_exp2(row_max[r] - m_use);
      any_rescale |= grow;
      row_max[r] = m_new;
      float sum = 0.f;
#pragma unroll
      for (int n = 0; n < kNS; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float& x = s[4 * n + 2 * r + e];
          x = ptx::fast_exp2(fmaf(x, p.scale_log2, -m_use));
          sum += x;
        }
      row_sum[r] = row_sum[r] * alpha[r] + sum;
    }
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      pa[kk][0] = ptx::pack2<T>(s[8 * kk + 0], s[8 * kk + 1]);
      pa[kk][1] = ptx::pack2<T>(s[8 * kk + 2], s[8 * kk + 3]);
      pa[kk][2] = ptx::pack2<T>(s[8 * kk + 4], s[8 * kk + 5]);
      pa[kk][3] = ptx::pack2<T>(s[8 * kk + 6], s[8 * kk + 7]);
    }
    return __any_sync(0xffffffffu, any_rescale);
  };

  // One key tile j, with P_j already in `pa`: S_{j+1} = Q K_{j+1}^T and O += P_j V_j go to the
  // tensor cores back to back; the softmax of S_{j+1} runs while P_j V_j is still in flight
  // (intra-warpgroup overlap), and O is rescaled for tile j + 1 only once P_j V_j is done, so no
  // register of an in-flight wgmma is touched.
  float s[kBlockN / 2];
  // O += P V of tile j (P in `pa`): kBlockN / 16 k-steps of 16 keys = 2048 bytes of V each.
  auto issue_pv = [&](std::uint32_t(&pa)[kBlockN / 16][4], int j) {
    const std::uint32_t sv = sv0 + (j % Tr::kStages) * Tr::kKVBytes;
    ptx::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      const std::uint64_t b_desc = ptx::smem_desc_sw128(sv + kk * 2048, kBlockN * 128, 1024);
      ptx::wgmma_rs<T, D>(o, pa[kk], b_desc, 1);
    }
    ptx::wgmma_commit();
  };
  // One key tile j that has a successor, with P_j already in `pa`: S_{j+1} = Q K_{j+1}^T and
  // O += P_j V_j go to the tensor cores back to back; the softmax of S_{j+1} runs while P_j V_j
  // is in flight (intra-warpgroup overlap); O is rescaled for tile j + 1 once P_j V_j is done.
  // No branch encloses the wgmmas: ptxas then tracks the two groups apart and keeps them async.
  auto step = [&](std::uint32_t(&pa)[kBlockN / 16][4], std::uint32_t(&pa_next)[kBlockN / 16][4],
                  int j) {
    ptx::cp_async_wait<0>();
    ptx::fence_proxy_async();
    // Tile j + 1 has landed for every thread, and every warpgroup is past step j - 1, so the
    // stage of tile j - 1 takes tile j + 2, which then has a whole step to arrive.
    __syncthreads();
    if (j + 2 < n_tiles) load_kv(j + 2);
    issue_qk(s, (j + 1) % Tr::kStages);
    issue_pv(pa, j);
    ptx::wgmma_wait<1>();  // S_{j+1} is done; P_j V_j may still run
    float alpha[2];
    const bool rescale = softmax(s, pa_next, j + 1, alpha);
    ptx::wgmma_wait<0>();
    if (rescale) {
#pragma unroll
      for (int i = 0; i < D / 2; ++i) o[i] *= alpha[(i >> 1) & 1];
    }
  };
  auto last_step = [&](std::uint32_t(&pa)[kBlockN / 16][4], int j) {
    issue_pv(pa, j);
    ptx::wgmma_wait<0>();
  };

  std::uint32_t pa0[kBlockN / 16][4], pa1[kBlockN / 16][4];
  if (n_tiles > 0) {
    if (n_tiles > 1) {
      ptx::cp_async_wait<1>();  // Q and tile 0; tile 1 may still be in flight
    } else {
      ptx::cp_async_wait<0>();
    }
    ptx::fence_proxy_async();
    __syncthreads();
    issue_qk(s, 0);
    ptx::wgmma_wait<0>();
    float alpha[2];
    softmax(s, pa0, 0, alpha);  // O is still zero: nothing to rescale
    // Steps alternate the P buffers; the last tile has no successor.
    int j = 0;
    for (; j + 2 < n_tiles; j += 2) {
      step(pa0, pa1, j);
      step(pa1, pa0, j + 1);
    }
    if (n_tiles - j == 2) {
      step(pa0, pa1, j);
      last_step(pa1, j + 1);
    } else {
      last_step(pa0, j);
    }
  }

  // Epilogue: normalize, store O (rows past the sequence end are skipped) and the LSE.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float l = quad_sum(row_sum[r]);
    const float inv = l > 0.f ? 1.f / l : 0.f;
    const int row = m0 + row_base + 8 * r;
    if (row < lq) {
      T* out = static_cast<T*>(p.o) + p.o_offset(b, row, h) + 2 * t4;
#pragma unroll
      for (int n = 0; n < kNO; ++n) {
        *reinterpret_cast<std::uint32_t*>(out + n * 8) =
            ptx::pack2<T>(o[4 * n + 2 * r] * inv, o[4 * n + 2 * r + 1] * inv);
      }
      if (p.lse != nullptr && t4 == 0) {
        p.lse[p.lse_offset(b, row, h)] =
            l > 0.f ? (row_max[r] + log2f(l)) * 0.69314718055994531f : -INFINITY;
      }
    }
  }
#endif
}

template <class Tr>
void launch_fwd(const FwdParams& p, cudaStream_t stream) {
  static_assert(Tr::kSmemBytes <= 227 * 1024, "shared memory per block");
  static const bool configured = [] {
    GPUATTN_CUDA_CHECK(cudaFuncSetAttribute(
        fwd_kernel<Tr>, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
    return true;
  }();
  (void)configured;
  const dim3 grid((p.seqlen_q + Tr::kBlockM - 1) / Tr::kBlockM, p.hq, p.batch);
  fwd_kernel<Tr><<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(p);
  GPUATTN_CUDA_CHECK(cudaGetLastError());
}

// True when fwd_kernel<Tr> was compiled to sm_90a machine code that this device runs.
template <class Tr>
bool kernel_is_sm90a() {
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, fwd_kernel<Tr>) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.binaryVersion == 90;
}

template <typename T, int D>
void run_fwd(const FwdParams& p, cudaStream_t stream) {
  launch_fwd<FwdTraits<T, D>>(p, stream);
}

template <typename T, int D>
bool usable() {
  return kernel_is_sm90a<FwdTraits<T, D>>();
}

}  // namespace gpuattn::sm90
