// Split-KV decode forward (sm_80 and newer; Hopper runs it too): calls with few query rows per KV
// head, the decode steps of generation. The 128-row tiles of the prefill kernels would leave 127
// of 128 rows idle at seqlen_q = 1 and give the GPU one CTA per (batch, query head) streaming the
// whole sequence; here the work is laid out for HBM bandwidth instead (core/decode_split.h):
//   - the query rows of every head of a GQA group go into one 16-row block (mma.sync m16), so
//     each K/V tile is read once per group;
//   - each sequence's key tiles are split over enough CTAs to fill the GPU; each CTA streams its
//     share through a cp.async ring of 64-key tiles, its 4 warps taking 16 keys of each tile
//     with their own online softmax, merged through shared memory at the end. Each warp loads
//     the 16 keys it reads, so a tile costs the warp's barrier only, not the CTA's (H200, s40:
//     the kernel alone 0.83-0.98x the time, most at long sequences; bench/results/
//     2026-11-29-h200-s40);
//   - the CTAs of a unit leave normalized O and the log2-sum-exp of their rows in a workspace;
//     the one that counts in last merges them in split order.
// Standard precision, dense and causal (bottom-right aligned) calls, varlen, GQA/MQA, LSE, and
// per-sequence key lengths of a cache (seqused_k, through FwdParams::keys_used), and a paged cache
// (block_table) read in place.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "core/decode_split.h"
#include "core/fwd_params.h"
#include "core/tile_config.h"
#include "cuda/cuda_check.h"
#include "cuda/fwd_sm80.h"
#include "cuda/pdl.h"
#include "cuda/ptx.cuh"

namespace gpuattn::decode {

// kLean: DecodePlan::lean's kernel (head dim 64): 2 stages, launch bounds for 5 CTAs an SM.
template <typename T_, int kHeadDim_, bool kLean_ = false>
struct DecodeTraits {
  using T = T_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr bool kLean = kLean_;
  static_assert(!kLean || kHeadDim == 64, "the lean kernel is head dim 64's");
  static constexpr int kMinCtas = 5;  // decode_kernel_lean's __launch_bounds__: CTAs an SM
  static constexpr int kRows = DecodePlan::kRows;
  static constexpr int kBlockN = DecodePlan::kBlockN;
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kStages = DecodePlan::stages(kHeadDim, kLean);
  static constexpr int kMaxCtasPerSm = 2;       // resident CTAs a wave counts (launch_decode)
  static constexpr int kChunks = kHeadDim / 8;  // 16-byte chunks per row
  static constexpr int kRowBytes = kHeadDim * 2;
  static constexpr int kQBytes = kRows * kRowBytes;
  static constexpr int kTileBytes = kBlockN * kRowBytes;  // one K or V tile
  // The warps' merge at the end reuses the K/V ring: per warp 16 rows of O (pitch D + 4 floats:
  // the 8 rows a store instruction writes land on different banks) and a max and sum per row.
  static constexpr int kOPitch = kHeadDim + 4;
  static constexpr int kMergeBytes = kWarps * kRows * (kOPitch + 2) * 4;
  static constexpr int kRingBytes = 2 * kStages * kTileBytes;
  static constexpr int kSmemBytes = kQBytes + (kRingBytes > kMergeBytes ? kRingBytes : kMergeBytes);
  static_assert(kSmemBytes == DecodePlan::smem_bytes(kHeadDim, kLean), "DecodePlan::smem_bytes");
  static_assert(kMergeBytes >= (kRows * DecodePlan::kMaxSplits + 2 * kRows) * 4,
                "the split merge's weights fit the merge area");
  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "head dims 64, 128, 256");
  static_assert(kChunks >= 8, "the XOR swizzle spreads 8 rows over 8 chunks");
  static_assert((kRows * kChunks) % kThreads == 0 && kThreads % kChunks == 0,
                "tile loads divide evenly over the threads");
};

// The workspace of a split launch: a zeroed count per unit (sm80::LaunchCounters; the CTA that
// counts in last zeroes it again), and per (unit, split) 16 rows of O (fp32, normalized by the
// split's own sum) and the rows' log2-sum-exp (-inf: no key seen).
struct DecodeWork {
  int* counts = nullptr;
  float* o = nullptr;
  float* lse2 = nullptr;
  int splits = 1;
  int row_blocks = 1;
};

// Byte offset of 16-byte chunk c of row r in a tile of kChunks chunks per row (XOR-swizzled: the
// 8 rows an ldmatrix reads at one chunk fall on 8 different bank groups).
template <class Tr>
__device__ __forceinline__ std::uint32_t swz(int r, int c) {
  return static_cast<std::uint32_t>(r * Tr::kRowBytes + ((c ^ (r & 7)) << 4));
}

// A paged cache's page shift: log2 of the page size where it is a power of two, else -1.
__device__ __forceinline__ int page_shift(int page_size) {
  return __popc(page_size) == 1 ? __ffs(page_size) - 1 : -1;
}

// The table index of `key`'s page, and its slot in the page: a shift where `shift` >= 0 (a
// division's ~25 instructions a tile were a large part of the decode loop's at GPT-2 124M B128,
// s40). Shared by decode_kernel and the 8-bit cache's kernel (fwd_decode_q8.cuh).
__device__ __forceinline__ int page_of(int key, int page_size, int shift, int& slot) {
  const int q = shift >= 0 ? key >> shift : key / page_size;
  slot = key - q * page_size;
  return q;
}

// Whether a paged cache's K and V are laid out alike with every offset of the pool under 2^31 (its
// largest offset, so that a strided view of any layout counts; num_pages x the page stride for a
// contiguous pool): then one 32-bit offset a row serves both (decode_kernel's per-row and
// two-page paths). The 8-bit kernel's two-page path keeps 64-bit offsets: the 32-bit form spilled
// its paged e4m3 instantiations (ptxas, nvcc 13.0: head dim 128 0 -> 8 bytes, 256 44 -> 48).
__device__ __forceinline__ bool narrow_pool(const FwdParams& p) {
  return p.k_batch_stride == p.v_batch_stride && p.k_row_stride == p.v_row_stride &&
         p.k_head_stride == p.v_head_stride &&
         static_cast<long long>(p.num_pages - 1) * p.k_batch_stride +
                 static_cast<long long>(p.page_size - 1) * p.k_row_stride +
                 static_cast<long long>(p.hkv - 1) * p.k_head_stride + p.head_dim <=
             (1LL << 31) - 1;
}

