// FP8 E4M3 attention forward for Hopper (sm_90a): q, k and v of E4M3 with a scale per head (or
// one per tensor), out f16 or bf16, head dims 64, 128 and 256, dense and causal (bottom-right
// aligned), GQA, Sq != Sk, varlen, LSE.
//
// Both GEMMs run on wgmma's 8-bit path (m64n128k32 for S, m64nDk32 for O, fp32 accumulation),
// which takes its shared-memory operands K-major only:
//   - S = Q K^T: Q and K as they are (rows of D bytes: one 128-byte swizzle row each at D = 128,
//     one 64-byte swizzle row at D = 64, two 128-byte ones at D = 256, in two column slabs);
//   - O += P V: P from the S registers, rounded to E4M3 (its values lie in (0, 256], the row max
//     shifted to 2^8 to keep small terms out of E4M3's subnormals; the row sums are taken before
//     the rounding), and V^T, whose rows must run along the keys. V tiles come
//     in by TMA as they are, and three warps of the producer warpgroup write each one transposed
//     into the V^T ring in shared memory (transpose_tile), which the consumers read.
// The 8-bit A fragment (row lane / 4, bytes at columns 4 (lane % 4) + 0..3, and + 16) is not the
// accumulator's (columns 8j + 2 (lane % 4) + 0..1): rather than shuffle P between lanes, V^T
// holds each 32-key chunk's keys in the order the fragment takes them from the accumulator
// (fp8_key_of), so that P packs from the thread's own registers and P V sums the same products.
//
// Work items of 64 kC query rows (128, or 192 on 3 consumers) of one (batch, head), run by a
// persistent grid (one CTA an SM); a varlen call has max_seqlen_q's row blocks for every sequence,
// those past its end empty, and its tensor maps span all sequences' rows (rows from cu_seqlens,
// one batch entry); per CTA a producer warpgroup, whose first thread issues the TMA loads of each
// item's Q (into two buffers; one at head dim 256) and of rings of K and V tiles of 128 keys (3
// stages at head dim 64, 2 otherwise; full / empty mbarriers) and whose other three warps
// transpose V into a 3-stage V^T ring (2 stages at head dim 256), and two consumer warpgroups of 64
// rows (three at head dims 64 and 128 where the dispatch takes sm90_fp8_192x128: 192-row items).
// Inside a consumer the next tile's S GEMM and this tile's P V run while the softmax of the next
// tile is computed (the intra-warpgroup overlap of the 16-bit kernel; not on 3 consumers at 128,
// for want of registers, and at head dim 256 only from 2048 keys: sm90_fp8_128x128_d256). Causal
// grids run their last row blocks first, the longest of a dense call (in a varlen call the shorter
// sequences' last ones are empty: no Q load, no tile). The scales fold into the softmax's exponent
// scale (q_scale * k_scale) and into the output's normalization (v_scale). A dense call's O (head
// dims 64 and 128) leaves by TMA store from an O buffer of each consumer warpgroup's own; varlen
// calls and head dim 256 store it from the registers.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/fwd_params.h"
#include "core/tile_config.h"
#include "cuda/cuda_check.h"
#include "cuda/fwd_sm80.h"
#include "cuda/fwd_sm90.h"
#include "cuda/ptx.cuh"
#include "cuda/relaxed_capture.h"
#include "cuda/tma.cuh"
#include "cuda/tma_maps.h"
#include "cuda/wgmma.cuh"

