// Split-KV decode over a quantized KV cache: k/v int8 or FP8 E4M3 with a scale per KV head
// (FwdParams::k_scale), q and out f16 or bf16. The work is laid out as in decode_kernel
// (fwd_decode.cuh: a GQA group's rows in one 16-row block, each sequence's key tiles split over
// CTAs, the splits merged by LSE, merge_and_store shared), with the cache read at one byte an
// element, half the bytes of a 16-bit cache:
//   - 8-bit K/V tiles stream through a cp.async ring of 64 keys (XOR-swizzled 16-byte chunks);
//   - the fragments are read straight from those bytes into registers and converted to fp16 pairs
//     (q8_convert.cuh); the mma runs in fp16 for both q dtypes. No ldmatrix: K's fragments take
//     the head dim in an order of our choosing (each thread's dims contiguous, Q read in the same
//     order), and V's fragments take each thread's output dims contiguous, the accumulators
//     unpermuted when they go to the merge;
//   - a bf16 q is converted to fp16 once per CTA, each row scaled by a power of two that puts its
//     largest element at 2^14..2^15 (exact to the fp16 range's 2^-28 of it), the power folded back
//     into the row's softmax scale;
//   - k_scale multiplies the softmax scale and v_scale the output: nothing is scaled per element
//     (but under ALiBi, whose bias goes on after each score is brought to the log2 domain).
#pragma once

#include <type_traits>

#include "cuda/fwd_decode.cuh"
#include "cuda/q8_convert.cuh"

namespace gpuattn::decode {

template <int kHeadDim_>
struct Q8Traits {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kRows = DecodePlan::kRows;
  static constexpr int kBlockN = DecodePlan::kBlockN;
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;
  // As many bytes in flight as the 16-bit kernel's stages, at half the bytes a tile.
  static constexpr int kStages = 2 * DecodePlan::stages(kHeadDim);
  // Resident CTAs a wave counts (launch_decode): 3, where the 16-bit kernel counts 2. Converting
  // twice the elements a byte, the 8-bit kernel needs the third CTA's warps to keep HBM busy:
  // bf16 B8 Hq32/Hkv8 L32768 D128 E4M3 took 162 us with 3 against 175 with 2, B1 L131072 94 against
  // 97, B32 L4096 the same, B8 L4096 40.2 against 38.4 (H200, bench/quantized_decode.py,
  // bench/results/2026-11-23-h200-s19 call 3).
  static constexpr int kMaxCtasPerSm = 3;
  // The ALiBi instantiations' __launch_bounds__ CTAs an SM (decode_q8_kernel's kAlibi): the 3
  // above at head dim 128, at most 168 registers a thread (left to ptxas, the bias took the paged
  // int8 kernel to 184 registers, 2 CTAs an SM; bounded, no D128 kernel spills); none at 64 or
  // 256 (128 fp32 accumulators a thread: 255 registers).
  static constexpr int kAlibiMinCtas = kHeadDim_ == 128 ? kMaxCtasPerSm : 1;
  static constexpr int kChunks = kHeadDim / 16;          // 16-byte chunks per 8-bit row
  static constexpr int kQBytes = kRows * kHeadDim * 2;   // Q (16-bit, row-major)
  static constexpr int kTileBytes = kBlockN * kHeadDim;  // one 8-bit K or V tile
  static constexpr int kOPitch = kHeadDim + 4;
  static constexpr int kMergeBytes = kWarps * kRows * (kOPitch + 2) * 4;
  static constexpr int kRingBytes = 2 * kStages * kTileBytes;
  static constexpr int kSmemBytes = kQBytes + (kRingBytes > kMergeBytes ? kRingBytes : kMergeBytes);
  // The dispatch checks DecodePlan::smem_bytes against the device's limit for both decode kernels
  // (decode_takes in cuda_attention.cpp, select_fwd_config).
  static_assert(kSmemBytes == DecodePlan::smem_bytes(kHeadDim), "DecodePlan::smem_bytes");
  // A warp loads the 16 rows of a tile it reads (decode_kernel does the same): kStep rows between a
  // lane's rows, kRowsPerThread of them.
  static constexpr int kWarpRows = kBlockN / kWarps;
  static constexpr int kStep = 32 / kChunks;
  static constexpr int kRowsPerThread = kWarpRows / kStep;
  static_assert(kRowsPerThread * kStep == kWarpRows, "a warp's rows divide over its lanes");
  static_assert(kMergeBytes >= (kRows * DecodePlan::kMaxSplits + 2 * kRows) * 4,
                "the split merge's weights fit the merge area");
  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "head dims 64, 128, 256");
};