// The end of a decode CTA, once each warp has left its 16 rows of O (unnormalized, fp32, pitch
// Tr::kOPitch), its row maxima and its quad sums in the merge area `merge` (the K/V ring's memory,
// now free): the 4 warps' rows merged, scaled by out_scale (a quantized cache's v_scale, else 1),
// then stored to out as T (and the LSE), or with splits left in the workspace for the CTA that
// counts in last, which merges every split's rows in split order. Shared by decode_kernel and
// the 8-bit cache's kernel (fwd_decode_q8.cuh).
template <class Tr, typename T>
__device__ __forceinline__ void merge_and_store(const FwdParams& p, const DecodeWork& work,
                                                unsigned char* merge, int b, int hk, int s, int r0,
                                                int rows, float out_scale) {
  constexpr int D = Tr::kHeadDim;
  const int tid = static_cast<int>(threadIdx.x);
  const int group = p.hq / p.hkv;
  const long long unit =
      (static_cast<long long>(b) * p.hkv + hk) * work.row_blocks + r0 / Tr::kRows;
  float* const mo = reinterpret_cast<float*>(merge);
  float* const mm = mo + Tr::kWarps * Tr::kRows * Tr::kOPitch;
  float* const ml = mm + Tr::kWarps * Tr::kRows;
  __syncthreads();
  // Thread tid: row tid / 8 of the block, columns [(tid % 8) * D / 8, + D / 8).
  constexpr int kCols = D / 8;
  const int r = tid / 8, col0 = (tid % 8) * kCols;
  float acc[kCols];
  float m_all = -INFINITY;
#pragma unroll
  for (int w = 0; w < Tr::kWarps; ++w) m_all = fmaxf(m_all, mm[w * Tr::kRows + r]);
  const float m_use = m_all == -INFINITY ? 0.f : m_all;
  float l_all = 0.f;
#pragma unroll
  for (int c = 0; c < kCols; ++c) acc[c] = 0.f;
#pragma unroll
  for (int w = 0; w < Tr::kWarps; ++w) {
    const float a = ptx::fast_exp2(mm[w * Tr::kRows + r] - m_use);
    l_all += a * ml[w * Tr::kRows + r];
    const float* src = mo + (w * Tr::kRows + r) * Tr::kOPitch + col0;
#pragma unroll
    for (int c = 0; c < kCols; ++c) acc[c] += a * src[c];
  }
  const float inv = l_all > 0.f ? out_scale / l_all : 0.f;
  // log2-sum-exp of the row over this CTA's keys (-inf: none seen)
  const float lse2 = l_all > 0.f ? m_all + log2f(l_all) : -INFINITY;
#pragma unroll
  for (int c = 0; c < kCols; ++c) acc[c] *= inv;
  // Row r of the block, columns [c0, c0 + kCols), to out (and its LSE, from the row's first
  // thread), unless the packed row lies past the sequence.
  auto store_row = [&](int row, int c0, const float(&v)[kCols], float l2) {
    const int prow = r0 + row;
    const int qi = prow / group, h = hk * group + prow % group;
    T* const out = static_cast<T*>(p.o) + p.o_offset(b, qi, h) + c0;
#pragma unroll
    for (int c = 0; c < kCols; c += 8) {
      uint4 u;
      u.x = ptx::pack2<T>(v[c], v[c + 1]);
      u.y = ptx::pack2<T>(v[c + 2], v[c + 3]);
      u.z = ptx::pack2<T>(v[c + 4], v[c + 5]);
      u.w = ptx::pack2<T>(v[c + 6], v[c + 7]);
      ptx::st_global_v4(out + c, u);
    }
    if (p.lse != nullptr && tid % 8 == 0) {
      p.lse[p.lse_offset(b, qi, h)] = l2 == -INFINITY ? -INFINITY : l2 * 0.69314718055994531f;
    }
  };

  const int valid_rows = min(Tr::kRows, rows - r0);
  if (work.splits == 1) {
    if (r < valid_rows) store_row(r, col0, acc, lse2);
    return;
  }
  // Leave this split's valid rows in its slot and count in; the CTA that counts last merges.
  {
    const long long slot = unit * work.splits + s;
    if (r < valid_rows) {
      float* const wo = work.o + (slot * Tr::kRows + r) * D + col0;
#pragma unroll
      for (int c = 0; c < kCols; c += 4) {
        __stcg(reinterpret_cast<float4*>(wo + c),
               make_float4(acc[c], acc[c + 1], acc[c + 2], acc[c + 3]));
      }
      if (tid % 8 == 0) __stcg(work.lse2 + slot * Tr::kRows + r, lse2);
    }
  }
  // Count in: the CTA's rows are written (the barrier), then one acquire-release add at GPU scope
  // releases them to the CTA that counts in last and, in that CTA, acquires every earlier
  // split's (read after the second barrier). In place of a __threadfence by every thread, the
  // add and a second fence: 0.3-0.4 us less at the end of every split CTA (H200, s30 call 3).
  __shared__ int last;
  __syncthreads();  // (also: every thread is done with the merge area, reused below)
  if (tid == 0) {
    const int before = ptx::atom_add_acq_rel_gpu(work.counts + unit, 1);
    // A count starts at zero and ends at splits: more means it was not zero at the start, and a
    // split merged the unit before every split was in. Stop with an error (a trap), not a wrong O.
    if (before >= work.splits) __trap();
    last = before == work.splits - 1;
  }
  __syncthreads();
  if (!last) return;
  // Every split has counted in: the count is zeroed for the next launch (sm80::LaunchCounters).
  if (tid == 0) work.counts[unit] = 0;
  // The merge, spread over the CTA: every (row, split) log2-sum-exp at once into shared memory,
  // then per row its weights 2^(lse2_k - max) and their sum, then each thread a float4 of O at a
  // time, summing over the splits with several loads in flight.
  const int splits = work.splits;
  float* const wts = mo;                                        // [valid_rows][splits]
  float* const rsum = mo + Tr::kRows * DecodePlan::kMaxSplits;  // [valid_rows]
  float* const rmax = rsum + Tr::kRows;
  {
    // At most kRows x kMaxSplits = 8 a thread, issued at once: the indices clamped, not the loads
    // predicated (predicated, nvcc put such loads into one register and waited on each).
    constexpr int kPer = Tr::kRows * DecodePlan::kMaxSplits / Tr::kThreads;
    const int n = valid_rows * splits;
    float v[kPer];
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int e = min(tid + j * Tr::kThreads, n - 1);
      v[j] = __ldcg(work.lse2 + (unit * splits + e % splits) * Tr::kRows + e / splits);
    }
#pragma unroll
    for (int j = 0; j < kPer; ++j)
      if (tid + j * Tr::kThreads < n) wts[tid + j * Tr::kThreads] = v[j];
  }
  __syncthreads();
  // Per row its weights and their sum, a warp a row (rows warp, warp + kWarps, ...), lane l
  // taking splits l and l + 32, max and sum by shuffles: by one thread a row, looping over the
  // splits, this was a serial chain of 2 x splits shared-memory loads and exponentials.
  static_assert(DecodePlan::kMaxSplits <= 64, "two splits a lane");
  for (int row = tid / 32; row < valid_rows; row += Tr::kWarps) {
    const int lane = tid % 32;
    float* const wr = wts + row * splits;
    const float x0 = lane < splits ? wr[lane] : -INFINITY;
    const float x1 = lane + 32 < splits ? wr[lane + 32] : -INFINITY;
    float m = fmaxf(x0, x1);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    const float mu = m == -INFINITY ? 0.f : m;
    const float w0 = lane < splits ? ptx::fast_exp2(x0 - mu) : 0.f;
    const float w1 = lane + 32 < splits ? ptx::fast_exp2(x1 - mu) : 0.f;
    if (lane < splits) wr[lane] = w0;
    if (lane + 32 < splits) wr[lane + 32] = w1;
    float sum = w0 + w1;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) {
      rsum[row] = sum;
      rmax[row] = m;
    }
  }
  __syncthreads();
  constexpr int kVec = D / 4;  // float4s per row
  for (int e = tid; e < valid_rows * kVec; e += Tr::kThreads) {
    const int row = e / kVec, c4 = e % kVec;
    const float* src = work.o + (unit * splits * Tr::kRows + row) * D + 4 * c4;
    const float* w = wts + row * splits;
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 8
    for (int k = 0; k < splits; ++k) {
      const float4 v = __ldcg(reinterpret_cast<const float4*>(src + k * Tr::kRows * D));
      a.x += w[k] * v.x;
      a.y += w[k] * v.y;
      a.z += w[k] * v.z;
      a.w += w[k] * v.w;
    }
    const float sum = rsum[row];
    const float inv_w = sum > 0.f ? 1.f / sum : 0.f;
    const int pr_row = r0 + row;
    T* const out =
        static_cast<T*>(p.o) + p.o_offset(b, pr_row / group, hk * group + pr_row % group) + 4 * c4;
    uint2 v;
    v.x = ptx::pack2<T>(a.x * inv_w, a.y * inv_w);
    v.y = ptx::pack2<T>(a.z * inv_w, a.w * inv_w);
    *reinterpret_cast<uint2*>(out) = v;
    if (p.lse != nullptr && c4 == 0) {
      const float l2 = sum > 0.f ? rmax[row] + log2f(sum) : -INFINITY;
      p.lse[p.lse_offset(b, pr_row / group, hk * group + pr_row % group)] =
          l2 == -INFINITY ? -INFINITY : l2 * 0.69314718055994531f;
    }
  }
}