namespace gpuattn::sm90 {
namespace {

constexpr int kBlockN = 128;                     // keys a tile
[[maybe_unused]] constexpr float kPShift = 8.f;  // log2 of P's largest value (softmax below)

// One instantiation's shape: head dim kD (64, 128 or 256) and kC consumer warpgroups of 64 query
// rows (3: sm90_fp8_192x128, at head dims 64 and 128: see kOverlap and the table entry);
// kD256Overlap_, head dim 256 with the intra-warpgroup overlap (sm90_fp8_128x128_d256).
template <int kD_, int kC_, bool kD256Overlap_ = false>
struct Fp8Config {
  static constexpr int kD = kD_;
  static constexpr int kC = kC_;
  static_assert((kD == 64 || kD == 128 || kD == 256) && (kC == 2 || (kC == 3 && kD <= 128)),
                "head dims 64, 128 and 256; 3 consumers at head dims 64 and 128");
  // The next tile's S GEMM under this tile's softmax and P V (the intra-warpgroup overlap) holds
  // S (64 registers), P (16) and O (D / 2) at once: 208 at head dim 256, where ptxas then
  // serialized the wgmmas for want of registers (and spilled 48 bytes) at 232, and 144 on 3
  // consumers at head dim 128, whose 160 registers (below) leave too few beside them. Those two
  // run each tile's S GEMM, softmax and P V in turn, the consumer warpgroups overlapping each
  // other; at head dim 128 the third warpgroup pays for the lost overlap on large grids (H200,
  // gpuattn_fp8_probe in balanced order against 2 consumers with the overlap, 2026-11-30-h200-s52
  // call 6, 3 rounds: dense S512-16384 1.02-1.09x TFLOP/s, causal S2048-32768 1.02-1.07x, but
  // causal S512 0.92x, S1024 0.88x and varlen16 0.98x, which the dispatch keeps on 2).
  // sm90_fp8_128x128_d256 runs head dim 256 with the overlap at setmaxnreg 24 / 240 instead
  // (below), for calls of kFp8D256OverlapMinKeys keys or more.
  static_assert(!kD256Overlap_ || (kD == 256 && kC == 2), "the overlap at head dim 256");
  static constexpr bool kOverlap = (kD != 256 || kD256Overlap_) && !(kC == 3 && kD == 128);
  static constexpr int kBlockM = 64 * kC;          // query rows a CTA
  static constexpr int kThreads = 128 * (kC + 1);  // + the producer warpgroup
  // Bytes of a row in shared memory and column slabs a tile: a Q or K row of 256 bytes (head dim
  // 256) is two 128-byte swizzle rows, in two slabs of the tile's rows each (as a TMA box spans
  // at most the swizzle's 128 bytes); V^T rows are 128 keys (128 bytes) at every head dim.
  static constexpr int kRow = kD == 256 ? 128 : kD;
  static constexpr int kSlabs = kD / kRow;
  static_assert(kSlabs * kRow == kD && kRow <= 128, "a slab row spans at most a 128-byte swizzle");
  // A K, V or V^T tile: 128 keys of a D-byte head-dim row, or D rows of 128 keys (V^T); a Q tile
  // kBlockM rows.
  static constexpr int kTileBytes = 128 * kD;
  static constexpr int kQBytes = kBlockM * kD;
  // V^T ring: a stage is written only once the consumers' P V has left it, and read a tile later;
  // the third stage gives the transposing warps a tile's time more (H200, 2026-11-30-h200-s44
  // call 6, gpuattn_fp8_probe: S16384 dense 756 -> 784 TFLOP/s, S512 461 -> 480; unrolling their
  // loop by 2: no change at 3 stages, 1-5% slower at 2). At head dim 256 (32 KB tiles) two V^T
  // stages and one Q buffer are what fit beside the K and V rings.
  static constexpr int kVtStages = kD == 256 ? 2 : 3;
  // K and V rings: 3 stages at head dim 64 (8 KB tiles), where the producer then loads the next
  // item's first tiles while the consumers finish this one's: H200, gpuattn_fp8_probe in balanced
  // order against 2 (2026-11-30-h200-s50 call 4, 2 rounds): causal S512 1.045x TFLOP/s, S1024
  // 1.055x, S2048-S32768 1.016-1.025x, dense 0.987-1.008x; 4 stages lost 1-5% at dense and long
  // causal calls. At head dim 128 neither 3 nor 4 paid (0.95-1.02x, no pattern); 256 has no room.
  static constexpr int kStages = kD == 64 ? 3 : 2;
  static constexpr int kQBuffers = kD == 256 ? 1 : 2;
  static_assert(kQBuffers <= 2, "the barrier area holds 2 Q buffers' full / empty barriers");
  static constexpr int kBarrierBytes = 8 * (4 + 4 * kStages + 2 * kVtStages);
  // O of a dense call's item (head dims 64 and 128) goes out by TMA store from a buffer of its own,
  // 64 rows x D 16-bit columns a consumer warpgroup in 128-byte swizzled slabs of 64 columns
  // (8 KB), so that the warpgroup goes on to its next item while the store runs. Head dim 256
  // has no room: its threads store O from the registers, as varlen calls do.
  static constexpr bool kOStaged = kD != 256;
  static constexpr int kOSlabBytes = 64 * 128;
  static constexpr int kOWarpgroupBytes = 64 * kD * 2;
  static_assert(kOWarpgroupBytes == kD / 64 * kOSlabBytes,
                "an O buffer: D / 64 slabs of 64 columns");
  static constexpr int kOBytes = kOStaged ? kC * kOWarpgroupBytes : 0;
  static constexpr int kSmemBytes =
      1024 + kQBuffers * kQBytes + kOBytes + kTileBytes * (2 * kStages + kVtStages) + kBarrierBytes;
  // setmaxnreg: the producer warpgroup's transposing warps need more than a TMA thread's 24
  // (ptxas, nvcc 13.0, spilled there; 32 does at head dim 64, 40 is what ran with 2 consumers; at
  // head dim 128 on 32, ptxas spills one register pair across the 32 steps of a tile); the
  // consumers hold S (64), O (D / 2) and P (16) through the overlap, with no spill at 232 (without
  // the overlap S and O, or P and O, at once). The CTA holds 168 x 384 = 64512 with 2 consumers,
  // 128 x 512 with 3 (32 and 160). Head dim 256 with the overlap (208 registers of S, P and O)
  // takes 24 / 240: at 232 ptxas serialized the wgmmas; at 24 the producer's transposer spills 72
  // bytes (~27 local loads and stores of its ~680 instructions a tile), which the measured gain
  // includes (sm90_fp8_128x128_d256's table entry).
  static constexpr int kProducerRegs = kC == 3 ? 32 : kD256Overlap_ ? 24 : 40;
  static constexpr int kConsumerRegs = kC == 3 ? 160 : kD256Overlap_ ? 240 : 232;
  // A rough lower bound only (head dim 256 with the overlap passes it, and ptxas serialized its
  // wgmmas at 232 registers: above).
  static_assert(!kOverlap || 64 + 16 + kD / 2 + 24 <= kConsumerRegs,
                "the overlap holds S, P and O at once, with at least 24 registers beside them");
  static_assert(128 * kProducerRegs + 128 * kC * kConsumerRegs <=
                    65536 / kThreads / 8 * 8 * kThreads,
                "setmaxnreg moves registers between the warpgroups; it adds none");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per block");
};

template <class Cfg>
constexpr bool table_describes(FwdKernel kernel) {
  const TileConfig& c = kFwdTileConfigs[static_cast<int>(kernel)];
  return c.kernel == kernel && c.block_m == Cfg::kBlockM && c.block_n == kBlockN &&
         c.warps == Cfg::kThreads / 32 &&
         // the table's stages: sm90_fp8_128x128's are head dims 128 and 256's 2 (64's 3 in its
         // text), sm90_fp8_192x128's head dim 64's 3 (128's 2 in its text),
         // sm90_fp8_128x128_d256's 2
         c.stages == (kernel == FwdKernel::sm90_fp8_192x128 ? 3 : 2);
}
static_assert(table_describes<Fp8Config<128, 2>>(FwdKernel::sm90_fp8_128x128) &&
                  table_describes<Fp8Config<64, 2>>(FwdKernel::sm90_fp8_128x128) &&
                  table_describes<Fp8Config<256, 2>>(FwdKernel::sm90_fp8_128x128) &&
                  table_describes<Fp8Config<256, 2, true>>(FwdKernel::sm90_fp8_128x128_d256) &&
                  table_describes<Fp8Config<64, 3>>(FwdKernel::sm90_fp8_192x128) &&
                  table_describes<Fp8Config<128, 3>>(FwdKernel::sm90_fp8_192x128) &&
                  Fp8Config<64, 2>::kStages == 3 && Fp8Config<64, 3>::kStages == 3 &&
                  Fp8Config<128, 2>::kStages == 2 && Fp8Config<128, 3>::kStages == 2 &&
                  Fp8Config<256, 2>::kStages == 2 && Fp8Config<256, 2, true>::kOverlap &&
                  !Fp8Config<256, 2>::kOverlap,
              "core/tile_config.h's sm90_fp8_* entries describe these kernels");

struct Fp8Maps {
  CUtensorMap q, k, v;
  CUtensorMap o;  // out, 16-bit (dense calls at head dims 64 and 128; see Fp8Config::kOStaged)
};
// Varlen: V's rows also through a map whose tiles end at a sequence's end, zeros past it (as
// QkvTensorMaps::v_tail of the 16-bit kernel): dims (head dim, head, 128, total_k + 1) over
// v - 128 rows, the last two one row apart; the box at (0, h, 128 - r, end) holds rows
// end - r .. end - 1, then zeros. A sequence's partial last tile loads through it: the rows past
// the sequence are the next sequence's, and P = 0 does not cancel a NaN there. Only the varlen
// instantiation takes it, so the dense one's parameters (and SASS) are as before varlen.
struct Fp8VarlenMaps : Fp8Maps {
  CUtensorMap v_tail;
};
template <bool kVarlen>
using Fp8MapsOf = std::conditional_t<kVarlen, Fp8VarlenMaps, Fp8Maps>;

// The key that position `pos` of a 32-key chunk of V^T holds: the key whose P value the 8-bit A
// fragment carries at that position (positions 4t + i and 16 + 4t + i of lane t of a quad hold
// the accumulator's columns 2t + (i & 1) + 8 (i >> 1) and 16 + the same).
__host__ __device__ constexpr int fp8_key_of(int pos) {
  return (pos & 16) + 2 * ((pos & 15) >> 2) + (pos & 1) + 8 * ((pos >> 1) & 1);
}
// transpose_tile writes 4-byte words of V^T: word a of a 16-key group holds keys 2a, 2a + 1,
// 2a + 8, 2a + 9, which is fp8_key_of's order.
constexpr bool words_are_key_pairs() {
  for (int pos = 0; pos < 32; ++pos) {
    const int a = (pos & 15) / 4, k = pos % 4;
    if (fp8_key_of(pos) != (pos & 16) + 2 * a + (k & 1) + 8 * (k >> 1)) return false;
  }
  return true;
}
static_assert(words_are_key_pairs(), "transpose_tile writes fp8_key_of's order");

// A lane's part of transpose_tile's addresses. Step `step` of the tile (key group g = step % 8,
// chunk pair cs = step / 8) reads V at transpose_src and writes V^T at transpose_dst: each swizzle
// XORs bits of the lane's row with bits of the step's, so the split below leaves a step one XOR
// of a constant into a lane register for each address, the step's constant parts (g's key rows,
// a head-dim-256 slab, cs's V^T rows) as immediates of the LDSM / STSM, and the rest computed once.
// transpose_reference gives the addresses as first written; the static_assert below checks the
// split against it at every step and lane of each head dim.
struct TransposeLane {
  std::uint32_t src;   // (8 (j % 2) + r) rows and the low bit of the source chunk's swizzle
  std::uint32_t sx;    // the source swizzle's bits that cs's bits flip (32 apart)
  std::uint32_t dst;   // V^T row d without the step's chunk: 2048 jb + 128 (2r + odd)
  std::uint32_t dl16;  // 16 (d % 8), the V^T swizzle's row part (g's bits flip it)
};
template <int kD>
__host__ __device__ constexpr TransposeLane transpose_lane(int lane) {
  const int j = lane >> 3, r = lane & 7, jb = j >> 1, j0 = j & 1;
  const int odd = (r >= 4) ^ j0;
  constexpr int kRowBytes = kD == 64 ? 64 : 128;
  // The source chunk c = 2 cs + jb at the swizzle's row bits (128-byte: r; 64-byte: r / 2): its
  // low bit from jb, the ones above from cs.
  const int rs = kD == 64 ? (r >> 1) & 3 : r;
  TransposeLane t{};
  t.src = static_cast<std::uint32_t>((8 * j0 + r) * kRowBytes + ((jb ^ (rs & 1)) << 4));
  t.sx = static_cast<std::uint32_t>((rs >> 1) << 5);
  t.dst = static_cast<std::uint32_t>(2048 * jb + 128 * (2 * r + odd));
  t.dl16 = static_cast<std::uint32_t>(((2 * r + odd) & 7) << 4);
  return t;
}
template <int kD>
__host__ __device__ constexpr std::uint32_t transpose_src(const TransposeLane& t, int step) {
  constexpr int kRowBytes = kD == 64 ? 64 : 128;
  const int g = step & 7, cs = step >> 3;
  const std::uint32_t slab = kD == 256 ? (cs >> 2) * (128 * 128) : 0;
  const std::uint32_t flip = static_cast<std::uint32_t>((cs & (kD == 64 ? 1 : 3)) << 5);
  return t.src + (t.sx ^ flip) + static_cast<std::uint32_t>(16 * g * kRowBytes) + slab;
}
__host__ __device__ constexpr std::uint32_t transpose_dst(const TransposeLane& t, int step) {
  const int g = step & 7, cs = step >> 3;
  return t.dst + static_cast<std::uint32_t>(4096 * cs) +
         (t.dl16 ^ static_cast<std::uint32_t>(g << 4));
}
// The addresses as transpose_tile first computed them at each step (2026-11-30-h200-s44's v7).
template <int kD>
__host__ __device__ constexpr std::uint32_t transpose_reference(int step, int lane, bool dst) {
  const int j = lane >> 3, r = lane & 7;
  const int odd = (r >= 4) ^ (j & 1);
  const int g = step & 7, c = 2 * (step >> 3) + (j >> 1);
  const int key = 16 * g + 8 * (j & 1) + r;
  const std::uint32_t slab = kD == 256 ? (c >> 3) * (128 * 128) : 0;
  const std::uint32_t at = kD == 64 ? key * 64 + (((c ^ (key >> 1)) & 3) << 4)
                                    : slab + key * 128 + (((c ^ key) & 7) << 4);
  const int d = 16 * c + 2 * r + odd;
  return dst ? static_cast<std::uint32_t>(d * 128 + (((g ^ d) & 7) << 4)) : at;
}
template <int kD>
constexpr bool transpose_split_matches() {
  for (int lane = 0; lane < 32; ++lane) {
    const TransposeLane t = transpose_lane<kD>(lane);
    for (int step = 0; step < kD / 4; ++step) {
      if (transpose_src<kD>(t, step) != transpose_reference<kD>(step, lane, false) ||
          transpose_dst(t, step) != transpose_reference<kD>(step, lane, true)) {
        return false;
      }
    }
  }
  return true;
}
static_assert(transpose_split_matches<64>() && transpose_split_matches<128>() &&
                  transpose_split_matches<256>(),
              "transpose_tile's split addresses are the first-written ones");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int kTransposeThreads = 96;  // warps 1-3 of the producer warpgroup

// Two floats as E4M3 bytes, lo in the low byte (round to nearest even, saturated).
__device__ __forceinline__ std::uint32_t e4m3x2(float lo, float hi) {
  std::uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ std::uint32_t e4m3x4(float a, float b, float c, float d) {
  return e4m3x2(a, b) | (e4m3x2(c, d) << 16);
}

// V tile -> V^T tile in shared memory, by warp `w` (0-2) of the three transposing warps. The V
// tile (by TMA: row = key, kD bytes of head dim; at kD = 128 the 128-byte swizzle, 16-byte chunk
// c of row r at c ^ (r % 8); at kD = 64 the 64-byte swizzle, chunk c at c ^ (r / 2 % 4), which
// keeps 8 consecutive keys' chunks on distinct banks too; at kD = 256 two slabs of 128-byte rows,
// chunks 0-7 in the first, 8-15 in the second) becomes the V^T tile the P V GEMM reads
// (row = head-dim element d, 128 bytes of keys, the 128-byte swizzle), each 16-key group's keys in
// fp8_key_of's order: its 4-byte word a holds keys 2a, 2a + 1, 2a + 8, 2a + 9. A warp step moves
// one 16-key group g x 32 elements d (8 groups x kD / 32 element chunks: kD / 4 steps):
//   - ldmatrix.trans of 4 matrices of 8 keys x 16 bytes (keys 16g + 0..7 and + 8..15, at two
//     16-element chunks): lane l gets, per matrix, keys 2 (l % 4) and + 1 at elements 2 (l / 4)
//     and + 1 (4 bytes). Keys 2a, 2a + 1 of the first matrix beside 2a + 8, 2a + 9 of the second
//     are one V^T word (a = l % 4): a byte permute takes it for each of the two elements (bytes
//     0 and 2 of each register for the even element, 1 and 3 for the odd);
//   - stmatrix of those words: 4 matrices of 8 rows d x 16 bytes (group g's 16 positions), lane l
//     the row l / 4's word a. Each matrix takes rows 2r + e (r = 0..7) with e = (r >= 4), or its
//     complement, so its 8 rows cover all 8 swizzle positions (d % 8): no bank conflicts, as none
//     on the load side (8 consecutive keys). A lane of row r >= 4 (lane >= 16) so gives the odd
//     element's word to matrices 0 and 2 and the even one's to 1 and 3: its selectors swap.
//
// transpose_steps: warp kW's steps (kW, kW + 3, ...), unrolled, so that each step's constant
// parts are immediates (they were 19 of a step's 25 instructions with the loop: 2026-11-30-h200-s51
// notes; ~8.4 a step now). H200, gpuattn_fp8_probe in balanced order against the loop
// (2026-11-30-h200-s52 call 1, 3 rounds): head dim 256 1.02-1.09x TFLOP/s, 128 0.99-1.06x (long
// calls most), 64 0.99-1.02x.
template <int kD, int kW>
__device__ __forceinline__ void transpose_steps(std::uint32_t src, std::uint32_t dst,
                                                const TransposeLane& t, std::uint32_t sel_mix0,
                                                std::uint32_t sel_mix1) {
#pragma unroll
  for (int step = kW; step < kD / 4; step += 3) {
    std::uint32_t v[4];  // A (keys 0-7) and B (8-15) at chunk 2 (step / 8), then at the next
    ptx::ldmatrix_x4_trans(v, src + transpose_src<kD>(t, step));
    ptx::stmatrix_x4(dst + transpose_dst(t, step), __byte_perm(v[0], v[1], sel_mix0),
                     __byte_perm(v[0], v[1], sel_mix1), __byte_perm(v[2], v[3], sel_mix0),
                     __byte_perm(v[2], v[3], sel_mix1));
  }
}
template <int kD>
__device__ __forceinline__ void transpose_tile(std::uint32_t src, std::uint32_t dst, int w,
                                               int lane) {
  TransposeLane t = transpose_lane<kD>(lane);
  // Opaque to the compiler at each tile: else it hoists every step's XORs out of the tile loop
  // and holds them, past the producer's 40 registers (32 with 3 consumers; ptxas spilled 4-28
  // bytes).
  asm volatile("" : "+r"(t.sx), "+r"(t.dl16));
  // The words this lane stores into matrices 0 and 2 (sel_mix0) and 1 and 3 (sel_mix1).
  const std::uint32_t sel_mix0 = lane >= 16 ? 0x7531u : 0x6420u;
  const std::uint32_t sel_mix1 = lane >= 16 ? 0x6420u : 0x7531u;
  if (w == 0) {
    transpose_steps<kD, 0>(src, dst, t, sel_mix0, sel_mix1);
  } else if (w == 1) {
    transpose_steps<kD, 1>(src, dst, t, sel_mix0, sel_mix1);
  } else {
    transpose_steps<kD, 2>(src, dst, t, sel_mix0, sel_mix1);
  }
}

// Work item i of a call with `nblk` row blocks a (batch, head): its row block, head and batch.
// Causal calls take every head's last row block first (the longest), then the next; dense calls
// take one head's row blocks one after another, so that CTAs running at once share its K and V.
struct Item {
  int mb, h, b;
};
__device__ __forceinline__ Item item_of(const FwdParams& p, int i, int nblk) {
  Item it;
  if (p.causal) {
    const int bh = i % (p.hq * p.batch);
    it.mb = nblk - 1 - i / (p.hq * p.batch);
    it.h = bh % p.hq;
    it.b = bh / p.hq;
  } else {
    it.mb = i % nblk;
    it.h = (i / nblk) % p.hq;
    it.b = i / nblk / p.hq;
  }
  return it;
}
// Key tiles a row block mb of lq rows over lk keys sees: none past its sequence's rows (varlen: the
// grid has max_seqlen_q's row blocks for every sequence), else its keys (causal: up to its last
// row's diagonal).
template <int kBlockM, bool kVarlen>
__device__ __forceinline__ int tiles_of(const FwdParams& p, int mb, int lq, int lk) {
  if (kVarlen && mb * kBlockM >= lq) return 0;
  const int last_row = min((mb + 1) * kBlockM, lq) - 1;
  const int kend = p.causal ? max(0, min(lk, last_row + lk - lq + 1)) : lk;
  return (kend + kBlockN - 1) / kBlockN;
}
// A sequence's query rows and keys: sequence b's (kVarlen), or the call's, as launch constants
// (per item from cu_seqlens in every call, dense calls ran 3-10% slower: s45 calls 6 and 7).
template <bool kVarlen>
__device__ __forceinline__ int len_q_of(const FwdParams& p, int b) {
  return kVarlen ? p.len_q(b) : p.seqlen_q;
}
template <bool kVarlen>
__device__ __forceinline__ int len_k_of(const FwdParams& p, int b) {
  return kVarlen ? p.len_k(b) : p.seqlen_k;
}

#endif

// Persistent: CTA c runs items c, c + gridDim.x, ... The TMA thread streams each item's Q into one
// of two buffers and its K and V tiles through their rings (V^T through its own, by the
// transposing warps) without a break between items, so the next item's loads run under this
// item's last tiles and epilogue (at head dim 256, one Q buffer: the next item's loads, its K and V
// too, wait for this item's last S GEMM).
template <typename TO, class Cfg, bool kVarlen>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    fp8_fwd_kernel(const __grid_constant__ FwdParams p,
                   const __grid_constant__ Fp8MapsOf<kVarlen> maps, int nblk, int n_items) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kD = Cfg::kD, kBlockM = Cfg::kBlockM, kTileBytes = Cfg::kTileBytes;
  constexpr int kQBytes = Cfg::kQBytes, kConsumerThreads = 128 * Cfg::kC;
  constexpr int kVtStages = Cfg::kVtStages, kQBuffers = Cfg::kQBuffers, kRow = Cfg::kRow;
  constexpr int kStages = Cfg::kStages;
  constexpr bool kOverlap = Cfg::kOverlap;
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t base = (ptx::smem_addr(smem_raw) + 1023u) & ~1023u;
  const std::uint32_t sq0 = base;                       // kQBuffers Q buffers
  const std::uint32_t so0 = sq0 + kQBuffers * kQBytes;  // O buffers (Cfg::kOStaged)
  const std::uint32_t sk0 = so0 + Cfg::kOBytes;
  const std::uint32_t sv0 = sk0 + kStages * kTileBytes;    // V^T ring
  const std::uint32_t sr0 = sv0 + kVtStages * kTileBytes;  // V ring (as loaded)
  const std::uint32_t bars = sr0 + kStages * kTileBytes;
  const auto q_full = [&](int i) { return bars + 8 * i; };
  const auto q_empty = [&](int i) { return bars + 8 * (2 + i); };
  const auto k_full = [&](int s) { return bars + 32 + 8 * s; };
  const auto k_empty = [&](int s) { return bars + 32 + 8 * (kStages + s); };
  const auto r_full = [&](int s) { return bars + 32 + 8 * (2 * kStages + s); };
  const auto r_empty = [&](int s) { return bars + 32 + 8 * (3 * kStages + s); };
  const auto v_full = [&](int s) { return bars + 32 + 8 * (4 * kStages + s); };
  const auto v_empty = [&](int s) { return bars + 32 + 8 * (4 * kStages + kVtStages + s); };
  const int tid = threadIdx.x;

  if (tid == 0) {
    for (int i = 0; i < 2; ++i) {
      ptx::mbarrier_init(q_full(i), 1);
      ptx::mbarrier_init(q_empty(i), kConsumerThreads);
    }
    for (int s = 0; s < kStages; ++s) {
      ptx::mbarrier_init(k_full(s), 1);
      ptx::mbarrier_init(k_empty(s), kConsumerThreads);
      ptx::mbarrier_init(r_full(s), 1);
      ptx::mbarrier_init(r_empty(s), kTransposeThreads);
    }
    for (int s = 0; s < kVtStages; ++s) {
      ptx::mbarrier_init(v_full(s), kTransposeThreads);
      ptx::mbarrier_init(v_empty(s), kConsumerThreads);
    }
    ptx::fence_mbarrier_init();
  }
  __syncthreads();

  if (tid < 128) {
    ptx::setmaxnreg_dec<Cfg::kProducerRegs>();
    if (tid == 0) {
      // A tile of `rows` rows of kD bytes: one box a slab, slab s at dst + s rows kRow bytes.
      const auto load = [&](std::uint32_t dst, const CUtensorMap* map, std::uint32_t bar, int rows,
                            int h, int row, int b) {
#pragma unroll
        for (int s = 0; s < Cfg::kSlabs; ++s) {
          ptx::tma_load_4d(dst + s * rows * kRow, map, bar, s * kRow, h, row, b);
        }
      };
      int ring = 0, n = 0;
      for (int i = blockIdx.x; i < n_items; i += gridDim.x, ++n) {
        const Item it = item_of(p, i, nblk);
        const int hk = p.kv_head(it.h), qb = n % kQBuffers;
        if (n >= kQBuffers) ptx::mbarrier_wait(q_empty(qb), ((n / kQBuffers) & 1) ^ 1);
        // Tensor-map coordinates (varlen: rows from cu_seqlens in a batch of one) and tiles.
        int n_tiles, bc = it.b, rk = 0, lk = 0;
        if constexpr (kVarlen) {
          bc = 0;
          rk = static_cast<int>(p.row0_k(it.b));
          lk = p.len_k(it.b);
          n_tiles = tiles_of<kBlockM, true>(p, it.mb, p.len_q(it.b), lk);
          if (n_tiles > 0) {
            ptx::mbarrier_arrive_expect_tx(q_full(qb), kQBytes);
            load(sq0 + qb * kQBytes, &maps.q, q_full(qb), kBlockM, it.h,
                 static_cast<int>(p.row0_q(it.b)) + it.mb * kBlockM, 0);
          } else {  // no GEMM reads this item's Q (often a row block past its sequence)
            ptx::mbarrier_arrive(q_full(qb));
          }
        } else {
          ptx::mbarrier_arrive_expect_tx(q_full(qb), kQBytes);
          load(sq0 + qb * kQBytes, &maps.q, q_full(qb), kBlockM, it.h, it.mb * kBlockM, it.b);
          n_tiles = tiles_of<kBlockM, false>(p, it.mb, p.seqlen_q, p.seqlen_k);
        }
        for (int t = 0; t < n_tiles; ++t, ++ring) {
          const int s = ring % kStages;
          const std::uint32_t parity = ((ring / kStages) & 1) ^ 1;
          if (ring >= kStages) ptx::mbarrier_wait(k_empty(s), parity);
          ptx::mbarrier_arrive_expect_tx(k_full(s), kTileBytes);
          load(sk0 + s * kTileBytes, &maps.k, k_full(s), kBlockN, hk, rk + t * kBlockN, bc);
          if (ring >= kStages) ptx::mbarrier_wait(r_empty(s), parity);
          ptx::mbarrier_arrive_expect_tx(r_full(s), kTileBytes);
          if constexpr (kVarlen) {  // a sequence's partial last tile: zeros past its end
            const int in_seq = lk - t * kBlockN;
            if (in_seq < kBlockN) {
              load(sr0 + s * kTileBytes, &maps.v_tail, r_full(s), kBlockN, hk, kBlockN - in_seq,
                   rk + lk);
            } else {
              load(sr0 + s * kTileBytes, &maps.v, r_full(s), kBlockN, hk, rk + t * kBlockN, bc);
            }
          } else {
            load(sr0 + s * kTileBytes, &maps.v, r_full(s), kBlockN, hk, t * kBlockN, it.b);
          }
        }
      }
    } else if (tid >= 32) {
      // V tiles in the order they were loaded: V^T into the ring's stage once the consumers have
      // left it, the V stage freed for the next load, then the V^T stage posted (its stores
      // fenced for the async proxy, which wgmma reads through).
      int ring = 0;
      for (int i = blockIdx.x; i < n_items; i += gridDim.x) {
        const Item it = item_of(p, i, nblk);
        const int n_tiles = tiles_of<kBlockM, kVarlen>(p, it.mb, len_q_of<kVarlen>(p, it.b),
                                                       len_k_of<kVarlen>(p, it.b));
        for (int t = 0; t < n_tiles; ++t, ++ring) {
          const int s = ring % kStages, sv = ring % kVtStages;
          ptx::mbarrier_wait(r_full(s), (ring / kStages) & 1);
          if (ring >= kVtStages) ptx::mbarrier_wait(v_empty(sv), ((ring / kVtStages) & 1) ^ 1);
          transpose_tile<kD>(sr0 + s * kTileBytes, sv0 + sv * kTileBytes, tid / 32 - 1, tid % 32);
          ptx::fence_proxy_async_shared();
          ptx::mbarrier_arrive(r_empty(s));
          ptx::mbarrier_arrive(v_full(sv));
        }
      }
    }
    return;
  }
  ptx::setmaxnreg_inc<Cfg::kConsumerRegs>();

  const int c = tid / 128 - 1;  // consumer warpgroup
  const int warp = (tid % 128) / 32, lane = tid % 32, g = lane / 4, t4 = lane % 4;
  // Q and K: rows of kRow bytes (the 128- or 64-byte swizzle, 8-row groups 8 kRow bytes apart;
  // head dim 256 in two slabs of 128-byte rows); V^T: rows of 128 keys.
  const auto qk_desc = [](std::uint32_t addr) {
    return kD == 64 ? ptx::smem_desc_sw64(addr, 16, 512) : ptx::smem_desc_sw128(addr, 16, 1024);
  };
  const std::uint64_t k_desc = qk_desc(sk0);
  const std::uint64_t v_desc = ptx::smem_desc_sw128(sv0, 16, 1024);

  float o[kD / 2];
  float s[64];
  std::uint32_t pf[16];
  int ring = 0, n = 0;
  // The thread that issues its warpgroup's TMA stores of O, and whether one may still read the
  // warpgroup's O buffer.
  const bool o_leader = (tid & 127) == 0;
  bool o_in_flight = false;
  for (int i = blockIdx.x; i < n_items; i += gridDim.x, ++n) {
    const Item it = item_of(p, i, nblk);
    const int h = it.h, b = it.b, hk = p.kv_head(h), m0 = it.mb * kBlockM, qb = n % kQBuffers;
    const int lq = len_q_of<kVarlen>(p, b), lk = len_k_of<kVarlen>(p, b);
    const int n_tiles = tiles_of<kBlockM, kVarlen>(p, it.mb, lq, lk);
    const int row0 = m0 + c * 64 + warp * 16 + g;  // the thread's rows: row0 and row0 + 8
    const float sl2 = p.scale_log2 * p.q_scale_of(h) * p.k_scale_of(hk);
    const std::uint64_t q_desc = qk_desc(sq0 + qb * kQBytes + c * 64 * kRow);
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, alpha[2];
    bool moved = false;  // a row max of the thread's grew in the last softmax (alpha != 1)
#pragma unroll
    for (int e = 0; e < kD / 2; ++e) o[e] = 0.f;

    const auto gemm_s = [&](int st) {
      ptx::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kD / 32; ++kk) {
        // k-step kk: slab kk / (kRow / 32) (head dim 256: two), 32 bytes a step into its rows
        constexpr int kSteps = kRow / 32;
        const std::uint32_t slab = kk / kSteps, at = 32 * (kk % kSteps);
        ptx::wgmma_ss<__nv_fp8_e4m3, 128>(
            s, ptx::desc_advance(q_desc, slab * kBlockM * kRow + at),
            ptx::desc_advance(k_desc, st * kTileBytes + slab * kBlockN * kRow + at),
            kk > 0 ? 1 : 0);
      }
      ptx::wgmma_commit();
    };
    const auto gemm_pv = [&](int st) {
      ptx::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        const std::uint32_t a[4] = {pf[4 * kk], pf[4 * kk + 1], pf[4 * kk + 2], pf[4 * kk + 3]};
        ptx::wgmma_rs_kmajor<__nv_fp8_e4m3, kD>(
            o, a, ptx::desc_advance(v_desc, st * kTileBytes + 32 * kk), 1);
      }
      ptx::wgmma_commit();
    };
    // Tile t's scores -> exponentials (in s), the rows' running max and sums, and alpha, the
    // factor that moves O from the old max to the new one.
    const auto softmax = [&](int t) {
      const int k0 = t * kBlockN;
      moved = false;
      if (k0 + kBlockN > lk || (p.causal && k0 + kBlockN - 1 > m0 + c * 64 + lk - lq)) {
#pragma unroll
        for (int j = 0; j < 16; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = k0 + 8 * j + 2 * t4 + (e & 1);
            const int row = row0 + 8 * (e >> 1);
            if (key >= lk || (p.causal && key > row + lk - lq)) s[4 * j + e] = -INFINITY;
          }
        }
      }
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = -INFINITY;
#pragma unroll
        for (int j = 0; j < 16; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
        mx = ptx::quad_max(mx);
        const float m_new = fmaxf(m[r], mx * sl2);
        const float m_use = m_new == -INFINITY ? 0.f : m_new;
        alpha[r] = ptx::fast_exp2(m[r] - m_use);
        moved |= m_new != m[r];
        m[r] = m_new;
        // P = exp2(score - max + kPShift), in (0, 256]: E4M3's normal range reaches 2^-6, so
        // P in [0, 1] held every term under 1/64 of the row's max as a subnormal (steps of 2^-9,
        // the smallest ones 0); shifted, those down to 2^-14 keep 3 mantissa bits. O and l carry
        // the same factor 2^kPShift, which 1 / l cancels; the LSE takes it off (FlashAttention-3's
        // FP8 kernel shifts its max by 8 likewise).
        const float bias = kPShift - m_use;
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < 16; ++j) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float x = ptx::fast_exp2(fmaf(s[4 * j + 2 * r + e], sl2, bias));
            s[4 * j + 2 * r + e] = x;
            sum += x;
          }
        }
        l[r] = l[r] * alpha[r] + sum;
      }
    };
    // O moved from the old row maxima to the new ones (alpha, from softmax). At head dim 256, not
    // when no row max of the warp's 16 rows grew (alpha 1 for all: the same O): past a row's
    // first tiles its max seldom grows, and the rescale is 128 FMUL a thread a tile there, twice
    // the tile's exponentials. H200, gpuattn_fp8_probe in balanced order against the rescale at
    // every tile (2026-11-30-h200-s51 call 9, 3 rounds): dense 1.02-1.05x at S512-16384, causal
    // S >= 4096 1.02-1.04x, causal S512-2048 0.97-0.98x. At head dim 128 (64 FMUL) it was
    // 0.97-1.05x, mixed, and at 64 0.96-0.98x (calls 7-8). ncu (call 6) had us issuing 1.13x the
    // instructions of cuDNN's FP8 SDPA at D256 S4096 dense, 1.23x at D128 S8192.
    const auto rescale_o = [&]() {
      if constexpr (kD == 256) {
        if (!__any_sync(0xffffffffu, moved)) return;
      }
#pragma unroll
      for (int j = 0; j < kD / 8; ++j) {
        o[4 * j + 0] *= alpha[0];
        o[4 * j + 1] *= alpha[0];
        o[4 * j + 2] *= alpha[1];
        o[4 * j + 3] *= alpha[1];
      }
    };
    const auto pack_p = [&]() {
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        const float* a = s + 16 * kk;  // n8 blocks 4kk .. 4kk + 3
        pf[4 * kk + 0] = e4m3x4(a[0], a[1], a[4], a[5]);
        pf[4 * kk + 1] = e4m3x4(a[2], a[3], a[6], a[7]);
        pf[4 * kk + 2] = e4m3x4(a[8], a[9], a[12], a[13]);
        pf[4 * kk + 3] = e4m3x4(a[10], a[11], a[14], a[15]);
      }
    };

    ptx::mbarrier_wait(q_full(qb), (n / kQBuffers) & 1);
    if (n_tiles > 0) {
      if constexpr (!kOverlap) {
        // Head dim 256, and 3 consumers at head dim 128: each tile's S GEMM, softmax and P V in
        // turn (S and P are never live beside the next tile's S): the consumer warpgroups still
        // overlap each other.
        for (int t = 0; t < n_tiles; ++t) {
          const int st = (ring + t) % kStages, sv = (ring + t) % kVtStages;
          ptx::mbarrier_wait(k_full(st), ((ring + t) / kStages) & 1);
          gemm_s(st);
          ptx::wgmma_wait<0>();
          ptx::mbarrier_arrive(k_empty(st));
          if (t == n_tiles - 1) ptx::mbarrier_arrive(q_empty(qb));  // the last S GEMM has read Q
          softmax(t);
          if (t > 0) rescale_o();
          pack_p();
          ptx::mbarrier_wait(v_full(sv), ((ring + t) / kVtStages) & 1);
          gemm_pv(sv);
          ptx::wgmma_wait<0>();
          ptx::mbarrier_arrive(v_empty(sv));
        }
        ring += n_tiles;
      } else {
        {
          const int st = ring % kStages;
          ptx::mbarrier_wait(k_full(st), (ring / kStages) & 1);
          gemm_s(st);
          ptx::wgmma_wait<0>();
          ptx::mbarrier_arrive(k_empty(st));
          if (n_tiles == 1) ptx::mbarrier_arrive(q_empty(qb));
          softmax(0);
          pack_p();
        }
        for (int t = 1; t < n_tiles; ++t) {
          const int st = (ring + t) % kStages, sp = (ring + t - 1) % kVtStages;
          ptx::mbarrier_wait(k_full(st), ((ring + t) / kStages) & 1);
          gemm_s(st);
          ptx::mbarrier_wait(v_full(sp), ((ring + t - 1) / kVtStages) & 1);
          gemm_pv(sp);
          ptx::wgmma_wait<1>();
          ptx::mbarrier_arrive(k_empty(st));
          if (t == n_tiles - 1) ptx::mbarrier_arrive(q_empty(qb));  // the last S GEMM has read Q
          softmax(t);
          ptx::wgmma_wait<0>();
          ptx::mbarrier_arrive(v_empty(sp));
          rescale_o();
          pack_p();
        }
        const int sl = (ring + n_tiles - 1) % kVtStages;
        ptx::mbarrier_wait(v_full(sl), ((ring + n_tiles - 1) / kVtStages) & 1);
        gemm_pv(sl);
        ptx::wgmma_wait<0>();
        ptx::mbarrier_arrive(v_empty(sl));
        ring += n_tiles;
      }
    } else {
      ptx::mbarrier_arrive(q_empty(qb));
    }

    const float vs = p.v_scale_of(hk);
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = row0 + 8 * r;
      const float sum = ptx::quad_sum(l[r]);
      // One MUFU instruction each (a positive row sum is >= 2^kPShift: its max term is
      // exp2(kPShift)); IEEE division and log2f took a subroutine and a slow-path branch a row in
      // the 16-bit kernel, whose same change gave 0.964x the time at head dim 64 up to 2048 rows
      // (sm90-kernel-notes).
      inv[r] = sum > 0.f ? vs * ptx::fast_rcp(sum) : 0.f;
      if (row < lq && p.lse != nullptr && t4 == 0) {
        p.lse[p.lse_offset(b, row, h)] =
            sum > 0.f ? (m[r] + ptx::fast_log2(sum) - kPShift) * 0.69314718055994531f : -INFINITY;
      }
    }
    bool staged = false;
    if constexpr (Cfg::kOStaged && !kVarlen) staged = n_tiles > 0;  // else O is 0: stored below
    if (staged) {
      // The warpgroup's 64 rows into its O buffer (stmatrix x4 of columns [8 n, 8 n + 16):
      // matrices (rows 0-7, n), (rows 8-15, n), (rows 0-7, n + 1), (rows 8-15, n + 1) of the
      // warp's 16 rows; lane l addresses row l % 8 of matrix l / 8; 16-byte chunk nn of a row at
      // chunk nn % 8 of slab nn / 8, swizzled), once the previous item's store has read it; then
      // one thread stores the rows with TMA (rows past seqlen_q lie outside the map: not
      // written) and the warpgroup goes on.
      const std::uint32_t ob = so0 + c * Cfg::kOWarpgroupBytes;
      if (o_leader && o_in_flight) ptx::bulk_wait_group_read<0>();
      ptx::named_barrier_sync(1 + c, 128);
      const int mi = lane >> 3;
      const int rs = warp * 16 + 8 * (mi & 1) + (lane & 7);
#pragma unroll
      for (int j = 0; j < kD / 8; j += 2) {
        const int nn = j + (mi >> 1);
        const std::uint32_t addr =
            ob + (nn >> 3) * Cfg::kOSlabBytes + rs * 128 + (((nn & 7) ^ (rs & 7)) << 4);
        ptx::stmatrix_x4(addr, ptx::pack2<TO>(o[4 * j] * inv[0], o[4 * j + 1] * inv[0]),
                         ptx::pack2<TO>(o[4 * j + 2] * inv[1], o[4 * j + 3] * inv[1]),
                         ptx::pack2<TO>(o[4 * j + 4] * inv[0], o[4 * j + 5] * inv[0]),
                         ptx::pack2<TO>(o[4 * j + 6] * inv[1], o[4 * j + 7] * inv[1]));
      }
      ptx::fence_proxy_async_shared();  // the stmatrix writes, before the TMA store reads them
      ptx::named_barrier_sync(1 + c, 128);
      if (o_leader) {
#pragma unroll
        for (int sl = 0; sl < kD / 64; ++sl) {
          ptx::tma_store_4d(&maps.o, ob + sl * Cfg::kOSlabBytes, sl * 64, h, m0 + c * 64, b);
        }
        ptx::bulk_commit_group();
        o_in_flight = true;
      }
    } else {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = row0 + 8 * r;
        if (row >= lq) continue;
        auto* out = reinterpret_cast<std::uint32_t*>(static_cast<TO*>(p.o) + p.o_offset(b, row, h));
#pragma unroll
        for (int j = 0; j < kD / 8; ++j) {
          out[4 * j + t4] =
              ptx::pack2<TO>(o[4 * j + 2 * r] * inv[r], o[4 * j + 2 * r + 1] * inv[r]);
        }
      }
    }
  }
  if (o_leader && o_in_flight) ptx::bulk_wait_group<0>();  // written before the CTA ends