// Byte offset of 16-byte chunk c of row r of an 8-bit tile: the chunk XORed with the row's low
// bits (2 bits at head dim 64, 3 above), which makes the K and V fragment reads below free of
// bank conflicts at head dim 128 and at most 2-way at 64 and 256.
template <int D>
__device__ __forceinline__ std::uint32_t swz8(int r, int c) {
  constexpr int kMask = D / 16 >= 8 ? 7 : D / 16 - 1;
  return static_cast<std::uint32_t>(r * D + ((c ^ (r & kMask)) << 4));
}

__device__ __forceinline__ float bf16_bits_to_float(std::uint16_t h) {
  return __uint_as_float(static_cast<std::uint32_t>(h) << 16);
}

// ALiBi on the 8-bit kernel's scores (AttentionArgs::alibi_slopes; decode_q8_kernel's kAlibi
// instantiations): its rows' units differ by their k scale and a bf16 q row's power of two, so each score
// is first brought to the log2 domain (times pre[h], the row's multiplier) and the bias added
// there, -slope x log2(e) x |pos - key|; the softmax then takes a scale of 1. (A bias in the raw
// units, as decode_body's alibi_scores adds it, would be slope / (k_scale x 2^shift), which leaves
// float's range for tiny scales.) Per block row, slope[r] (slope x log2 e; 0 past the rows) and
// pos[r] (its query's key position, i + Sk - Sq as the masks count keys) come from shared memory,
// worked out once per CTA: the per-tile divisions by the group and length reads that the 16-bit
// kernel makes cost the ALU-bound int8 kernel 1.21-1.26x its plain time (H200, s71 call 2). n0 is
// the thread's first key (as for mask_past_limits), g its rows' index within 8.
__device__ __forceinline__ void alibi_log2_scores(float (&sacc)[2][4], int n0, int g,
                                                  const float* slope, const float* pos,
                                                  const float (&pre)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float k = slope[g + 8 * h];
    const float d0 = pos[g + 8 * h] - static_cast<float>(n0);  // to key n0
#pragma unroll
    for (int nb = 0; nb < 2; ++nb)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = sacc[nb][2 * h + e];
        x = fmaf(x, pre[h], -k * fabsf(d0 - static_cast<float>(8 * nb + e)));
      }
  }
}