// The decode kernels' per-thread tile steps (decode_body here and decode_q8_kernel in
// fwd_decode_q8.cuh): a warp holds S for the block's 16 rows and its own 16 keys of a tile as two
// m16n8 accumulators; thread `lane` holds rows lane / 4 and lane / 4 + 8 (h = 0, 1), each on the 4
// threads of a quad.

// The key limits of the thread's two rows: keys [0, lim[h]) are visible (the sequence end, and
// the causal diagonal, bottom-right aligned). The block's rows are the (query row, head of the
// group) pairs from r0 on; a row past `rows` takes the last query row's limit.
__device__ __forceinline__ void row_key_limits(const FwdParams& p, int r0, int lane, int rows,
                                               int group, int lq, int lk, int (&lim)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int pr = r0 + lane / 4 + 8 * h;
    const int i = pr < rows ? pr / group : lq - 1;
    const long long l = p.causal ? static_cast<long long>(lk) - lq + i + 1 : lk;
    lim[h] = l < 0 ? 0 : l > lk ? lk : static_cast<int>(l);
  }
}

// S's keys at or past their row's limit to -inf; n0 is the thread's first key (its keys are n0,
// n0 + 1, n0 + 8, n0 + 9).
__device__ __forceinline__ void mask_past_limits(float (&sacc)[2][4], int n0, const int (&lim)[2]) {
  if (n0 + 10 > lim[0] || n0 + 10 > lim[1]) {
#pragma unroll
    for (int nb = 0; nb < 2; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (n0 + 8 * nb + (e & 1) >= lim[e >> 1]) sacc[nb][e] = -INFINITY;
  }
}

// Soft-capping (AttentionArgs::softcap): row h's scores times pre[h] become their tanh (q.k *
// scale / softcap), which the row's softmax scale (softcap * log2(e)) then carries into the exp2
// domain. Before the mask, so that a masked score stays -inf. `exact`: a cap above
// FwdParams::kFastTanhMaxCap (FwdParams::exact_tanh, uniform over the call).
__device__ __forceinline__ void softcap_scores(float (&sacc)[2][4], const float (&pre)[2],
                                               bool exact) {
  const float k[2] = {ptx::tanh_log2_factor(pre[0]), ptx::tanh_log2_factor(pre[1])};
  if (exact) {
#pragma unroll
    for (int nb = 0; nb < 2; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        sacc[nb][e] = ptx::tanh_of_log2_exact<false>(sacc[nb][e] * k[e >> 1]);
      }
  } else {
#pragma unroll
    for (int nb = 0; nb < 2; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) sacc[nb][e] = ptx::tanh_of_log2<false>(sacc[nb][e] * k[e >> 1]);
  }
}

// ALiBi (AttentionArgs::alibi_slopes): -slope x |key position of the row - key| on each score, in
// the raw units the row's scale (scale_log2) multiplies later; n0 is the thread's first key (as
// for mask_past_limits). Packed row pr of the block is query i = pr / group of query head
// hk group + pr % group; rows past `rows` (never stored) take no bias. Before the mask, after the
// soft-cap. The slopes are read here, each tile, so that no register holds them across the loop
// (the call's branch is uniform: other calls skip it).
__device__ __forceinline__ void alibi_scores(const FwdParams& p, float (&sacc)[2][4], int n0,
                                             int r0, int lane, int rows, int group, int lq,
                                             int lk, int b, int hk) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int pr = r0 + lane / 4 + 8 * h;
    if (pr >= rows) continue;
    const float slope = p.alibi_slope(b, hk * group + pr % group) * p.alibi_raw;
    const float d0 = static_cast<float>(pr / group + lk - lq - n0);  // to key n0
#pragma unroll
    for (int nb = 0; nb < 2; ++nb)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = sacc[nb][2 * h + e];
        x = fmaf(-slope, fabsf(d0 - static_cast<float>(8 * nb + e)), x);
      }
  }
}