#endif
}

// Rows of kD bytes, kBoxRows a box, swizzled as the kernel's descriptors read them (128 bytes at
// kD = 128 and 256, 64 at 64); at kD = 256 a box spans half a row (one slab: the kernel loads two).
template <int kD, int kBoxRows = 128>
CUtensorMap rows_map(const char* name, const void* base, int heads, int rows, int batch,
                     std::int64_t head_stride, std::int64_t row_stride, std::int64_t batch_stride) {
  const RowsMapFormat format{CU_TENSOR_MAP_DATA_TYPE_UINT8, 1,
                             static_cast<std::uint32_t>(kD == 256 ? 128 : kD),
                             kD == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B};
  return make_rows_map(name, base, format, kD, heads, rows, batch, head_stride, row_stride,
                       batch_stride, kBoxRows);
}

template <typename TO, class Cfg>
void launch_fp8(const FwdParams& p, cudaStream_t stream) {
  constexpr int kD = Cfg::kD, kBlockM = Cfg::kBlockM;
  const int nblk = (p.seqlen_q + kBlockM - 1) / kBlockM;
  const long long items = static_cast<long long>(nblk) * p.hq * p.batch;
  if (items > INT32_MAX) {
    throw Error(ErrorCode::not_supported,
                "gpuattn: FP8 call of " + std::to_string(items) + " row blocks (over 2^31 - 1)");
  }
  // Every map and setting before the launch: one the driver rejects leaves nothing written.
  Fp8VarlenMaps maps{};
  // Varlen: every sequence's rows in one batch entry (the kernel adds cu_seqlens' first rows).
  const bool varlen = p.is_varlen();
  const int batch = varlen ? 1 : p.batch;
  const int rows_q = static_cast<int>(varlen ? p.total_q : p.seqlen_q);
  const int rows_k = static_cast<int>(varlen ? p.total_k : p.seqlen_k);
  maps.q = rows_map<kD, kBlockM>("q", p.q, p.hq, rows_q, batch, p.q_head_stride, p.q_row_stride,
                                 p.q_batch_stride);
  maps.k = rows_map<kD>("k", p.k, p.hkv, rows_k, batch, p.k_head_stride, p.k_row_stride,
                        p.k_batch_stride);
  maps.v = rows_map<kD>("v", p.v, p.hkv, rows_k, batch, p.v_head_stride, p.v_row_stride,
                        p.v_batch_stride);
  // Dense calls at head dims 64 and 128: out's map (16-bit elements; a box of 64 columns x 64
  // rows, 128-byte swizzled, one a slab of a consumer's O buffer).
  if (Cfg::kOStaged && !varlen) {
    maps.o = make_rows_map("out", p.o, p.dtype, kD, p.hq, rows_q, batch, p.o_head_stride,
                           p.o_row_stride, p.o_batch_stride, 64);
  }
  if (varlen) {  // 128 rows in dim 2 and the sequence end in dim 3, both a row apart, over
    // v - 128 rows: never read below v, the box's in-bounds rows are end - r .. end - 1.
    // (One key row in all: its address is v whatever the stride, which then may be any.)
    const std::int64_t row_bytes = map_stride(p.v_row_stride, p.total_k, std::int64_t{kD} * p.hkv);
    const auto* base = reinterpret_cast<const void*>(
        reinterpret_cast<std::uintptr_t>(p.v) - static_cast<std::uintptr_t>(kBlockN * row_bytes));
    maps.v_tail = rows_map<kD>("v (sequence ends)", base, p.hkv, kBlockN, rows_k + 1,
                               p.v_head_stride, row_bytes, row_bytes);
  }

  const int grid = static_cast<int>(std::min<long long>(items, sm80::num_sms()));
  static PerDeviceFlags smem_set[2];  // per instantiation (TO, Cfg, varlen)
  const auto launch = [&](auto kernel, const auto& kernel_maps, PerDeviceFlags& done) {
    set_max_dynamic_smem(reinterpret_cast<const void*>(kernel), Cfg::kSmemBytes, done);
    kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, stream>>>(p, kernel_maps, nblk,
                                                             static_cast<int>(items));
  };
  if (varlen) {
    launch(fp8_fwd_kernel<TO, Cfg, true>, maps, smem_set[1]);
  } else {
    launch(fp8_fwd_kernel<TO, Cfg, false>, static_cast<const Fp8Maps&>(maps), smem_set[0]);
  }
  GPUATTN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

bool fp8_usable() {
  const RelaxedCapture relaxed;  // as sm90::usable's probe: a call inside a capture may make it
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, fp8_fwd_kernel<__half, Fp8Config<128, 2>, false>) !=
      cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.binaryVersion == 90;
}

