// Attention forward for Hopper (sm_90a), warp-specialized. Per CTA: a producer warpgroup whose one
// elected thread streams Q once and K/V tiles of 128 keys through a 2-stage ring with TMA
// (completing on mbarriers; the consumers release each stage through "empty" mbarriers), and two
// consumer warpgroups of 64 query rows each that run both GEMMs on wgmma: S = Q K^T from
// 128-byte-swizzled shared memory, O += P V with P straight from the S registers (the accumulator
// layout of S is the register-A layout of the second GEMM). Inside a consumer the next tile's S
// GEMM runs during this tile's softmax; the consumers meet only at mbarriers, so one's softmax also
// overlaps the other's GEMMs.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "core/fwd_params.h"
#include "cuda/cuda_check.h"
#include "cuda/ptx.cuh"
#include "cuda/tma.cuh"
#include "cuda/tma_maps.h"
#include "cuda/wgmma.cuh"

namespace gpuattn::sm90 {

template <typename T_, int kHeadDim_>
struct FwdTraits {
  using T = T_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kConsumers = 2;                     // warpgroups of 64 rows (wgmma M)
  static constexpr int kThreads = (kConsumers + 1) * 128;  // + the producer warpgroup
  static constexpr int kBlockM = kConsumers * 64;
  // 128 keys per tile: wgmma N = 128 for S keeps the tensor cores busy per instruction, and the
  // S, P and O registers of a consumer (64 + 32 + D/2 per thread, twice P) fit its 240.
  static constexpr int kBlockN = 128;
  static constexpr int kStages = 2;
  static constexpr int kSlabs = kHeadDim / 64;  // 128-byte-wide column slabs (swizzle atoms)
  static constexpr int kQBytes = kBlockM * kHeadDim * 2;
  static constexpr int kKVBytes = kBlockN * kHeadDim * 2;
  static constexpr int kBarrierBytes = 64;
  static constexpr int kSmemBytes = kQBytes + 2 * kStages * kKVBytes + kBarrierBytes + 1024;
  // Registers: 65536 / 384 threads = 168 at launch; the producer drops to 24 and the consumers
  // rise to 240 (128 * 24 + 256 * 240 = 64512): S, P and O (64 + 32 + D/2) plus the overlap.
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = 240;

  static_assert(kHeadDim == 64 || kHeadDim == 128, "head dims 64 and 128");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per block");
};

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

// mbarriers, in this order after the tiles: Q full; K full x2, V full x2; K empty x2, V empty x2.
struct Barriers {
  std::uint32_t q_full, k_full, v_full, k_empty, v_empty;  // stage s: + 8 * s
  __device__ explicit Barriers(std::uint32_t base)
      : q_full(base), k_full(base + 8), v_full(base + 24), k_empty(base + 40), v_empty(base + 56) {}
};

template <class Tr>
__device__ __forceinline__ void consume(const FwdParams& p, std::uint32_t sq, std::uint32_t sk0,
                                        std::uint32_t sv0, const Barriers& bar, int m0, int n_tiles,
                                        int lq, int lk, int b, int h, int cw);

template <class Tr>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    fwd_kernel(const __grid_constant__ FwdParams p, const __grid_constant__ QkvTensorMaps maps) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kBlockM = Tr::kBlockM, kBlockN = Tr::kBlockN;

  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t base = (ptx::smem_addr(smem_raw) + 1023u) & ~1023u;  // swizzle atoms
  const std::uint32_t sq = base;
  const std::uint32_t sk0 = sq + Tr::kQBytes;
  const std::uint32_t sv0 = sk0 + Tr::kStages * Tr::kKVBytes;
  const Barriers bar(sv0 + Tr::kStages * Tr::kKVBytes);

  const int tid = threadIdx.x, wg = tid >> 7;
  const int m_block = p.causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z;
  const int lq = p.len_q(b), lk = p.len_k(b);
  const int m0 = m_block * kBlockM;
  if (m0 >= lq) return;  // uniform over the CTA: before any barrier
  const int hk = p.kv_head(h);
  int n_end = lk;
  if (p.causal) n_end = max(0, min(lk, m0 + kBlockM + lk - lq));
  const int n_tiles = (n_end + kBlockN - 1) / kBlockN;