// One tile's online softmax: row h's scores times scale[h] are its log2-domain logits. The row
// maxima and sums move on, O (D / 8 m16n8 accumulators) is rescaled, and P = exp2(logit - max)
// comes back packed as m16n8k16's A fragment of T elements.
template <typename T, int D>
__device__ __forceinline__ void online_softmax_step(float (&sacc)[2][4], const float (&scale)[2],
                                                    float (&row_max)[2], float (&row_sum)[2],
                                                    float (&o)[D / 8][4], std::uint32_t (&pa)[4]) {
  float alpha[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float mx =
        fmaxf(fmaxf(sacc[0][2 * h], sacc[0][2 * h + 1]), fmaxf(sacc[1][2 * h], sacc[1][2 * h + 1]));
    mx = ptx::quad_max(mx) * scale[h];
    const float m_new = fmaxf(row_max[h], mx);
    const float m_use = m_new == -INFINITY ? 0.f : m_new;
    alpha[h] = ptx::fast_exp2(row_max[h] - m_use);
    row_max[h] = m_new;
    float sum = 0.f;
#pragma unroll
    for (int nb = 0; nb < 2; ++nb)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = sacc[nb][2 * h + e];
        x = ptx::fast_exp2(fmaf(x, scale[h], -m_use));
        sum += x;
      }
    row_sum[h] = row_sum[h] * alpha[h] + sum;
  }
  // O rescaled only when a row maximum of the warp moved: alpha == 1 leaves O as it is (the
  // result is bitwise the same), and past a long sequence's first tiles the maxima seldom move
  // (at D256 the rescale is 128 FMULs a thread a tile). The vote keeps the branch warp-uniform.
  if (!__all_sync(0xffffffffu, alpha[0] == 1.f && alpha[1] == 1.f)) {
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      o[n][0] *= alpha[0];
      o[n][1] *= alpha[0];
      o[n][2] *= alpha[1];
      o[n][3] *= alpha[1];
    }
  }
  pa[0] = ptx::pack2<T>(sacc[0][0], sacc[0][1]);
  pa[1] = ptx::pack2<T>(sacc[0][2], sacc[0][3]);
  pa[2] = ptx::pack2<T>(sacc[1][0], sacc[1][1]);
  pa[3] = ptx::pack2<T>(sacc[1][2], sacc[1][3]);
}

