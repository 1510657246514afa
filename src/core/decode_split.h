// The split-KV decode path's work decomposition (src/cuda/fwd_decode.cuh): shared by the host
// launcher, which plans the grid, and the kernel, which finds its rows and key tiles. Host-side
// core: no CUDA headers here, so the arithmetic is tested on the CPU (tests/core).
//
// A call with few query rows per KV head (decode: seqlen_q x (hq / hkv) <= kMaxRows) packs the rows
// of all query heads that share a KV head into one block of up to kRows rows (packed row r: query
// row r / group of query head hkv * group + r % group), so each K/V tile is read once for the
// whole group, and splits each sequence's key tiles over `splits` CTAs so that the grid fills
// the GPU. Each CTA leaves its rows' normalized O and log2-sum-exp in a workspace slot; the CTA
// that finishes a (batch, KV head, row block) unit last merges the slots in split order (the
// result does not depend on which CTA that is).
#pragma once

#include <cstdint>

#include "core/mask.h"  // GPUATTN_HD

namespace gpuattn {

struct DecodePlan {
  static constexpr int kRows = 16;     // packed query rows per CTA (one mma.sync m16 tile)
  static constexpr int kBlockN = 64;   // keys per K/V tile; each of the 4 warps takes 16 of them
  static constexpr int kMaxRows = 64;  // packed rows per KV head the path takes (4 row blocks)
  // A split keeps at least this many key tiles (256 keys): below it the fixed costs of a CTA
  // (Q load, pipeline fill, merge) outweigh the bandwidth it adds.
  static constexpr int kMinTilesPerSplit = 4;
  static constexpr int kMaxSplits = 64;

  // K/V stages of the cp.async ring: enough loads in flight per SM for HBM bandwidth as stages x
  // resident CTAs allow, within 99 KB per block (sm_86, sm_89, sm_120) at head dims 64 and 128.
  // 3 at head dim 64, not 4: 51 KB lets 4 CTAs share an H200 SM where 68 KB let 3 (shared memory
  // was the limit), and the kernel there is latency-bound (s37 ncu at 124M B128: 0.5 issued a
  // scheduler-cycle) more than short of loads in flight: 124M B128 prompt 512 +4.9% (81.5-81.8K ->
  // 85.3-85.9K tok/s; s38 call 3), B32 and B8 within noise.
  //
  // `lean` (head dim 64 only, see lean()): 2 stages and 5 CTAs an SM (34 KB, 96 registers).
  static constexpr int stages(int head_dim, bool lean = false) {
    return lean ? 2 : head_dim == 64 ? 3 : 2;
  }
  // Dynamic shared memory per CTA (DecodeTraits::kSmemBytes of src/cuda/fwd_decode.cuh, which
  // static_asserts that the two agree): Q (16 rows) and the stages of K and V (64 rows each), 2 *
  // head_dim bytes a row; the warps' merge at the end reuses the stages. 50 KB at head dim 64
  // (34 KB lean), 68 KB at 128, 136 KB at 256.
  static constexpr int smem_bytes(int head_dim, bool lean = false) {
    return (kRows + 2 * stages(head_dim, lean) * kBlockN) * 2 * head_dim;
  }

  // Whether a head-dim-64 call of `ctas` CTAs takes the lean kernel (2 stages, 5 CTAs an SM) rather
  // than the 3-stage one: when the grid fits in one wave of the 3-stage kernel (`one_wave`: SMs x
  // its resident CTAs an SM), where neither more stages nor more resident CTAs are the limit. H200,
  // s39 call 1 (both kernels alternated in one call, two rounds, tok/s of `gpuattn generate`):
  // GPT-2 124M B1 (12 CTAs) 3,103 / 3,135 -> 3,249 / 3,222; B32 prompt 512 (384 CTAs) 43,930 /
  // 43,292 -> 47,096 / 46,923; B128 (1,536 CTAs, ~3 waves) 84,819 / 85,873 -> 83,376 / 83,822 (3
  // stages stay there). `force`: 0 never, 1 always (the GPUATTN_DECODE_LEAN switch), -1 by the
  // rule.
  static constexpr bool lean(int head_dim, long long ctas, long long one_wave, int force = -1) {
    return head_dim == 64 && (force >= 0 ? force == 1 : ctas <= one_wave);
  }

  int row_blocks = 1;   // ceil(seqlen_q * group / kRows)
  int splits = 1;       // CTAs per unit, each taking a contiguous share of its key tiles
  long long units = 0;  // batch * hkv * row_blocks

  // Whether a call of this shape takes the decode path at all (with standard precision and no
  // mask beyond causal; the caller checks those).
  static bool eligible(int seqlen_q, int group) {
    return seqlen_q >= 1 && group >= 1 && static_cast<long long>(seqlen_q) * group <= kMaxRows;
  }

  // `slots`: the CTAs of one wave (the launcher: SMs x min(resident CTAs per SM, 2)). As many
  // splits as keep the grid within one wave of slots, at least 1, at most one per
  // kMinTilesPerSplit key tiles of the longest sequence and kMaxSplits. (H200: a minimum of 8 or
  // 16 tiles a split took 1.25-1.9x the time of 4 on the small decode cases, B1 Hkv8 Sk4096 and
  // B4 Hkv8 Sk1024; bench/results/2026-11-22-h200-decode, call 4.)
  static DecodePlan plan(int batch, int hkv, int group, int seqlen_q, int seqlen_k,
                         long long slots) {
    DecodePlan d;
    const long long rows = static_cast<long long>(seqlen_q) * group;
    d.row_blocks = static_cast<int>((rows + kRows - 1) / kRows);
    d.units = static_cast<long long>(batch) * hkv * d.row_blocks;
    const long long tiles = (static_cast<long long>(seqlen_k) + kBlockN - 1) / kBlockN;
    long long cap = tiles / kMinTilesPerSplit;
    if (cap > kMaxSplits) cap = kMaxSplits;
    long long s = d.units > 0 ? slots / d.units : 1;
    if (s > cap) s = cap;
    d.splits = s < 1 ? 1 : static_cast<int>(s);
    return d;
  }

  // The key end of row block rb (packed rows [rb * kRows, rb * kRows + kRows)) of a sequence of lq
  // queries and lk keys: lk, or with causal (bottom-right aligned) the causal end of its last
  // query row; in [0, lk].
  GPUATTN_HD static int key_end(int rb, int group, int lq, int lk, bool causal) {
    if (!causal) return lk;
    int last = (rb * kRows + kRows - 1) / group;
    if (last > lq - 1) last = lq - 1;
    const long long end = static_cast<long long>(lk) - lq + last + 1;
    return end < 0 ? 0 : end > lk ? lk : static_cast<int>(end);
  }

  // Split s of `splits` takes the key tiles [t0, t1) of `tiles`: contiguous, in order, sizes within
  // one of each other (some empty when tiles < splits).
  GPUATTN_HD static void range(int tiles, int splits, int s, int& t0, int& t1) {
    t0 = static_cast<int>(static_cast<long long>(s) * tiles / splits);
    t1 = static_cast<int>(static_cast<long long>(s + 1) * tiles / splits);
  }
};

}  // namespace gpuattn