// kAlibi: the calls with AttentionArgs::alibi_slopes (alibi_log2_scores), an instantiation of their
// own. With the bias as a branch in one kernel, uniform over the call, calls without it lost up to
// 3.5% (paged E4M3 D128 at B32 L4096: 1.035-1.036x the time in two H200 runs, s71 calls 2-3; the
// other rows 0.99-1.01x): their kernels compile as before this way, at 12 instantiations more.
template <int D, bool kPaged, bool kInt8, bool kAlibi>
__global__ void __launch_bounds__(Q8Traits<D>::kThreads, kAlibi ? Q8Traits<D>::kAlibiMinCtas : 1)
    decode_q8_kernel(const __grid_constant__ FwdParams p, const DecodeWork work) {
  using Tr = Q8Traits<D>;
  constexpr int kN = Tr::kBlockN, kC = Tr::kChunks, kStep = Tr::kStep;
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ int q_shift[Tr::kRows];
  __shared__ float alibi_row[2][kAlibi ? Tr::kRows : 1];  // each row's slope and key position
  const std::uint32_t sq = ptx::smem_addr(smem);
  const std::uint32_t ring = sq + Tr::kQBytes;
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  // Launched with PDL (launch_decode): nothing global is touched before the kernel ahead is done.
  ptx::griddep_wait();
  ptx::griddep_launch_dependents();
  const int g = lane / 4, c4 = lane % 4;

  long long idx = blockIdx.x;
  const int rb = static_cast<int>(idx % work.row_blocks);
  idx /= work.row_blocks;
  const int s = static_cast<int>(idx % work.splits);
  idx /= work.splits;
  const int hk = static_cast<int>(idx % p.hkv);
  const int b = static_cast<int>(idx / p.hkv);
  const int group = p.hq / p.hkv;
  const int lq = p.len_q(b), lk = p.keys_used(b);
  const int rows = lq * group;
  const int r0 = rb * Tr::kRows;
  if (r0 >= rows) return;
  const int kend = DecodePlan::key_end(rb, group, lq, lk, p.causal);
  int t0 = 0, t1 = 0;
  DecodePlan::range((kend + kN - 1) / kN, work.splits, s, t0, t1);

  // Q rows (16-bit, row-major), zero past the sequence.
  {
    constexpr int kQChunks = D / 8, kPerThread = Tr::kRows * kQChunks / Tr::kThreads;
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int e = tid + u * Tr::kThreads;
      const int r = e / kQChunks, c = e % kQChunks;
      const int pr = r0 + r;
      const bool valid = pr < rows;
      const auto* src = static_cast<const std::uint16_t*>(p.q);
      if (valid) src += p.q_offset(b, pr / group, hk * group + pr % group) + c * 8;
      ptx::cp_async_16(sq + (r * D + c * 8) * 2, src, valid);
    }
  }
  // The 8-bit tile t into stage st: lane l of warp w takes chunk l % kC of rows row0 + u * kStep,
  // row0 = 16 w + l / kC, the rows the warp reads (so a tile needs only the warp's barrier). A
  // paged cache's pages (and slots) for a tile are read from the table one step before the tile
  // is issued (fetch_pages), so the table's latency is not in the issue; a page of a power of two
  // is found by a shift.
  const int row0 = Tr::kWarpRows * warp + lane / kC;
  const int ps_log2 = kPaged ? page_shift(p.page_size) : -1;
  const auto* const kbase = static_cast<const std::uint8_t*>(p.k);
  const auto* const vbase = static_cast<const std::uint8_t*>(p.v);
  const std::int32_t* const table = p.block_table + b * p.block_table_stride;
  // Unpaged: the sequence's first row (varlen: cu_seqlens_k[b]) read once, rows stepped from the
  // tile's first (as decode_kernel does: k_offset_unpaged a row reloaded it every tile).
  const std::int64_t row0_k = kPaged ? 0 : p.row0_k(b) + p.key_start(b);  // dense: leftpad_k
  int pages[kPaged ? Tr::kRowsPerThread : 1], slots[kPaged ? Tr::kRowsPerThread : 1];
  // Key `key` of the call is the cache's logical key key0 + key (leftpad_k: a sequence's keys
  // start at key0; its pages before that are never read, and may be unset entries). Pages of a
  // multiple of 16 keys (the warp's rows of a tile), key0 a multiple of 16 too, hold those rows
  // whole: one table entry a warp and tile (pages[0], and slots[0] the lane's first row's slot),
  // the rows stepped from it as in a dense cache. (Past the sequence, no entry: page 0's address,
  // nothing read.)
  const int key0 = kPaged ? p.key_start(b) : 0;
  const bool whole_warps =
      kPaged && p.page_size % Tr::kWarpRows == 0 && key0 % Tr::kWarpRows == 0;
  // Other pages of 16 keys or more (key0 off a multiple of 16, or a size that is not one): a
  // warp's 16 rows lie in at most two pages, the first from slots[0] (the warp's first row's slot)
  // on, then the next (pages[0] and pages[1]; the next read only where the rows cross into it
  // before the sequence's end), each row's page picked by whether it passes the first's end.
  const bool two_pages = kPaged && !whole_warps && p.page_size >= Tr::kWarpRows;
  static_assert(Tr::kRowsPerThread >= 2, "two pages' entries in pages[]");
  auto fetch_pages = [&](int t) {
    if constexpr (kPaged) {
      if (t >= t1) return;
      if (whole_warps) {
        const int key = t * kN + Tr::kWarpRows * warp;
        const int page = page_of(key0 + key, p.page_size, ps_log2, slots[0]);
        pages[0] = key < lk ? __ldg(table + page) : 0;
        slots[0] += lane / kC;
        return;
      }
      if (two_pages) {
        const int key = t * kN + Tr::kWarpRows * warp;
        const int page = page_of(key0 + key, p.page_size, ps_log2, slots[0]);
        pages[0] = key < lk ? __ldg(table + page) : 0;
        const int cross = p.page_size - slots[0];  // the warp's rows in the first page
        pages[1] = cross < Tr::kWarpRows && key + cross < lk ? __ldg(table + page + 1) : pages[0];
        return;
      }
#pragma unroll
      for (int u = 0; u < Tr::kRowsPerThread; ++u) {
        const int key = t * kN + row0 + u * kStep;
        const int page = page_of(key0 + key, p.page_size, ps_log2, slots[u]);
        pages[u] = key < lk ? __ldg(table + page) : 0;
      }
    }
  };
  auto load_tile = [&](int t, int st) {
    const int c = lane % kC;
    const std::uint32_t kdst = ring + st * 2 * Tr::kTileBytes;
    const std::uint32_t vdst = kdst + Tr::kTileBytes;
    if constexpr (kPaged) {
      if (whole_warps) {
        const std::uint8_t* ks = kbase + static_cast<std::int64_t>(pages[0]) * p.k_batch_stride +
                                 static_cast<std::int64_t>(slots[0]) * p.k_row_stride +
                                 hk * p.k_head_stride + c * 16;
        const std::uint8_t* vs = vbase + static_cast<std::int64_t>(pages[0]) * p.v_batch_stride +
                                 static_cast<std::int64_t>(slots[0]) * p.v_row_stride +
                                 hk * p.v_head_stride + c * 16;
#pragma unroll
        for (int u = 0; u < Tr::kRowsPerThread; ++u) {
          const int r = row0 + u * kStep;
          const bool valid = t * kN + r < lk;
          ptx::cp_async_16(kdst + swz8<D>(r, c), valid ? ks : kbase, valid);
          ptx::cp_async_16(vdst + swz8<D>(r, c), valid ? vs : vbase, valid);
          ks += kStep * p.k_row_stride;
          vs += kStep * p.v_row_stride;
        }
        return;
      }
      if (two_pages) {
        const int cross = p.page_size - slots[0];  // the warp's rows in its first page
        // Byte offsets of the warp's row 0 in the first page and of row `cross` less cross rows
        // in the second: row o at its page's offset + o rows.
        const std::int64_t kc = hk * p.k_head_stride + c * 16, vc = hk * p.v_head_stride + c * 16;
        const std::int64_t k0 = static_cast<std::int64_t>(pages[0]) * p.k_batch_stride +
                                static_cast<std::int64_t>(slots[0]) * p.k_row_stride + kc;
        const std::int64_t v0 = static_cast<std::int64_t>(pages[0]) * p.v_batch_stride +
                                static_cast<std::int64_t>(slots[0]) * p.v_row_stride + vc;
        const std::int64_t k1 = static_cast<std::int64_t>(pages[1]) * p.k_batch_stride -
                                static_cast<std::int64_t>(cross) * p.k_row_stride + kc;
        const std::int64_t v1 = static_cast<std::int64_t>(pages[1]) * p.v_batch_stride -
                                static_cast<std::int64_t>(cross) * p.v_row_stride + vc;
#pragma unroll
        for (int u = 0; u < Tr::kRowsPerThread; ++u) {
          const int r = row0 + u * kStep;
          const int o = r - Tr::kWarpRows * warp;  // the row among the warp's 16
          const bool valid = t * kN + r < lk;
          const bool first = o < cross;
          const std::uint8_t* ks = kbase + (first ? k0 : k1) + o * p.k_row_stride;
          const std::uint8_t* vs = vbase + (first ? v0 : v1) + o * p.v_row_stride;
          ptx::cp_async_16(kdst + swz8<D>(r, c), valid ? ks : kbase, valid);
          ptx::cp_async_16(vdst + swz8<D>(r, c), valid ? vs : vbase, valid);
        }
        return;
      }
#pragma unroll
      for (int u = 0; u < Tr::kRowsPerThread; ++u) {
        const int r = row0 + u * kStep;
        const bool valid = t * kN + r < lk;
        const std::uint8_t* ks = kbase;
        const std::uint8_t* vs = vbase;
        if (valid) {
          ks += pages[u] * p.k_batch_stride + slots[u] * p.k_row_stride + hk * p.k_head_stride +
                c * 16;
          vs += pages[u] * p.v_batch_stride + slots[u] * p.v_row_stride + hk * p.v_head_stride +
                c * 16;
        }
        ptx::cp_async_16(kdst + swz8<D>(r, c), ks, valid);
        ptx::cp_async_16(vdst + swz8<D>(r, c), vs, valid);
      }
    } else {
      int key = t * kN + row0;
      const std::uint8_t* ks = kbase + p.k_row_offset(b, row0_k + key, hk) + c * 16;
      const std::uint8_t* vs = vbase + p.v_row_offset(b, row0_k + key, hk) + c * 16;
#pragma unroll
      for (int u = 0; u < Tr::kRowsPerThread; ++u) {
        const int r = row0 + u * kStep;
        const bool valid = key < lk;
        ptx::cp_async_16(kdst + swz8<D>(r, c), valid ? ks : kbase, valid);
        ptx::cp_async_16(vdst + swz8<D>(r, c), valid ? vs : vbase, valid);
        key += kStep;
        ks += kStep * p.k_row_stride;
        vs += kStep * p.v_row_stride;
      }
    }
  };