// kPaged: K/V are a page pool read through p.block_table (a separate instantiation, so the
// dense kernel carries none of it). The body of decode_kernel and decode_kernel_lean below.
template <class Tr, bool kPaged>
__device__ __forceinline__ void decode_body(const FwdParams& p, const DecodeWork& work) {
  using T = typename Tr::T;
  constexpr int D = Tr::kHeadDim, kN = Tr::kBlockN, kChunks = Tr::kChunks;
  extern __shared__ __align__(128) unsigned char smem[];
  const std::uint32_t sq = ptx::smem_addr(smem);
  const std::uint32_t ring = sq + Tr::kQBytes;
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  // Launched with PDL (launch_decode): nothing global is touched before the kernel ahead is done,
  // unless the call promised (FwdParams::pdl_early, AttentionArgs::pdl_cache_ready) that it wrote
  // none of the index arrays and none of the keys but each sequence's newest lq: then the first
  // tiles' older keys are issued first and the wait comes after them (below).
  const bool early = p.pdl_early;
  if (!early) {
    ptx::griddep_wait();
    ptx::griddep_launch_dependents();
  }

  // Which unit (batch b, KV head hk, row block rb) and split s: row blocks vary fastest, so the
  // CTAs that read the same K/V run side by side.
  long long idx = blockIdx.x;
  const int rb = static_cast<int>(idx % work.row_blocks);
  idx /= work.row_blocks;
  const int s = static_cast<int>(idx % work.splits);
  idx /= work.splits;
  const int hk = static_cast<int>(idx % p.hkv);
  const int b = static_cast<int>(idx / p.hkv);
  const int group = p.hq / p.hkv;
  const int lq = p.len_q(b), lk = p.keys_used(b);
  const int rows = lq * group;  // packed rows of this (b, hk)
  const int r0 = rb * Tr::kRows;
  if (r0 >= rows) {  // varlen: a shorter sequence (the same for every split of the unit)
    // Early, the wait first all the same: a grid whose CTAs all left without it would let the
    // kernel after it start before the kernel ahead is done.
    if (early) ptx::griddep_wait();
    return;
  }

  const int kend = DecodePlan::key_end(rb, group, lq, lk, p.causal);
  int t0 = 0, t1 = 0;
  DecodePlan::range((kend + kN - 1) / kN, work.splits, s, t0, t1);

  // Q: packed row r0 + r is query row (r0 + r) / group of head hk * group + (r0 + r) % group;
  // rows past the sequence are zero-filled (their results are never stored).
  const auto load_q = [&] {
    constexpr int kPerThread = Tr::kRows * kChunks / Tr::kThreads;
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int e = tid + u * Tr::kThreads;
      const int r = e / kChunks, c = e % kChunks;
      const int pr = r0 + r;
      const bool valid = pr < rows;
      const T* src = static_cast<const T*>(p.q);
      if (valid) src += p.q_offset(b, pr / group, hk * group + pr % group) + c * 8;
      ptx::cp_async_16(sq + swz<Tr>(r, c), src, valid);
    }
  };
  if (!early) load_q();
  // K/V tile t into stage st. Each warp loads the 16 rows it reads (its keys of the tile, for S and
  // for P V), so a tile needs no CTA barrier, only the warp's own: lane l takes chunk l % kChunks
  // of rows row0 + u * kStep. Keys past the sequence are zero-filled (finite V under P = 0).
  static_assert(kChunks <= 32 && 32 % kChunks == 0, "a row's chunks within a warp");
  constexpr int kWarpRows = kN / Tr::kWarps;  // 16
  constexpr int kStep = 32 / kChunks, kRowsPerThread = kWarpRows / kStep;
  static_assert(kRowsPerThread * kStep == kWarpRows, "a warp's rows divide over its lanes");
  const int row0 = kWarpRows * warp + lane / kChunks;
  const T* const kbase = static_cast<const T*>(p.k);
  const T* const vbase = static_cast<const T*>(p.v);
  // Unpaged: the sequence's first row in K and V (varlen: cu_seqlens_k[b]), read once. A tile's
  // rows are stepped from its first: k_offset_unpaged a row reloaded cu_seqlens_k[b] every tile
  // (after each __syncthreads) and multiplied 64-bit offsets per row, ~40% of the D256 loop's
  // instructions.
  const std::int64_t row0_k = kPaged ? 0 : p.row0_k(b) + p.key_start(b);  // dense: leftpad_k
  // A paged cache is read in place. Each row's page comes from the block table one step before
  // its tile is issued (fetch_pages into `pages`), so the table's latency is not in the issue;
  // the row's slot in its page is stepped from one division a tile.
  // At head dim 256 (16 rows a thread) the table is read at issue instead: holding 16 more
  // registers through the tile's compute spilled (255 registers).
  constexpr bool kEarlyPages = kRowsPerThread <= 8;
  const std::int32_t* const table = p.block_table + b * p.block_table_stride;
  std::int32_t pages[kEarlyPages ? kRowsPerThread : 1];
  // Key `key` of the call is the cache's logical key key0 + key (leftpad_k: a sequence's keys
  // start at key0; its pages before that are never read, and may be unset entries). Pages of a
  // multiple of a warp's 16 keys (the engine's 16 included), key0 a multiple of 16 too, hold each
  // warp's rows of a tile whole: one table entry a warp and tile (warp_page: the page of the
  // warp's first row of tile t, and its slot; fetch_pages leaves them in pages[0] and warp_slot),
  // rows addressed as in a dense cache. (Past the sequence, no entry: page 0's address, nothing
  // read.)
  const int key0 = kPaged ? p.key_start(b) : 0;
  const bool whole_warps = kPaged && p.page_size % kWarpRows == 0 && key0 % kWarpRows == 0;
  const int ps_log2 = kPaged ? page_shift(p.page_size) : -1;
  int warp_slot = 0;
  const auto warp_page = [&](int t, int& slot) {
    const int key = t * kN + kWarpRows * warp;
    const int q = page_of(key0 + key, p.page_size, ps_log2, slot);
    return key < lk ? __ldg(table + q) : 0;
  };
  // Other pages of 16 keys or more (key0 off a multiple of 16, or a size that is not one): a
  // warp's 16 rows of a tile lie in at most two pages, the first from the slot of the warp's
  // first row on, then the next: two table entries a warp and tile (warp_pages: the first, and
  // the next in `second` where the rows cross into it before the sequence's end), each row's page
  // picked by whether it passes the first one's end.
  const bool two_pages = kPaged && !whole_warps && p.page_size >= kWarpRows;
  const auto warp_pages = [&](int t, int& slot, std::int32_t& second) {
    const int key = t * kN + kWarpRows * warp;
    const int q = page_of(key0 + key, p.page_size, ps_log2, slot);
    const std::int32_t first = key < lk ? __ldg(table + q) : 0;
    const int cross = p.page_size - slot;  // the warp's rows in the first page
    second = cross < kWarpRows && key + cross < lk ? __ldg(table + q + 1) : first;
    return first;
  };
  // K and V laid out alike in a pool of under 2^31 elements: one 32-bit offset a row for both.
  const bool narrow = kPaged && narrow_pool(p);
  auto fetch_pages = [&](int t) {
    if (!kEarlyPages || !kPaged || t >= t1) return;
    if (whole_warps) {
      pages[0] = warp_page(t, warp_slot);
      return;
    }
    if (two_pages) {
      pages[0] = warp_pages(t, warp_slot, pages[kEarlyPages ? 1 : 0]);
      return;
    }
    int key = t * kN + row0;
    int page = (key0 + key) / p.page_size, slot = key0 + key - page * p.page_size;
#pragma unroll
    for (int u = 0; u < kRowsPerThread; ++u) {
      pages[u] = key < lk ? __ldg(table + page) : 0;
      key += kStep;
      for (slot += kStep; slot >= p.page_size; slot -= p.page_size) ++page;  // into later pages
    }
  };
  // Ranged: only the rows of keys in [lo, hi) (the early start's two halves of a tile); the others
  // are left to the other half.
  auto load_tile = [&](int t, int st, auto ranged, int lo, int hi) {
    constexpr bool kRanged = decltype(ranged)::value;
    const auto in = [&](int key) { return !kRanged || (key >= lo && key < hi); };
    const int c = lane % kChunks;
    const std::uint32_t kdst = ring + st * 2 * Tr::kTileBytes;
    const std::uint32_t vdst = kdst + Tr::kTileBytes;
    if constexpr (kPaged) {
      if (whole_warps) {
        int slot = warp_slot;
        const std::int64_t pg = kEarlyPages ? pages[0] : warp_page(t, slot);
        const std::int64_t row = slot + lane / kChunks;
        const T* ks =
            kbase + pg * p.k_batch_stride + row * p.k_row_stride + hk * p.k_head_stride + c * 8;
        const T* vs =
            vbase + pg * p.v_batch_stride + row * p.v_row_stride + hk * p.v_head_stride + c * 8;
#pragma unroll
        for (int r = row0; r < row0 + kWarpRows; r += kStep) {
          const bool valid = t * kN + r < lk;
          if (in(t * kN + r)) {
            ptx::cp_async_16(kdst + swz<Tr>(r, c), valid ? ks : kbase, valid);
            ptx::cp_async_16(vdst + swz<Tr>(r, c), valid ? vs : vbase, valid);
          }
          ks += kStep * p.k_row_stride;
          vs += kStep * p.v_row_stride;
        }
        return;
      }
      if (two_pages) {
        int slot = warp_slot;
        std::int32_t second = 0;
        const std::int64_t p0 = kEarlyPages ? pages[0] : warp_pages(t, slot, second);
        const std::int64_t p1 = kEarlyPages ? pages[kEarlyPages ? 1 : 0] : second;
        const int cross = p.page_size - slot;  // the warp's rows in its first page
        if (narrow) {
          // K and V laid out alike in a pool of under 2^31 elements: 32-bit offsets, one for
          // both (as the per-row path below), of the warp's row 0 in the first page and of row
          // `cross` less cross rows in the second: row o at its page's offset + o rows.
          const int rs = static_cast<int>(p.k_row_stride);
          const int col = hk * static_cast<int>(p.k_head_stride) + c * 8;
          const int o0 = static_cast<int>(p0) * static_cast<int>(p.k_batch_stride) + slot * rs + col;
          const int o1 = static_cast<int>(p1) * static_cast<int>(p.k_batch_stride) - cross * rs + col;
#pragma unroll
          for (int r = row0; r < row0 + kWarpRows; r += kStep) {
            const int o = r - kWarpRows * warp;  // the row among the warp's 16
            const bool valid = t * kN + r < lk;
            if (in(t * kN + r)) {
              const int off = (o < cross ? o0 : o1) + o * rs;
              ptx::cp_async_16(kdst + swz<Tr>(r, c), valid ? kbase + off : kbase, valid);
              ptx::cp_async_16(vdst + swz<Tr>(r, c), valid ? vbase + off : vbase, valid);
            }
          }
          return;
        }
        // Element offsets of the warp's row 0 in the first page and of row `cross` less cross
        // rows in the second: row o at its page's offset + o rows.
        const std::int64_t kc = hk * p.k_head_stride + c * 8, vc = hk * p.v_head_stride + c * 8;
        const std::int64_t k0 = p0 * p.k_batch_stride + slot * p.k_row_stride + kc;
        const std::int64_t v0 = p0 * p.v_batch_stride + slot * p.v_row_stride + vc;
        const std::int64_t k1 = p1 * p.k_batch_stride - cross * p.k_row_stride + kc;
        const std::int64_t v1 = p1 * p.v_batch_stride - cross * p.v_row_stride + vc;
#pragma unroll
        for (int r = row0; r < row0 + kWarpRows; r += kStep) {
          const int o = r - kWarpRows * warp;  // the row among the warp's 16
          const bool valid = t * kN + r < lk;
          if (in(t * kN + r)) {
            const bool first = o < cross;
            const T* ks = kbase + (first ? k0 : k1) + o * p.k_row_stride;
            const T* vs = vbase + (first ? v0 : v1) + o * p.v_row_stride;
            ptx::cp_async_16(kdst + swz<Tr>(r, c), valid ? ks : kbase, valid);
            ptx::cp_async_16(vdst + swz<Tr>(r, c), valid ? vs : vbase, valid);
          }
        }
        return;
      }
      int key = t * kN + row0;
      int page = (key0 + key) / p.page_size, slot = key0 + key - page * p.page_size;
      if (kEarlyPages && narrow) {
        // K and V laid out alike in a pool of under 2^31 elements: one 32-bit offset a row,
        // shared by both.
        const int col = hk * static_cast<int>(p.k_head_stride) + c * 8;
        const int page_stride = static_cast<int>(p.k_batch_stride);
        const int row_stride = static_cast<int>(p.k_row_stride);
#pragma unroll
        for (int u = 0; u < kRowsPerThread; ++u) {
          const int r = row0 + u * kStep;
          const bool valid = key < lk;
          const int off = pages[kEarlyPages ? u : 0] * page_stride + slot * row_stride + col;
          if (in(key)) {
            ptx::cp_async_16(kdst + swz<Tr>(r, c), valid ? kbase + off : kbase, valid);
            ptx::cp_async_16(vdst + swz<Tr>(r, c), valid ? vbase + off : vbase, valid);
          }
          key += kStep;
          for (slot += kStep; slot >= p.page_size; slot -= p.page_size) ++page;
        }
        return;
      }
      const std::int64_t kcol = hk * p.k_head_stride + c * 8, vcol = hk * p.v_head_stride + c * 8;
      // Rolled at head dim 256: unrolled, its addresses spilled the kernel's registers.
#pragma unroll(kEarlyPages ? kRowsPerThread : 1)
      for (int u = 0; u < kRowsPerThread; ++u) {
        const int r = row0 + u * kStep;
        const bool valid = key < lk;
        const T* ks = kbase;
        const T* vs = vbase;
        if (valid) {
          const std::int64_t pg = kEarlyPages ? pages[kEarlyPages ? u : 0] : __ldg(table + page);
          ks += pg * p.k_batch_stride + slot * p.k_row_stride + kcol;
          vs += pg * p.v_batch_stride + slot * p.v_row_stride + vcol;
        }
        if (in(key)) {
          ptx::cp_async_16(kdst + swz<Tr>(r, c), ks, valid);
          ptx::cp_async_16(vdst + swz<Tr>(r, c), vs, valid);
        }
        key += kStep;
        for (slot += kStep; slot >= p.page_size; slot -= p.page_size) ++page;
      }
    } else {
      int key = t * kN + row0;
      const T* ks = kbase + p.k_row_offset(b, row0_k + key, hk) + c * 8;
      const T* vs = vbase + p.v_row_offset(b, row0_k + key, hk) + c * 8;
      // A fixed count: unrolled whole up to 8 rows; by 4 at head dim 256 (16 rows a thread),
      // where 16 rows' addresses at once spilled.
#pragma unroll(kRowsPerThread <= 8 ? kRowsPerThread : 4)
      for (int u = 0; u < kRowsPerThread; ++u) {
        const int r = row0 + u * kStep;
        const bool valid = key < lk;
        if (in(key)) {
          ptx::cp_async_16(kdst + swz<Tr>(r, c), valid ? ks : kbase, valid);
          ptx::cp_async_16(vdst + swz<Tr>(r, c), valid ? vs : vbase, valid);
        }
        key += kStep;
        ks += kStep * p.k_row_stride;
        vs += kStep * p.v_row_stride;
      }
    }
  };
  // The ring: tile t0 + i in stage i % kStages; one commit group per tile (the first with Q; early,
  // the first with Q and every prologue tile, the others empty).
  using Whole = std::integral_constant<bool, false>;
  using Ranged = std::integral_constant<bool, true>;
  if (!early) {
#pragma unroll
    for (int i = 0; i < Tr::kStages - 1; ++i) {
      if (t0 + i < t1) {
        fetch_pages(t0 + i);
        load_tile(t0 + i, i, Whole{}, 0, 0);
      }
      ptx::cp_async_commit();
    }
  } else {
    // The first tiles' keys before the newest lq, then the wait, then Q and the newest keys (rows
    // past lk zero-filled as ever): all in the first commit group, the others empty, so the ring
    // still counts one group a tile (its first wait waits for all of them).
    const int fresh = max(0, lk - lq);
#pragma unroll
    for (int i = 0; i < Tr::kStages - 1; ++i) {
      if (t0 + i < t1) {
        fetch_pages(t0 + i);
        load_tile(t0 + i, i, Ranged{}, 0, fresh);
      }
    }
    ptx::griddep_wait();
    ptx::griddep_launch_dependents();
    load_q();
#pragma unroll
    for (int i = 0; i < Tr::kStages - 1; ++i) {
      if (t0 + i < t1 && (t0 + i + 1) * kN > fresh) {
        fetch_pages(t0 + i);
        load_tile(t0 + i, i, Ranged{}, fresh, INT_MAX);
      }
    }
#pragma unroll
    for (int i = 0; i < Tr::kStages - 1; ++i) ptx::cp_async_commit();
  }
  fetch_pages(t0 + Tr::kStages - 1);

  // Per thread: rows lane / 4 and lane / 4 + 8 of the block; their causal key limits.
  int lim[2];
  row_key_limits(p, r0, lane, rows, group, lq, lk, lim);
  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[n][e] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};
  const float scale[2] = {p.scale_log2, p.scale_log2};
  const float cap_pre[2] = {p.softcap_pre, p.softcap_pre};
  std::uint32_t qf[D / 16][4];

  for (int t = t0; t < t1; ++t) {
    const int i = t - t0;
    // Issue this warp's rows of tile t + kStages - 1 into the stage tile t - 1 used (the warp is
    // past it: the __syncwarp at the end of the previous step), then wait for tile t. Its rows
    // are this warp's own copies: the warp's barrier suffices, except on the first tile, whose
    // group holds Q too, copied by every thread and read by every warp.
    if (t + Tr::kStages - 1 < t1) {
      load_tile(t + Tr::kStages - 1, (i + Tr::kStages - 1) % Tr::kStages, Whole{}, 0, 0);
      fetch_pages(t + Tr::kStages);  // lands while tile t is computed
    }
    ptx::cp_async_commit();
    ptx::cp_async_wait<Tr::kStages - 1>();
    if (i == 0) {
      __syncthreads();
    } else {
      __syncwarp();
    }
    if (i == 0) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        ptx::ldmatrix_x4(qf[kk], sq + swz<Tr>(lane % 16, 2 * kk + lane / 16));
      }
    }
    const std::uint32_t ks = ring + (i % Tr::kStages) * 2 * Tr::kTileBytes;
    const std::uint32_t vs = ks + Tr::kTileBytes;
    // S (16 rows x this warp's 16 keys) = Q K^T: per k-step one ldmatrix of K gives both n8
    // blocks' B fragments (matrices: keys 0-7 / 8-15 x chunks 2kk / 2kk+1).
    float sacc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
    const int krow = 16 * warp + (lane / 16) * 8 + lane % 8;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      std::uint32_t kb[4];
      ptx::ldmatrix_x4(kb, ks + swz<Tr>(krow, 2 * kk + (lane / 8) % 2));
      ptx::mma_16816<T>(sacc[0], qf[kk], kb[0], kb[1]);
      ptx::mma_16816<T>(sacc[1], qf[kk], kb[2], kb[3]);
    }
    // Soft-capped scores (a branch uniform over the call), then keys at or past a row's limit
    // masked (the sequence end, the causal diagonal).
    if (p.has_softcap()) softcap_scores(sacc, cap_pre, p.exact_tanh());
    if (p.has_alibi()) {
      alibi_scores(p, sacc, t * kN + 16 * warp + 2 * (lane % 4), r0, lane, rows, group, lq, lk, b,
                   hk);
    }
    mask_past_limits(sacc, t * kN + 16 * warp + 2 * (lane % 4), lim);
    // Online softmax per row (the row's 16 keys lie on the 4 threads of a quad); then O += P V:
    // P from S's registers (the A fragment of m16n8k16), V by transposing loads (matrices: keys
    // 0-7 / 8-15 x chunks 2c / 2c+1).
    std::uint32_t pa[4];
    online_softmax_step<T, D>(sacc, scale, row_max, row_sum, o, pa);
    const int vrow = 16 * warp + ((lane / 8) % 2) * 8 + lane % 8;