void fwd_fp8(FwdKernel kernel, const FwdParams& p, cudaStream_t stream) {
  const bool three = kernel == FwdKernel::sm90_fp8_192x128;
  const bool d256 = kernel == FwdKernel::sm90_fp8_128x128_d256;
  const bool kernel_takes_dim = kernel == FwdKernel::sm90_fp8_128x128 ||
                                (three && p.head_dim != 256) || (d256 && p.head_dim == 256);
  if ((p.head_dim != 64 && p.head_dim != 128 && p.head_dim != 256) || !kernel_takes_dim ||
      !p.q_quantized() || p.kv_dtype != DType::e4m3 || !strides_fit_tma(p) || p.has_alibi()) {
    throw Error(
        ErrorCode::not_supported,
        std::string("gpuattn: internal error: the FP8 kernel takes E4M3 q/k/v at head dims "
                    "64, 128 and 256 (sm90_fp8_192x128: 64 and 128, sm90_fp8_128x128_d256: 256), "
                    "with strides its tensor maps describe; this call: ") +
            tile_config(kernel).name + " at head dim " + std::to_string(p.head_dim) + ", q " +
            (p.q_quantized() ? "E4M3" : "not quantized") + ", k/v " + to_string(p.kv_dtype) +
            ", strides " + (strides_fit_tma(p) ? "fit" : "do not fit") + " TMA" +
            (p.has_alibi() ? ", with ALiBi (the sm_80 kernel's)" : ""));
  }
  // Cfg's launch with out's type.
  const auto launch = [&](auto cfg) {
    using C = decltype(cfg);
    return p.dtype == DType::bf16 ? launch_fp8<__nv_bfloat16, C>(p, stream)
                                  : launch_fp8<__half, C>(p, stream);
  };
  if (three) {
    return p.head_dim == 128 ? launch(Fp8Config<128, 3>{}) : launch(Fp8Config<64, 3>{});
  }
  if (d256) return launch(Fp8Config<256, 2, true>{});
  if (p.head_dim == 64) return launch(Fp8Config<64, 2>{});
  if (p.head_dim == 256) return launch(Fp8Config<256, 2>{});
  return launch(Fp8Config<128, 2>{});
}

}  // namespace gpuattn::sm90