  if (tid == 0) {
    ptx::mbarrier_init(bar.q_full, 1);
#pragma unroll
    for (int s = 0; s < Tr::kStages; ++s) {
      ptx::mbarrier_init(bar.k_full + 8 * s, 1);
      ptx::mbarrier_init(bar.v_full + 8 * s, 1);
      ptx::mbarrier_init(bar.k_empty + 8 * s, Tr::kConsumers * 128);
      ptx::mbarrier_init(bar.v_empty + 8 * s, Tr::kConsumers * 128);
    }
    ptx::fence_mbarrier_init();
  }
  __syncthreads();

  if (wg == 0) {
    ptx::setmaxnreg_dec<Tr::kProducerRegs>();
    // Producer: one thread issues every TMA load. Tile t uses stage t % 2; its (t / 2)-th use.
    if (tid == 0 && n_tiles > 0) {
      const int q_row = static_cast<int>(p.row0_q(b)) + m0;
      const int k_row0 = static_cast<int>(p.row0_k(b));
      const int bc = p.is_varlen() ? 0 : b;
      ptx::mbarrier_arrive_expect_tx(bar.q_full, Tr::kQBytes);
#pragma unroll
      for (int s = 0; s < Tr::kSlabs; ++s) {
        ptx::tma_load_4d(sq + s * kBlockM * 128, &maps.q, bar.q_full, s * 64, h, q_row, bc);
      }
      for (int t = 0; t < n_tiles; ++t) {
        const int stage = t % Tr::kStages;
        const std::uint32_t use = t / Tr::kStages;
        const int row = k_row0 + t * kBlockN;
        if (t >= Tr::kStages) ptx::mbarrier_wait(bar.k_empty + 8 * stage, (use & 1) ^ 1);
        ptx::mbarrier_arrive_expect_tx(bar.k_full + 8 * stage, Tr::kKVBytes);
#pragma unroll
        for (int s = 0; s < Tr::kSlabs; ++s) {
          ptx::tma_load_4d(sk0 + stage * Tr::kKVBytes + s * kBlockN * 128, &maps.k,
                           bar.k_full + 8 * stage, s * 64, hk, row, bc);
        }
        if (t >= Tr::kStages) ptx::mbarrier_wait(bar.v_empty + 8 * stage, (use & 1) ^ 1);
        ptx::mbarrier_arrive_expect_tx(bar.v_full + 8 * stage, Tr::kKVBytes);
#pragma unroll
        for (int s = 0; s < Tr::kSlabs; ++s) {
          ptx::tma_load_4d(sv0 + stage * Tr::kKVBytes + s * kBlockN * 128, &maps.v,
                           bar.v_full + 8 * stage, s * 64, hk, row, bc);
        }
      }
    }
  } else {
    consume<Tr>(p, sq, sk0, sv0, bar, m0, n_tiles, lq, lk, b, h, wg - 1);
  }
#endif
}