#pragma unroll
    for (int c = 0; c < D / 16; ++c) {
      std::uint32_t vb[4];
      ptx::ldmatrix_x4_trans(vb, vs + swz<Tr>(vrow, 2 * c + lane / 16));
      ptx::mma_16816<T>(o[2 * c], pa, vb[0], vb[1]);
      ptx::mma_16816<T>(o[2 * c + 1], pa, vb[2], vb[3]);
    }
    __syncwarp();  // the warp's lanes are done with its rows of this stage before they reload them
  }
  ptx::cp_async_wait<0>();  // no copy may land in the ring once it holds the merge
  __syncthreads();          // nor any warp still read its rows there

  // The 4 warps' rows merged through shared memory: m and the quad's sum per row, O.
  float* const mo = reinterpret_cast<float*>(smem + Tr::kQBytes);
  float* const mm = mo + Tr::kWarps * Tr::kRows * Tr::kOPitch;
  float* const ml = mm + Tr::kWarps * Tr::kRows;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float sum = ptx::quad_sum(row_sum[h]);
    const int r = lane / 4 + 8 * h;
    if (lane % 4 == 0) {
      mm[warp * Tr::kRows + r] = row_max[h];
      ml[warp * Tr::kRows + r] = sum;
    }
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      float* dst = mo + (warp * Tr::kRows + r) * Tr::kOPitch + 8 * n + 2 * (lane % 4);
      dst[0] = o[n][2 * h];
      dst[1] = o[n][2 * h + 1];
    }
  }
  merge_and_store<Tr, T>(p, work, smem + Tr::kQBytes, b, hk, s, r0, rows, 1.f);
}