#pragma unroll
  for (int i = 0; i < Tr::kStages - 1; ++i) {
    if (t0 + i < t1) {
      fetch_pages(t0 + i);
      load_tile(t0 + i, i);
    }
    ptx::cp_async_commit();
  }
  fetch_pages(t0 + Tr::kStages - 1);

  int lim[2];
  row_key_limits(p, r0, lane, rows, group, lq, lk, lim);
  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[n][e] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};
  float row_scale[2] = {0.f, 0.f};  // log2-domain multiplier of a row's fp16 scores
  // Soft-capped (softcap_scores): a row's fp16 scores times cap_pre are q.k * scale / softcap, and
  // the row's log2-domain multiplier is then softcap * log2(e) (p.scale_log2).
  float cap_pre[2] = {0.f, 0.f};
  std::uint32_t qf[D / 16][4];

  for (int t = t0; t < t1; ++t) {
    const int i = t - t0;
    if (t + Tr::kStages - 1 < t1) {
      load_tile(t + Tr::kStages - 1, (i + Tr::kStages - 1) % Tr::kStages);
      fetch_pages(t + Tr::kStages);
    }
    ptx::cp_async_commit();
    ptx::cp_async_wait<Tr::kStages - 1>();
    // The tile's rows are the warp's own copies; the first tile's group holds Q too (every warp's).
    if (i == 0) {
      __syncthreads();
    } else {
      __syncwarp();
    }
    if (i == 0) {
      // bf16 q to fp16: 8 threads a row, each D / 8 elements; the row's largest magnitude sets its
      // power of two.
      auto* const qh = reinterpret_cast<std::uint16_t*>(smem);
      const int qr = tid / 8;
      if (p.dtype == DType::bf16) {
        constexpr int kPer = D / 8;
        std::uint16_t* const row = qh + qr * D + (tid % 8) * kPer;
        float amax = 0.f;
#pragma unroll
        for (int e = 0; e < kPer; ++e) amax = fmaxf(amax, fabsf(bf16_bits_to_float(row[e])));
#pragma unroll
        for (int m = 1; m < 8; m <<= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, m));
        int shift = 0;
        if (amax > 0.f && amax <= 3.0e38f) {
          int e2 = 0;
          frexpf(amax, &e2);    // amax in [2^(e2-1), 2^e2)
          shift = e2 - 1 - 14;  // amax * 2^-shift in [2^14, 2^15)
        }
#pragma unroll
        for (int e = 0; e < kPer; ++e) {
          const float x = ldexpf(bf16_bits_to_float(row[e]), -shift);
          row[e] = __half_as_ushort(__float2half_rn(x));
        }
        if (tid % 8 == 0) q_shift[qr] = shift;
      } else if (tid % 8 == 0) {
        q_shift[qr] = 0;
      }
      if (kAlibi && tid < Tr::kRows) {  // see alibi_log2_scores
        const int pr = r0 + tid;
        alibi_row[0][tid] = pr < rows ? p.alibi_slope(b, hk * group + pr % group) *
                                            1.4426950408889634f
                                      : 0.f;
        alibi_row[1][tid] = static_cast<float>(pr / group + lk - lq);
      }
      __syncthreads();
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (p.has_softcap()) {
          // In double: the product may leave float's range before the shift brings it back.
          cap_pre[h] = static_cast<float>(ldexp(static_cast<double>(p.softcap_pre) *
                                                    p.k_scale_of(hk),
                                                q_shift[g + 8 * h]));
          row_scale[h] = p.scale_log2;
        } else {
          // At least FLT_MIN: a factor that underflows to 0 (a tiny k_scale with a tiny bf16 q
          // row) would make a masked key's -inf score NaN. Any score times FLT_MIN is at most
          // ~2^-93, so its exp2 is 1 either way: the row's weights stay uniform, as they should.
          // In double: a tiny k_scale's product may leave float's range before a q row's shift
          // (up to +113) brings it back.
          row_scale[h] = fmaxf(static_cast<float>(ldexp(static_cast<double>(p.scale_log2) *
                                                            p.k_scale_of(hk),
                                                        q_shift[g + 8 * h])),
                               1.17549435e-38f);
        }
      }
        // A fragments in the K order below: step kk's dims 2c4, 2c4+1 / 2c4+8, 2c4+9 are the
        // thread's elements c4 * D / 4 + 4 kk + 0, 1 / 2, 3.
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint2 w =
              *reinterpret_cast<const uint2*>(qh + (g + 8 * h) * D + c4 * (D / 4) + 4 * kk);
          qf[kk][h] = w.x;
          qf[kk][2 + h] = w.y;
        }
      }
    }
    const std::uint32_t ks = ring + (i % Tr::kStages) * 2 * Tr::kTileBytes;
    const std::uint32_t vs = ks + Tr::kTileBytes;
    // S = Q K^T: the thread's B fragments of n8 block nb are key 16 warp + 8 nb + g, bytes
    // [c4 D / 4, (c4 + 1) D / 4): one 32-bit word a k-step, its bytes 0, 1 / 2, 3 the two
    // registers.
    float sacc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int nb = 0; nb < 2; ++nb) {
      const int kr = 16 * warp + 8 * nb + g;
#pragma unroll
      for (int u = 0; u < kC / 4; ++u) {
        const uint4 w = ptx::ld_shared_v4(ks + swz8<D>(kr, c4 * (kC / 4) + u));
        const std::uint32_t words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const std::uint32_t x = q8::prep<kInt8>(words[q]);
          ptx::mma_16816<__half>(sacc[nb], qf[4 * u + q], q8::to_f16x2<kInt8, false>(x),
                                 q8::to_f16x2<kInt8, true>(x));
        }
      }
    }
    if (p.has_softcap()) softcap_scores(sacc, cap_pre, p.exact_tanh());
    // ALiBi (the kAlibi instantiations): the scores brought to the log2 domain with the bias, so
    // that their softmax scale is 1.
    std::uint32_t pa[4];
    if constexpr (kAlibi) {
      alibi_log2_scores(sacc, t * kN + 16 * warp + 2 * c4, g, alibi_row[0], alibi_row[1],
                        row_scale);
      mask_past_limits(sacc, t * kN + 16 * warp + 2 * c4, lim);
      constexpr float kOne[2] = {1.f, 1.f};
      online_softmax_step<__half, D>(sacc, kOne, row_max, row_sum, o, pa);
    } else {
      mask_past_limits(sacc, t * kN + 16 * warp + 2 * c4, lim);
      online_softmax_step<__half, D>(sacc, row_scale, row_max, row_sum, o, pa);
    }
    // O += P V: output block j's column g is dim g D / 8 + j, so the thread's B fragments of
    // every block come from bytes [g D / 8, (g + 1) D / 8) of keys 2c4, 2c4+1 (b0) and 2c4+8,
    // 2c4+9 (b1) of the warp's 16: a prmt pairs the two keys' bytes of blocks j, j + 1.
    {
      const int vr = 16 * warp + 2 * c4;
      constexpr int kWords = D / 32;                     // 32-bit words of the thread's bytes
      constexpr int kPerLoad = kWords < 4 ? kWords : 4;  // words per shared load
#pragma unroll
      for (int u = 0; u < kWords / kPerLoad; ++u) {
        std::uint32_t rw[4][kPerLoad];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const int r = vr + (k & 1) + 8 * (k >> 1);
          const int byte = g * (D / 8) + u * 16;
          const std::uint32_t addr = vs + swz8<D>(r, byte / 16) + byte % 16;
          if constexpr (kPerLoad == 4) {
            const uint4 w = ptx::ld_shared_v4(addr);
            rw[k][0] = w.x;
            rw[k][1] = w.y;
            rw[k][2] = w.z;
            rw[k][3] = w.w;
          } else {
            asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];"
                         : "=r"(rw[k][0]), "=r"(rw[k][1])
                         : "r"(addr));
          }
        }