// The consumer warpgroup `cw`: rows [64 cw, 64 cw + 64) of the block.
template <class Tr>
__device__ __forceinline__ void consume(const FwdParams& p, std::uint32_t sq, std::uint32_t sk0,
                                        std::uint32_t sv0, const Barriers& bar, int m0, int n_tiles,
                                        int lq, int lk, int b, int h, int cw) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = typename Tr::T;
  constexpr int kBlockM = Tr::kBlockM, kBlockN = Tr::kBlockN, D = Tr::kHeadDim;
  constexpr int kNS = kBlockN / 8, kNO = D / 8;  // n8 column groups of S and O
  ptx::setmaxnreg_inc<Tr::kConsumerRegs>();
  const int tid = threadIdx.x;
  const int lane = tid & 31, warp = (tid >> 5) & 3;
  const int g = lane >> 2, t4 = lane & 3;

  float o[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};

  const int row_base = cw * 64 + warp * 16 + g;  // this thread's first row inside the block
  const int diag = lk - lq;
  const std::uint32_t q_wg = sq + cw * 64 * 128;  // this warpgroup's 64 rows of Q

  // S = Q K^T of tile t: D / 16 k-steps, each 32 bytes into a 128-byte slab row.
  auto issue_qk = [&](float(&s)[kBlockN / 2], int t) {
    const int stage = t % Tr::kStages;
    ptx::mbarrier_wait(bar.k_full + 8 * stage, (t / Tr::kStages) & 1);
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
  // O += P V of tile t (P in `pa`): kBlockN / 16 k-steps of 16 keys = 2048 bytes of V each.
  auto issue_pv = [&](std::uint32_t(&pa)[kBlockN / 16][4], int t) {
    const int stage = t % Tr::kStages;
    ptx::mbarrier_wait(bar.v_full + 8 * stage, (t / Tr::kStages) & 1);
    const std::uint32_t sv = sv0 + stage * Tr::kKVBytes;
    ptx::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      const std::uint64_t b_desc = ptx::smem_desc_sw128(sv + kk * 2048, kBlockN * 128, 1024);
      ptx::wgmma_rs<T, D>(o, pa[kk], b_desc, 1);
    }
    ptx::wgmma_commit();
  };

  // Masks and softmaxes S of tile j in place (S becomes P), updates the row statistics and returns
  // whether O needs the rescale by `alpha`.
  auto softmax = [&](float(&s)[kBlockN / 2], int j, float(&alpha)[2]) {
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
    return __any_sync(0xffffffffu, any_rescale);
  };
  // P (in S's registers) -> the register-A fragments of P V.
  auto pack = [&](const float(&s)[kBlockN / 2], std::uint32_t(&pa)[kBlockN / 16][4]) {
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      pa[kk][0] = ptx::pack2<T>(s[8 * kk + 0], s[8 * kk + 1]);
      pa[kk][1] = ptx::pack2<T>(s[8 * kk + 2], s[8 * kk + 3]);
      pa[kk][2] = ptx::pack2<T>(s[8 * kk + 4], s[8 * kk + 5]);
      pa[kk][3] = ptx::pack2<T>(s[8 * kk + 6], s[8 * kk + 7]);
    }
  };

  // Tile j + 1's S GEMM and tile j's P V GEMM go to the tensor cores back to back; the softmax
  // of S_{j+1} runs while P_j V_j is in flight (intra-warpgroup overlap), and only once P_j V_j
  // is done are O rescaled and S_{j+1} packed into P's registers, so no register of an in-flight
  // wgmma is touched and one S and one P suffice (the registers fit the 168 of 384 threads).
  // Across warpgroups, the two consumers meet only at the mbarriers. K and V stages go back to
  // the producer as soon as their GEMMs are done.
  float s[kBlockN / 2];
  std::uint32_t pa[kBlockN / 16][4];
  if (n_tiles > 0) {
    ptx::mbarrier_wait(bar.q_full, 0);
    issue_qk(s, 0);
    ptx::wgmma_wait<0>();
    ptx::mbarrier_arrive(bar.k_empty);
    float alpha[2];
    softmax(s, 0, alpha);  // O is still zero: nothing to rescale
    pack(s, pa);
    for (int j = 0; j + 1 < n_tiles; ++j) {
      issue_qk(s, j + 1);
      issue_pv(pa, j);
      ptx::wgmma_wait<1>();  // S_{j+1} is done; P_j V_j may still run
      ptx::mbarrier_arrive(bar.k_empty + 8 * ((j + 1) % Tr::kStages));
      const bool rescale = softmax(s, j + 1, alpha);
      ptx::wgmma_wait<0>();
      ptx::mbarrier_arrive(bar.v_empty + 8 * (j % Tr::kStages));
      if (rescale) {
#pragma unroll
        for (int i = 0; i < D / 2; ++i) o[i] *= alpha[(i >> 1) & 1];
      }
      pack(s, pa);
    }
    issue_pv(pa, n_tiles - 1);
    ptx::wgmma_wait<0>();
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
  static const bool configured = [] {
    GPUATTN_CUDA_CHECK(cudaFuncSetAttribute(
        fwd_kernel<Tr>, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
    return true;
  }();
  (void)configured;
  const QkvTensorMaps maps = make_qkv_tensor_maps(p, Tr::kBlockM, Tr::kBlockN);
  const dim3 grid((p.seqlen_q + Tr::kBlockM - 1) / Tr::kBlockM, p.hq, p.batch);
  fwd_kernel<Tr><<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(p, maps);
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