// The kernels: the same body, the lean one (DecodeTraits::kLean) with launch bounds for its 5 CTAs
// an SM. Two kernels rather than one with Tr::kMinCtas in its bounds: a minimum of 1 CTA an SM is
// not the same as none to ptxas (it gave the head-dim-128 kernels 171-172 registers instead of
// 164-168, 2 CTAs an SM instead of 3).
template <class Tr, bool kPaged>
__global__ void __launch_bounds__(Tr::kThreads)
    decode_kernel(const __grid_constant__ FwdParams p, const DecodeWork work) {
  static_assert(!Tr::kLean, "decode_kernel_lean takes the lean traits");
  decode_body<Tr, kPaged>(p, work);
}
template <class Tr, bool kPaged>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinCtas)
    decode_kernel_lean(const __grid_constant__ FwdParams p, const DecodeWork work) {
  static_assert(Tr::kLean, "decode_kernel takes the 3-stage traits");
  decode_body<Tr, kPaged>(p, work);
}

// Resident CTAs per SM of Kernel (a decode kernel of traits Tr) on the current device (cached per
// device).
template <class Tr, auto Kernel>
int ctas_per_sm() {
  static std::array<std::atomic<int>, 64> cache{};
  int device = 0;
  GPUATTN_CUDA_CHECK(cudaGetDevice(&device));
  const bool cacheable = device >= 0 && device < static_cast<int>(cache.size());
  int n = cacheable ? cache[device].load(std::memory_order_relaxed) : 0;
  if (n == 0) {
    sm80::prefer_max_shared(reinterpret_cast<const void*>(Kernel));
    GPUATTN_CUDA_CHECK(
        cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
    GPUATTN_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, Kernel, Tr::kThreads, Tr::kSmemBytes));
    n = std::max(n, 1);
    if (cacheable) cache[device].store(n, std::memory_order_relaxed);
  }
  return n;
}