#pragma unroll
        for (int q = 0; q < kPerLoad; ++q) {
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            std::uint32_t x01, x23;  // keys 2c4, 2c4+1 / 2c4+8, 2c4+9 of blocks j, j + 1
            if (half == 0) {
              asm("prmt.b32 %0, %1, %2, 0x5140;" : "=r"(x01) : "r"(rw[0][q]), "r"(rw[1][q]));
              asm("prmt.b32 %0, %1, %2, 0x5140;" : "=r"(x23) : "r"(rw[2][q]), "r"(rw[3][q]));
            } else {
              asm("prmt.b32 %0, %1, %2, 0x7362;" : "=r"(x01) : "r"(rw[0][q]), "r"(rw[1][q]));
              asm("prmt.b32 %0, %1, %2, 0x7362;" : "=r"(x23) : "r"(rw[2][q]), "r"(rw[3][q]));
            }
            x01 = q8::prep<kInt8>(x01);
            x23 = q8::prep<kInt8>(x23);
            const int j = 4 * (u * kPerLoad + q) + 2 * half;
            ptx::mma_16816<__half>(o[j], pa, q8::to_f16x2<kInt8, false>(x01),
                                   q8::to_f16x2<kInt8, false>(x23));
            ptx::mma_16816<__half>(o[j + 1], pa, q8::to_f16x2<kInt8, true>(x01),
                                   q8::to_f16x2<kInt8, true>(x23));
          }
        }
      }
    }
    __syncwarp();  // the warp's lanes are done with its rows of this stage before they reload them
  }
  ptx::cp_async_wait<0>();
  __syncthreads();  // no warp still reads its rows of the ring, which the merge takes next

  // The warps' rows to the merge area, output block j's columns back to dims 2c4 D / 8 + j and
  // (2c4 + 1) D / 8 + j.
  float* const mo = reinterpret_cast<float*>(smem + Tr::kQBytes);
  float* const mm = mo + Tr::kWarps * Tr::kRows * Tr::kOPitch;
  float* const ml = mm + Tr::kWarps * Tr::kRows;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float sum = ptx::quad_sum(row_sum[h]);
    const int r = g + 8 * h;
    if (c4 == 0) {
      mm[warp * Tr::kRows + r] = row_max[h];
      ml[warp * Tr::kRows + r] = sum;
    }
    float* const dst = mo + (warp * Tr::kRows + r) * Tr::kOPitch + 2 * c4 * (D / 8);
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      dst[j] = o[j][2 * h];
      dst[D / 8 + j] = o[j][2 * h + 1];
    }
  }
  const float vscale = p.v_scale_of(hk);
  if (p.dtype == DType::bf16) {
    merge_and_store<Tr, __nv_bfloat16>(p, work, smem + Tr::kQBytes, b, hk, s, r0, rows, vscale);
  } else {
    merge_and_store<Tr, __half>(p, work, smem + Tr::kQBytes, b, hk, s, r0, rows, vscale);
  }
}

// The 8-bit cache's decode calls (p.kv_dtype int8 when kInt8, else E4M3; q f16 or bf16), with
// ALiBi (p.has_alibi()) when kAlibi, else without: decode::fwd picks the file by p.has_alibi().
template <bool kInt8, bool kAlibi>
void run_decode_q8(const FwdParams& p, cudaStream_t stream) {
  check_decode_call(p);
  const auto run = [&](auto dim) {
    constexpr int D = decltype(dim)::value;
    using Tr = Q8Traits<D>;
    if (p.is_paged()) return launch_decode<Tr, decode_q8_kernel<D, true, kInt8, kAlibi>>(p, stream);
    launch_decode<Tr, decode_q8_kernel<D, false, kInt8, kAlibi>>(p, stream);
  };
  if (p.head_dim == 64) return run(std::integral_constant<int, 64>{});
  if (p.head_dim == 128) return run(std::integral_constant<int, 128>{});
  if (p.head_dim == 256) return run(std::integral_constant<int, 256>{});
  throw Error(ErrorCode::not_supported,
              "gpuattn: no 8-bit cache decode kernel for head dim " + std::to_string(p.head_dim));
}

}  // namespace gpuattn::decode