// The split plan, the workspace and the launch of Kernel, a decode kernel of traits Tr (every one
// takes (FwdParams, DecodeWork) and merges its splits through merge_and_store).
template <class Tr, auto Kernel>
void launch_decode(const FwdParams& p, cudaStream_t stream) {
  const int group = p.hq / p.hkv;
  // One wave of at most Tr::kMaxCtasPerSm CTAs per SM. The 16-bit kernel counts 2: with 3
  // resident CTAs per SM at head dim 128, 6 splits of
  // B8 Hkv8 Sk4096 took 53.5 us against 51.5 for 4, and 49 splits of B1 Hkv8 Sk32768 55.0 against
  // 52.7 for 32 (H200, compare_torch, bench/results/2026-11-22-h200-decode): more CTAs add
  // partials to merge, not bandwidth.
  const long long slots = static_cast<long long>(sm80::num_sms()) *
                          std::min(ctas_per_sm<Tr, Kernel>(), Tr::kMaxCtasPerSm);
  const DecodePlan plan = DecodePlan::plan(p.batch, p.hkv, group, p.seqlen_q, p.seqlen_k, slots);
  const long long ctas = plan.units * plan.splits;
  if (ctas <= 0) return;  // no rows
  if (ctas > 0x7fffffffLL) {
    throw Error(ErrorCode::not_supported, "gpuattn: the decode grid of " + std::to_string(ctas) +
                                              " CTAs (batch " + std::to_string(p.batch) +
                                              " x kv heads " + std::to_string(p.hkv) +
                                              ") exceeds 2^31 - 1");
  }
  DecodeWork work;
  work.splits = plan.splits;
  work.row_blocks = plan.row_blocks;
  std::optional<sm80::LaunchCounters> counts;
  std::optional<sm80::LaunchBuffer> buffer;
  if (plan.splits > 1) {
    const long long slots_total = plan.units * plan.splits;
    const std::size_t o_bytes =
        static_cast<std::size_t>(slots_total) * Tr::kRows * Tr::kHeadDim * sizeof(float);
    const std::size_t lse_bytes = static_cast<std::size_t>(slots_total) * Tr::kRows * sizeof(float);
    counts.emplace(stream, static_cast<std::size_t>(plan.units), p);
    buffer.emplace(stream, o_bytes + lse_bytes, 0);
    char* base = buffer->as<char>();
    work.counts = counts->get();
    work.o = reinterpret_cast<float*>(base);
    work.lse2 = reinterpret_cast<float*>(base + o_bytes);
  }
  // AttentionArgs::pdl: in a chain of small kernels (a decode step) the launch overlaps the
  // kernel ahead (the kernel waits for it before it touches what that kernel may write; with
  // pdl_early, after issuing the first tiles' older keys).
  if (!p.pdl) {
    Kernel<<<dim3(static_cast<unsigned>(ctas)), Tr::kThreads, Tr::kSmemBytes, stream>>>(p, work);
    GPUATTN_CUDA_CHECK(cudaGetLastError());
    return;
  }
  GPUATTN_CUDA_CHECK(sm80::launch_pdl(Kernel, dim3(static_cast<unsigned>(ctas)), dim3(Tr::kThreads),
                                      Tr::kSmemBytes, stream, p, work));
}

// decode_16x64's calls: standard precision, no mask beyond causal, few rows per KV head.
inline void check_decode_call(const FwdParams& p) {
  if (p.precision != Precision::standard || !p.dense_or_causal() ||
      !DecodePlan::eligible(p.seqlen_q, p.hq / p.hkv)) {
    throw Error(
        ErrorCode::not_supported,
        "gpuattn: decode_16x64 runs standard-precision dense or causal calls with at most " +
            std::to_string(DecodePlan::kMaxRows) +
            " query rows per KV head; this call has seqlen_q " + std::to_string(p.seqlen_q) +
            " x group " + std::to_string(p.hq / p.hkv));
  }
}

// GPUATTN_DECODE_LEAN: unset or "auto" picks by DecodePlan::lean's rule, "0" never, "1" always
// (head dim 64). Read once.
int lean_force();

template <class Tr, bool kPaged>
void launch_decode_kernel(const FwdParams& p, cudaStream_t stream) {
  if constexpr (Tr::kLean) {
    launch_decode<Tr, decode_kernel_lean<Tr, kPaged>>(p, stream);
  } else {
    launch_decode<Tr, decode_kernel<Tr, kPaged>>(p, stream);
  }
}

template <typename T, int D>
void run_decode(const FwdParams& p, cudaStream_t stream) {
  using Tr = DecodeTraits<T, D>;
  static_assert(Tr::kRows == 16 && Tr::kBlockN == 64, "the table's decode_16x64");
  check_decode_call(p);
  const bool paged = p.is_paged();
  if constexpr (D == 64) {
    // The grid the 3-stage kernel would run against its one wave.
    using TrLean = DecodeTraits<T, D, true>;
    const int resident = paged ? ctas_per_sm<Tr, decode_kernel<Tr, true>>()
                               : ctas_per_sm<Tr, decode_kernel<Tr, false>>();
    const long long sms = sm80::num_sms();
    const long long slots = sms * std::min(resident, Tr::kMaxCtasPerSm);
    const DecodePlan plan =
        DecodePlan::plan(p.batch, p.hkv, p.hq / p.hkv, p.seqlen_q, p.seqlen_k, slots);
    // Only where the 3-stage kernel keeps kMaxCtasPerSm CTAs an SM, as the lean one does: with
    // fewer (one, at ~100 KB of shared memory an SM) the two would plan different splits.
    const int force = lean_force();
    if ((force == 1 || resident >= Tr::kMaxCtasPerSm) &&
        DecodePlan::lean(D, plan.units * plan.splits, sms * resident, force)) {
      return paged ? launch_decode_kernel<TrLean, true>(p, stream)
                   : launch_decode_kernel<TrLean, false>(p, stream);
    }
  }
  return paged ? launch_decode_kernel<Tr, true>(p, stream)
               : launch_decode_kernel<Tr, false>(p, stream);
}

}  // namespace gpuattn::decode
