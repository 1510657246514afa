// Attention forward for sm_80 and newer, FlashAttention-2 style: one CTA owns kBlockM query rows
// of one (batch, head), streams K/V tiles of kBlockN keys through a 2-stage cp.async pipeline, and
// keeps S, P and O in registers (mma.sync m16n8k16, fp32 accumulators, exp2 online softmax).
// Sliding windows, global tokens and block-sparse layouts (core/mask.h) visit only the key tiles
// that hold a visible key.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/fwd_params.h"
#include "core/tile_config.h"
#include "cuda/cuda_check.h"
#include "cuda/fwd_sm80.h"
#include "cuda/ptx.cuh"

namespace gpuattn::sm80 {

template <typename T_, int kHeadDim_, int kNWarps_, int kMTiles_, int kBlockN_, int kMinBlocks_,
          bool kCompensated_, int kOSplit_ = 1>
struct FwdTraits {
  using T = T_;
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr int kNWarps = kNWarps_;
  static constexpr int kThreads = kNWarps * 32;
  // Rows per warp = 16 * kMTiles. Two m-tiles per warp halve the K/V shared-memory reads per MMA
  // (each K/V fragment feeds both); the compensated mode needs the registers for its Kahan terms.
  static constexpr int kMTiles = kMTiles_;
  static constexpr int kBlockM = kNWarps * 16 * kMTiles;
  static constexpr int kBlockN = kBlockN_;
  static constexpr bool kCompensated = kCompensated_;
  // CTAs that share the output columns of a row block: each computes S over the whole head dim
  // and accumulates kDimO = kHeadDim / kOSplit columns of O (and loads only those of V). 2 for
  // the compensated mode at head dim 256, where O and its Kahan terms would take 256 registers.
  static constexpr int kOSplit = kOSplit_;
  static constexpr int kDimO = kHeadDim / kOSplit;

  // Head dim 256 rows are 512 bytes: padding them (see tile_off) would take 5 KB more than the
  // A100's 163 KB, so those tiles are XOR-swizzled instead.
  static constexpr bool kSwizzle = kHeadDim == 256;
  static constexpr int kChunks = kHeadDim / 8;  // 16-byte chunks per Q / K smem row
  static constexpr int kVChunks = kDimO / 8;    // per V smem row
  static constexpr int kNTilesS = kBlockN / 8;  // n8 tiles of S per m-tile
  static constexpr int kNTilesO = kDimO / 8;
  static constexpr int kKStepsQK = kHeadDim / 16;
  static constexpr int kKStepsPV = kBlockN / 16;
  static constexpr int pitch(int chunks) { return chunks * 16 + (kSwizzle ? 0 : 16); }
  static constexpr int kPitch = pitch(kChunks);  // bytes per Q / K smem row, see tile_off
  static constexpr int kQBytes = kBlockM * kPitch;
  static constexpr int kKBytes = kBlockN * kPitch;
  static constexpr int kVBytes = kBlockN * pitch(kVChunks);
  static constexpr int kMaskBytes = 16 + 16 * kNWarps;  // MaskedTiles, a FullTiles per warp
  // Q, 2 stages of K and of V, the mask words.
  static constexpr int kSmemBytes = kQBytes + 2 * (kKBytes + kVBytes) + kMaskBytes;
  static constexpr int kMinBlocks = kMinBlocks_;

  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "head dims 64, 128, 256");
  static_assert(kOSplit == 1 || (kOSplit == 2 && kHeadDim == 256), "O split only at head dim 256");
  static_assert(sizeof(T) == 2, "16-bit inputs");
  static_assert(kBlockN <= 64, "global_key_bits keeps one bit per key of a tile in 64 bits");
  static_assert(kThreads % kChunks == 0 && kThreads % kVChunks == 0 &&
                    kBlockN % (kThreads / kVChunks) == 0 && kBlockN % (kThreads / kChunks) == 0 &&
                    kBlockM % (kThreads / kChunks) == 0,
                "tile loads divide evenly over the threads");
  static_assert(!kSwizzle || ((8 % (kThreads / kChunks) == 0 || (kThreads / kChunks) % 8 == 0) &&
                              (8 % (kThreads / kVChunks) == 0 || (kThreads / kVChunks) % 8 == 0)),
                "load_rows: the swizzle pattern of a thread's rows repeats with its row step");
};

// Byte offset of 16-byte chunk c of row r in a tile of kChunks chunks per row.
// Padded (head dims 64 and 128): rows padded by 16 bytes. The padding puts the 8 row addresses of
// an ldmatrix (same chunk, consecutive rows) on 8 different bank groups, and keeps every address
// an immediate offset from one base register (an XOR swizzle costs a register per distinct
// pattern, and the 128-row kernel has none to spare).
// Swizzled (head dim 256): chunk c of row r is stored at chunk c ^ (r & 7), so 8 consecutive rows
// of one chunk again land on 8 different bank groups, with no padding bytes.
template <int kChunks, bool kSwizzle>
__device__ __forceinline__ std::uint32_t tile_off(int r, int c) {
  if constexpr (kSwizzle) {
    return static_cast<std::uint32_t>(r * kChunks * 16 + ((c ^ (r & 7)) << 4));
  } else {
    return static_cast<std::uint32_t>(r * (kChunks + 1) * 16 + c * 16);
  }
}

// Copies a tile of kRows rows from global into shared memory with cp.async, in the layout of
// tile_off<kTileChunks, Tr::kSwizzle>. Each thread owns one 16-byte chunk column and every
// (kThreads / kTileChunks)-th row starting at its first row: `src`/`dst` are its first row's
// addresses, `c0` the chunk its first row's column is stored at (swizzled layouts), `step` the
// element distance between its rows, and `rows_left` how many rows from its first row on exist
// (the rest are zero-filled, not read). Full tiles, the common case, take the branch without
// per-row predicates.
template <class Tr, int kRows, int kTileChunks>
__device__ __forceinline__ void load_rows(std::uint32_t dst, int c0, const typename Tr::T* src,
                                          int step, int rows_left) {
  constexpr int kRowStep = Tr::kThreads / kTileChunks;
  constexpr int kLoads = kRows / kRowStep;
  // Row i of this thread is its first row + i * kRowStep. Swizzled, the first row r0 < kRowStep
  // and kRowStep divides 8 or is a multiple of it (FwdTraits), so row i's chunk is
  // c0 ^ ((i * kRowStep) & 7): a constant XOR, one offset register per distinct constant.
  auto row_dst = [&](int i) {
    std::uint32_t a = dst + i * kRowStep * Tr::pitch(kTileChunks);
    if constexpr (Tr::kSwizzle) a += ((c0 ^ ((i * kRowStep) & 7)) - c0) * 16;
    return a;
  };
  if (rows_left > (kLoads - 1) * kRowStep) {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      ptx::cp_async_16(row_dst(i), src, true);
      src += step;
    }
  } else {
    const typename Tr::T* base = src;
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const bool valid = i * kRowStep < rows_left;
      ptx::cp_async_16(row_dst(i), valid ? src : base, valid);
      src += step;
    }
  }
}

using ptx::quad_max;
using ptx::quad_sum;

// Kahan step: sum += y with compensation c.
__device__ __forceinline__ void kahan_add(float& sum, float& c, float y) {
  const float yc = y - c;
  const float t = sum + yc;
  c = (t - sum) - yc;
  sum = t;
}

// ---- window and global-token masks (p.mask(); never used for dense and causal calls) ------------

// The key tiles a row block visits under a window / global-token mask: every tile that holds a key
// some row of the block sees. They are the tiles of the global prefix (keys [0, prefix_end): the
// first global tokens, and every key up to the causal limit of a global query row in the block),
// the tiles of the window band, and the tiles that hold a strided global key; the gaps between are
// never loaded. Kept in shared memory: the main loop has no register to spare for them.
struct MaskedTiles {
  int prefix_end;  // tiles [0, prefix_end)
  int band_begin;  // tiles [band_begin, band_end)
  int band_end;
  int end;  // one past the last tile with a visible key (0: none)
};

template <int kBlockN>
__device__ __forceinline__ int tiles_to(int keys) {
  return keys / kBlockN + (keys % kBlockN != 0);
}

// For query rows [i_first, i_last] of a sequence of lq queries and lk keys.
template <int kBlockN>
__device__ __forceinline__ MaskedTiles masked_tiles(const MaskPolicy& mask, int i_first, int i_last,
                                                    int lq, int lk) {
  const KeyRange all = mask.key_range(i_first, i_last, lq, lk);
  MaskPolicy band_only = mask;  // the window band alone, clipped to the causal limit
  band_only.global_tokens = 0;
  band_only.global_stride = 0;
  const KeyRange band = band_only.key_range(i_first, i_last, lq, lk);

  int prefix = min(mask.global_tokens, mask.causal_end(i_last, lq, lk));
  // The last row of the block at a global position sees every key up to its causal limit.
  const int d = lk - lq;
  const int lo = max(i_first + d, 0), hi = i_last + d;  // key positions of the rows
  if (lo <= hi) {
    int gp = min(hi, mask.global_tokens - 1);
    if (mask.global_stride > 0) gp = max(gp, hi / mask.global_stride * mask.global_stride);
    if (gp >= lo) prefix = max(prefix, mask.causal_end(gp - d, lq, lk));
  }

  MaskedTiles mt;
  mt.prefix_end = tiles_to<kBlockN>(max(prefix, 0));
  mt.band_begin = band.empty() ? 0 : band.begin / kBlockN;
  mt.band_end = band.empty() ? 0 : tiles_to<kBlockN>(band.end);
  mt.end = all.empty() ? 0 : tiles_to<kBlockN>(all.end);
  return mt;
}

// The key tiles that query rows [i_first, i_last] (one warp's) see completely: they run without
// per-element mask. Conservative, like MaskPolicy::tile_fully_visible (which it implies): the
// tiles below the causal limit of the first row and the sequence end that lie in the global
// prefix, or in every row's window.
struct FullTiles {
  int prefix_end;  // tiles [0, prefix_end)
  int band_begin;  // tiles [band_begin, band_end)
  int band_end;
  int unused;
};

template <int kBlockN>
__device__ __forceinline__ FullTiles full_tiles(const MaskPolicy& mask, int i_first, int i_last,
                                                int lq, int lk) {
  const long long d = static_cast<long long>(lk) - lq;
  auto clamp_tiles = [&](long long keys) {  // whole tiles below keys, within [0, lk / kBlockN]
    const long long t = keys <= 0 ? 0 : keys / kBlockN;
    return static_cast<int>(t < lk / kBlockN ? t : lk / kBlockN);
  };
  // Tiles whose last key is at most the causal limit of the first row and below lk.
  const int end = mask.causal ? clamp_tiles(i_first + d + 1) : lk / kBlockN;
  FullTiles ft;
  const bool rows_global = i_first + d >= 0 && i_last + d < mask.global_tokens;
  const bool keys_global = mask.global_stride == 1;
  ft.prefix_end = !mask.has_window() || rows_global || keys_global
                      ? end
                      : min(end, clamp_tiles(mask.global_tokens));
  // First tile whose first key is in the last row's window, and past the last tile whose last
  // key is in the first row's window.
  long long first = 0;
  if (mask.window_left >= 0) {
    const long long k = i_last + d - mask.window_left;
    first = k <= 0 ? 0 : (k + kBlockN - 1) / kBlockN;
  }
  ft.band_begin = static_cast<int>(first < end ? first : end);
  ft.band_end =
      mask.window_right < 0 ? end : min(end, clamp_tiles(i_first + d + mask.window_right + 1));
  ft.unused = 0;
  return ft;
}

// The first tile at or after t that the row block visits (>= mt.end: none left).
template <int kBlockN>
__device__ __forceinline__ int next_masked_tile(const MaskedTiles& mt, int t, int global_stride) {
  if (t < mt.prefix_end || (t >= mt.band_begin && t < mt.band_end)) return t;
  int next = t < mt.band_begin ? mt.band_begin : mt.end;
  if (global_stride > 0) {  // the tile of the first strided global key at or after key t * kBlockN
    const int key = t * kBlockN;  // t <= mt.end, so no overflow
    const int rem = key % global_stride;
    const long long g = rem == 0 ? key : static_cast<long long>(key) + (global_stride - rem);
    if (g / kBlockN < next) next = static_cast<int>(g / kBlockN);
  }
  return next;
}

// The bits [0, n) of a 64-bit mask (n may lie outside [0, 64]).
__device__ __forceinline__ std::uint64_t bits_below(int n) {
  return n <= 0 ? 0ull : (n >= 64 ? ~0ull : (1ull << n) - 1);
}

// Bit c set: key n0 + c (c < 64) is a global key.
__device__ __forceinline__ std::uint64_t global_key_bits(const MaskPolicy& mask, int n0) {
  std::uint64_t bits = bits_below(mask.global_tokens - n0);
  if (mask.global_stride > 0) {
    const int rem = n0 % mask.global_stride;
    const int step = min(mask.global_stride, 64);  // a stride >= 64 has at most one key here
    for (int c = rem == 0 ? 0 : mask.global_stride - rem; c < 64; c += step) bits |= 1ull << c;
  }
  return bits;
}

// The keys [c0, c0 + 64) that the query row at key position pos sees, as bits (bit c: key c0 + c):
// the window keys [lo, hi) below the causal limit ce (all of [0, ce) for a global query row), and
// the global keys below ce. `gkeys`: global_key_bits of the tile, shifted to start at c0.
__device__ __forceinline__ std::uint64_t visible_bits(const MaskPolicy& mask, int pos, int lk,
                                                      int c0, std::uint64_t gkeys) {
  const int ce = mask.causal ? min(lk, max(pos + 1, 0)) : lk;
  int lo = 0, hi = ce;
  if (pos < 0 || !mask.is_global_key(pos)) {
    if (mask.window_left >= 0 && mask.window_left < pos) lo = pos - mask.window_left;
    if (mask.window_right >= 0 && mask.window_right < lk - pos) {
      hi = min(hi, max(pos + mask.window_right + 1, 0));
    }
  }
  return (bits_below(hi - c0) & ~bits_below(lo - c0)) | (gkeys & bits_below(ce - c0));
}

// ---- block-sparse layouts (p.mask(h) with a layout; never used for the other calls) -------------

// Under a layout any key tile may be on or off, so the tiles a row block visits are no few ranges
// as in MaskedTiles. Each CTA keeps bitmaps of a window of kTiles consecutive key tiles in shared
// memory instead, filled by all its threads with the exact MaskPolicy tests and refilled when the
// walk leaves the window (every 64 Ki keys; two extra barriers). Bit t - (window start):
//   visit    some row of the CTA sees some key of tile t: the tile is loaded and computed;
//   any[w]   some row of warp w sees one: a warp without skips the tile (its P would be all 0);
//   full[w]  every row of warp w sees every key of the tile: no per-element mask.
template <int kNWarps>
struct BlockTileBits {
  static constexpr int kWords = 32;
  static constexpr int kTiles = 32 * kWords;
  std::uint32_t visit[kWords];
  std::uint32_t any[kNWarps][kWords];
  std::uint32_t full[kNWarps][kWords];
  int win0;  // the window: tiles [win0, win0 + kTiles)

  // Bit `tile` of a word array (tile in the window).
  __device__ __forceinline__ bool bit(const std::uint32_t* words, int tile) const {
    const int i = tile - win0;
    return (words[i >> 5] >> (i & 31)) & 1u;
  }
};

// Moves the window to tiles [win0, win0 + kTiles) and fills its bitmaps up to tile_end for the
// query rows [m0, lq) of the CTA; every thread calls it. Lane l of a warp tests tile 32 * word + l
// of each word the warp takes, and the ballots are the words. Words wholly past tile_end are left
// as they were: the walk never reads them. Not inlined: inside the main loop, where O lives in
// registers, the inlined tests spilled 700-880 bytes in the 128x64 kernel; as a call, 48 on sm_80
// and none on sm_90a (bench/results/sm80-kernel-notes.md).
template <class Tr>
__device__ __noinline__ void fill_block_bits(BlockTileBits<Tr::kNWarps>& bits,
                                             const MaskPolicy& mask, int win0, int tile_end, int m0,
                                             int lq, int lk, int warp, int lane) {
  constexpr int kRows = 16 * Tr::kMTiles, kBlockN = Tr::kBlockN;
  if (warp == 0 && lane == 0) bits.win0 = win0;
  for (int word = warp; word < BlockTileBits<Tr::kNWarps>::kWords; word += Tr::kNWarps) {
    const int first = win0 + word * 32;
    if (first >= tile_end) break;  // warp-uniform
    const int tile = first + lane;
    std::uint32_t any = 0, full = 0;  // bit w: warp w
    if (tile < tile_end) {
      const int j0 = tile * kBlockN;  // < lk: every tile before tile_end holds a key below lk
      const bool whole = lk - j0 >= kBlockN;
      const int j1 = whole ? j0 + kBlockN - 1 : lk - 1;
#pragma unroll
      for (int w = 0; w < Tr::kNWarps; ++w) {
        const int i0 = m0 + w * kRows;
        const int i1 = min(i0 + kRows, lq) - 1;
        if (i0 <= i1 && mask.tile_any_visible(i0, i1, j0, j1, lq, lk)) {
          any |= 1u << w;
          if (whole && mask.tile_fully_visible(i0, i1, j0, j1, lq, lk)) full |= 1u << w;
        }
      }
    }
    const std::uint32_t visit = __ballot_sync(0xffffffffu, any != 0);
    if (lane == 0) bits.visit[word] = visit;
#pragma unroll
    for (int w = 0; w < Tr::kNWarps; ++w) {
      const std::uint32_t a = __ballot_sync(0xffffffffu, (any >> w) & 1u);
      const std::uint32_t f = __ballot_sync(0xffffffffu, (full >> w) & 1u);
      if (lane == 0) {
        bits.any[w][word] = a;
        bits.full[w][word] = f;
      }
    }
  }
}

// The first tile at or after `from` that some row of the CTA sees (tile_end: none), moving the
// window on (two barriers around a refill) when the walk leaves it. Every thread calls it alike.
template <class Tr>
__device__ __forceinline__ int next_block_tile(BlockTileBits<Tr::kNWarps>& bits,
                                               const MaskPolicy& mask, int from, int tile_end,
                                               int m0, int lq, int lk, int warp, int lane) {
  for (;;) {
    const int win0 = bits.win0;
    const int limit = min(win0 + BlockTileBits<Tr::kNWarps>::kTiles, tile_end);
    for (int t = from; t < limit;) {
      const int i = t - win0;
      const std::uint32_t word = bits.visit[i >> 5] >> (i & 31);
      if (word != 0) return t + __ffs(static_cast<int>(word)) - 1;
      t += 32 - (i & 31);
    }
    if (limit >= tile_end) return tile_end;
    __syncthreads();  // every warp is done reading the window
    fill_block_bits<Tr>(bits, mask, limit, tile_end, m0, lq, lk, warp, lane);
    __syncthreads();
    from = limit;
  }
}

// Bit c (c < 64) set: key n0 + c is below lk and lies in a key block that is on for query row
// block rb. Key blocks are multiples of 16 keys, so each 16-key quarter of the tile lies in one.
template <int kBlockN>
__device__ __forceinline__ std::uint64_t block_key_bits(const MaskPolicy& mask, int rb, int n0,
                                                        int lk) {
  static_assert(kBlockN == 64, "four 16-key quarters per 64-bit word");
  std::uint64_t bits = 0;
#pragma unroll
  for (int quarter = 0; quarter < 4; ++quarter) {
    const int key = 16 * quarter;  // from n0
    if (key < lk - n0 && mask.block_on(rb, (n0 + key) / mask.block_k)) {
      bits |= 0xffffull << key;
    }
  }
  return bits;
}

// Which mask code a kernel instantiation carries: none (dense and causal calls), position
// (windows and global tokens: MaskedTiles / FullTiles), blocks (a block-sparse layout, alone or
// with any other mask: BlockTileBits).
enum class MaskMode { none, position, blocks };

// Slack of the stale running max in standard mode, in log2 units (P <= 2^8 is far from fp16/bf16
// overflow, and fp32 accumulators lose nothing from the scale).
constexpr float kRescaleSlack = 8.f;

template <class Tr, MaskMode kMode>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocks)
    fwd_kernel(const __grid_constant__ FwdParams p) {
  using T = typename Tr::T;
  constexpr int kBlockM = Tr::kBlockM, kBlockN = Tr::kBlockN, kMT = Tr::kMTiles;
  constexpr int kNS = Tr::kNTilesS, kNO = Tr::kNTilesO, kChunks = Tr::kChunks;
  constexpr int kVChunks = Tr::kVChunks;
  constexpr bool kSwz = Tr::kSwizzle;

  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;  // mma fragment row group / column pair

  // The row block, and the slice of O's columns with kOSplit > 1 (the CTAs of one row block are
  // neighbours in x). Causal: the last row blocks have the most keys; launch them first.
  int split = 0, m_block;
  if constexpr (Tr::kOSplit == 1) {
    m_block = p.causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  } else {
    split = static_cast<int>(blockIdx.x % Tr::kOSplit);
    const int m_idx = static_cast<int>(blockIdx.x / Tr::kOSplit);
    m_block = p.causal ? static_cast<int>(gridDim.x / Tr::kOSplit) - 1 - m_idx : m_idx;
  }
  const int h = blockIdx.y, b = blockIdx.z;
  const int lq = p.len_q(b), lk = p.keys_used(b);  // (seqused_k: this kernel reads it)
  const int m0 = m_block * kBlockM;
  if (m0 >= lq) return;
  const int hk = p.kv_head(h);

  // Key tiles this row block can see: all of them, or up to the diagonal of its last row; under a
  // window / global-token mask only the tiles of MaskedTiles, visited from t on by
  // next_masked_tile; under a block layout the tiles BlockTileBits marks. Compile-time, so that
  // dense and causal calls run a kernel without any of the mask code.
  constexpr bool has_mask = kMode != MaskMode::none;
  constexpr bool has_blocks = kMode == MaskMode::blocks;
  int n_end = lk;
  if (p.causal) n_end = max(0, min(lk, m0 + kBlockM + lk - lq));
  int n_tiles = (n_end + kBlockN - 1) / kBlockN;
  int t = 0;  // the tile computed next
  auto* const masked =
      reinterpret_cast<MaskedTiles*>(smem + Tr::kQBytes + 2 * (Tr::kKBytes + Tr::kVBytes));
  auto* const full = reinterpret_cast<FullTiles*>(masked + 1);  // one per warp
  if (has_mask && !has_blocks) {
    const MaskedTiles mt = masked_tiles<kBlockN>(p.mask(), m0, min(m0 + kBlockM, lq) - 1, lq, lk);
    // Both are read after the first barrier of the main loop.
    if (tid == 0) *masked = mt;
    if (lane == 0) {
      const int w0 = m0 + warp * 16 * kMT;
      full[warp] = full_tiles<kBlockN>(p.mask(), w0, w0 + 16 * kMT - 1, lq, lk);
    }
    n_tiles = mt.end;
    t = next_masked_tile<kBlockN>(mt, 0, p.global_stride);
  }

  const T* q = static_cast<const T*>(p.q) + p.q_offset(b, m0, h);
  const T* k = static_cast<const T*>(p.k) + p.k_offset_unpaged(b, 0, hk);
  const T* v = static_cast<const T*>(p.v) + p.v_offset_unpaged(b, 0, hk) + split * Tr::kDimO;
  const std::uint32_t sq = ptx::smem_addr(smem);
  const std::uint32_t sk0 = sq + Tr::kQBytes;
  const std::uint32_t sv0 = sk0 + 2 * Tr::kKBytes;

  // This thread's chunk column and first row for every Q / K tile load, and for V (the same
  // unless V rows hold fewer columns, kOSplit > 1); c0: where the column is stored in that row.
  constexpr int kRowStep = Tr::kThreads / kChunks, kVRowStep = Tr::kThreads / kVChunks;
  const int ld_row = tid / kChunks, ld_col = tid % kChunks;
  const std::uint32_t ld_off = tile_off<kChunks, kSwz>(ld_row, ld_col);
  const int ld_c0 = ld_col ^ (ld_row & 7);
  const int vld_row = tid / kVChunks, vld_col = tid % kVChunks;
  const std::uint32_t vld_off = tile_off<kVChunks, kSwz>(vld_row, vld_col);
  const int vld_c0 = vld_col ^ (vld_row & 7);
  const T* k_ld = k + ld_row * p.k_row_stride + ld_col * 8;
  const T* v_ld = v + vld_row * p.v_row_stride + vld_col * 8;
  // 32-bit steps: make_fwd_params bounds row strides so that kBlockN rows fit an int.
  const int k_step = kRowStep * static_cast<int>(p.k_row_stride);
  const int v_step = kVRowStep * static_cast<int>(p.v_row_stride);
  const int k_tile_step = kBlockN * static_cast<int>(p.k_row_stride);
  const int v_tile_step = kBlockN * static_cast<int>(p.v_row_stride);

  load_rows<Tr, kBlockM, kChunks>(sq + ld_off, ld_c0, q + ld_row * p.q_row_stride + ld_col * 8,
                                  kRowStep * static_cast<int>(p.q_row_stride), lq - m0 - ld_row);

  // Block layout: the tile bitmaps, after the MaskedTiles / FullTiles, and this head's mask (one
  // copy for the whole loop: the calls of fill_block_bits take it by address).
  auto* const block_bits = reinterpret_cast<BlockTileBits<Tr::kNWarps>*>(
      smem + Tr::kQBytes + 2 * (Tr::kKBytes + Tr::kVBytes) + Tr::kMaskBytes);
  const MaskPolicy block_mask = has_blocks ? p.mask(h) : MaskPolicy{};
  if constexpr (has_blocks) {
    // Candidates: the tiles of the position mask's key range (O(1), the layout left out).
    const KeyRange keys = p.mask().key_range(m0, min(m0 + kBlockM, lq) - 1, lq, lk);
    const int first = keys.empty() ? 0 : keys.begin / kBlockN;
    n_tiles = keys.empty() ? 0 : tiles_to<kBlockN>(keys.end);
    fill_block_bits<Tr>(*block_bits, block_mask, first, n_tiles, m0, lq, lk, warp, lane);
    __syncthreads();
    t = next_block_tile<Tr>(*block_bits, block_mask, first, n_tiles, m0, lq, lk, warp, lane);
  }

  if (t < n_tiles) {
    if (t > 0) {
      k_ld += static_cast<std::int64_t>(t) * k_tile_step;
      v_ld += static_cast<std::int64_t>(t) * v_tile_step;
    }
    load_rows<Tr, kBlockN, kChunks>(sk0 + ld_off, ld_c0, k_ld, k_step, lk - t * kBlockN - ld_row);
    load_rows<Tr, kBlockN, kVChunks>(sv0 + vld_off, vld_c0, v_ld, v_step,
                                     lk - t * kBlockN - vld_row);
  }
  ptx::cp_async_commit();

  float o[kMT][kNO][4];
  float oc[Tr::kCompensated ? kMT : 1][Tr::kCompensated ? kNO : 1][4];  // Kahan terms of o
  float row_max[kMT][2], row_sum[kMT][2], sum_c[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int n = 0; n < kNO; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[mt][n][e] = 0.f;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      row_max[mt][r] = -INFINITY;
      row_sum[mt][r] = 0.f;
      sum_c[mt][r] = 0.f;
    }
  }
  if constexpr (Tr::kCompensated) {
#pragma unroll
    for (int n = 0; n < kNO; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) oc[0][n][e] = 0.f;
  }

  const int warp_row0 = warp * 16 * kMT;  // first row of this warp inside the block
  const int diag = lk - lq;               // causal: row i sees keys j <= i + diag
  // ALiBi's slope in the scores' raw units (0: none; read by the masked instantiations only).
  const float alibi = has_mask && p.has_alibi() ? p.alibi_slope(b, h) * p.alibi_raw : 0.f;

  for (int stage = 0; t < n_tiles; stage ^= 1) {
    // One barrier per tile: once every warp is here, tile t has landed for all of them and all
    // are done reading the previous tile, so its stage can take the next tile (t + 1, or the next
    // visible one under a mask), which then loads while tile t is computed.
    ptx::cp_async_wait<0>();
    __syncthreads();
    // Block layout: whether this warp's rows see some / every key of tile t, read before
    // next_block_tile may move the window on.
    bool warp_any = true, warp_full = false;
    if constexpr (has_blocks) {
      warp_any = block_bits->bit(block_bits->any[warp], t);
      warp_full = block_bits->bit(block_bits->full[warp], t);
    }
    const int t_next = has_blocks ? next_block_tile<Tr>(*block_bits, block_mask, t + 1, n_tiles, m0,
                                                        lq, lk, warp, lane)
                       : has_mask ? next_masked_tile<kBlockN>(*masked, t + 1, p.global_stride)
                                  : t + 1;
    if (t_next < n_tiles) {
      if (t_next == t + 1) {
        k_ld += k_tile_step;
        v_ld += v_tile_step;
      } else {  // a gap skipped: possibly more rows than an int step holds
        k_ld += static_cast<std::int64_t>(t_next - t) * k_tile_step;
        v_ld += static_cast<std::int64_t>(t_next - t) * v_tile_step;
      }
      const int rows_left = lk - t_next * kBlockN - ld_row;
      const int v_rows_left = lk - t_next * kBlockN - vld_row;
      load_rows<Tr, kBlockN, kChunks>(sk0 + (stage ^ 1) * Tr::kKBytes + ld_off, ld_c0, k_ld, k_step,
                                      rows_left);
      load_rows<Tr, kBlockN, kVChunks>(sv0 + (stage ^ 1) * Tr::kVBytes + vld_off, vld_c0, v_ld,
                                       v_step, v_rows_left);
      ptx::cp_async_commit();
    }

    if constexpr (has_blocks) {
      if (!warp_any) {  // warp-uniform: no row of this warp sees a key of tile t
        t = t_next;
        continue;
      }
    }

    const std::uint32_t sk = sk0 + stage * Tr::kKBytes;
    const std::uint32_t sv = sv0 + stage * Tr::kVBytes;

    // S = Q K^T for this warp's rows and the tile's kBlockN keys.
    float s[kMT][kNS][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int n = 0; n < kNS; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mt][n][e] = 0.f;
#pragma unroll
    for (int ks = 0; ks < Tr::kKStepsQK; ++ks) {
      std::uint32_t a[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        ptx::ldmatrix_x4(a[mt], sq + tile_off<kChunks, kSwz>(warp_row0 + mt * 16 + (lane & 15),
                                                             ks * 2 + (lane >> 4)));
      }
#pragma unroll
      for (int np = 0; np < kNS / 2; ++np) {
        std::uint32_t bk[4];
        ptx::ldmatrix_x4(bk, sk + tile_off<kChunks, kSwz>(np * 16 + (lane & 7) + ((lane >> 4) << 3),
                                                          ks * 2 + ((lane >> 3) & 1)));
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          ptx::mma_16816<T>(s[mt][2 * np], a[mt], bk[0], bk[1]);
          ptx::mma_16816<T>(s[mt][2 * np + 1], a[mt], bk[2], bk[3]);
        }
      }
    }

    // Soft-capping (AttentionArgs::softcap): each score becomes tanh(q.k * scale / softcap), which
    // scale_log2 = softcap * log2(e) then carries into the exp2 domain; before the mask, so that a
    // masked score stays -inf. A warp-uniform branch: other calls skip it.
    if (p.has_softcap()) {
      const float k = ptx::tanh_log2_factor(p.softcap_pre);
      if (!p.exact_tanh()) {  // else the exact tanh (ptx.cuh)
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int n = 0; n < kNS; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[mt][n][e] = ptx::tanh_of_log2<false>(s[mt][n][e] * k);
      } else {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int n = 0; n < kNS; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              s[mt][n][e] = ptx::tanh_of_log2_exact<false>(s[mt][n][e] * k);
            }
      }
    }

    // ALiBi (masked instantiations only: the dispatch sends every ALiBi call here): -slope x
    // |row position - key| on every score, in the raw units scale_log2 multiplies later; before
    // the mask, like the soft-cap. A warp-uniform branch.
    if constexpr (has_mask) {
      if (alibi != 0.f) {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            // The row's key position less this thread's first column; column n * 8 + e is
            // n * 8 + e further on (exact below 2^24 keys apart; beyond, rounded to float's
            // spacing, up to 32 keys near 2^30: a relative error of 2^-24 in the bias).
            const float d0 = static_cast<float>(m0 + warp_row0 + mt * 16 + g + 8 * r + diag -
                                                (t * kBlockN + 2 * t4));
#pragma unroll
            for (int n = 0; n < kNS; ++n)
#pragma unroll
              for (int e = 0; e < 2; ++e) {
                const float dist = fabsf(d0 - static_cast<float>(n * 8 + e));
                s[mt][n][2 * r + e] = fmaf(-alibi, dist, s[mt][n][2 * r + e]);
              }
          }
      }
    }

    // Mask only the tiles that need it: the sequence end and the causal diagonal, or under a
    // window / global-token mask or a block layout the tiles not fully visible to this warp's rows.
    const int n0 = t * kBlockN;
    bool need_mask;
    if (has_blocks) {
      need_mask = !warp_full;
    } else if (has_mask) {
      const FullTiles ft = full[warp];
      need_mask = !(t < ft.prefix_end || (t >= ft.band_begin && t < ft.band_end));
    } else {
      need_mask = (n0 + kBlockN > lk) || (p.causal && n0 + kBlockN - 1 > m0 + diag);
    }
    if (need_mask && !has_mask) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          // Columns of this row at or past `limit` are invisible; measured from this thread's
          // first column so that the inner test is one compare against a constant.
          const int row = m0 + warp_row0 + mt * 16 + g + 8 * r;
          const int limit = (p.causal ? min(lk, row + diag + 1) : lk) - (n0 + 2 * t4);
#pragma unroll
          for (int n = 0; n < kNS; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e)
              if (n * 8 + e >= limit) s[mt][n][2 * r + e] = -INFINITY;
        }
    } else if (need_mask) {
      // Per row, a bit per column of this thread (visible_bits, ANDed with the block layout), then
      // one bit test per element.
      const MaskPolicy mask = p.mask();
      const int c0 = n0 + 2 * t4;
      const std::uint64_t gkeys = global_key_bits(mask, n0) >> (2 * t4);
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        // The 16 rows of an m-tile lie in one row block (block_q is a multiple of 16).
        std::uint64_t blocks = ~0ull;
        if constexpr (has_blocks) {
          const int i0 = m0 + warp_row0 + mt * 16;
          blocks =
              i0 < lq ? block_key_bits<kBlockN>(block_mask, i0 / p.block_q, n0, lk) >> (2 * t4) : 0;
        }
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int pos = m0 + warp_row0 + mt * 16 + g + 8 * r + diag;  // key position of the row
          const std::uint64_t visible = visible_bits(mask, pos, lk, c0, gkeys) & blocks;
#pragma unroll
          for (int n = 0; n < kNS; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e)
              if (((visible >> (n * 8 + e)) & 1u) == 0) s[mt][n][2 * r + e] = -INFINITY;
        }
      }
    }

    // Online softmax in the log2 domain (scale > 0 is validated, so max(s) * scale is the max).
    float alpha[kMT][2];
    bool any_rescale = false;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = -INFINITY;
#pragma unroll
        for (int n = 0; n < kNS; ++n) mx = fmaxf(mx, fmaxf(s[mt][n][2 * r], s[mt][n][2 * r + 1]));
        mx = quad_max(mx) * p.scale_log2;
        // Standard mode keeps a stale max until the true one exceeds it by more than
        // kRescaleSlack (log2 units): P then stays <= 2^kRescaleSlack, exact after the final
        // division, and the O rescale (a multiply per accumulator) is skipped in most tiles.
        const bool grow =
            Tr::kCompensated ? mx > row_max[mt][r] : mx > row_max[mt][r] + kRescaleSlack;
        const float m_new = grow ? mx : row_max[mt][r];
        const float m_use = m_new == -INFINITY ? 0.f : m_new;  // a row with nothing visible yet
        alpha[mt][r] = ptx::fast_exp2(row_max[mt][r] - m_use);
        any_rescale |= grow;
        row_max[mt][r] = m_new;
        float sum = 0.f;
#pragma unroll
        for (int n = 0; n < kNS; ++n) {
#pragma unroll
          for (int e = 2 * r; e < 2 * r + 2; ++e) {
            s[mt][n][e] = ptx::fast_exp2(fmaf(s[mt][n][e], p.scale_log2, -m_use));
            sum += s[mt][n][e];
          }
        }
        if constexpr (Tr::kCompensated) {
          row_sum[mt][r] *= alpha[mt][r];
          sum_c[mt][r] *= alpha[mt][r];
          kahan_add(row_sum[mt][r], sum_c[mt][r], sum);
        } else {
          row_sum[mt][r] = row_sum[mt][r] * alpha[mt][r] + sum;
        }
      }
    }
    if (__any_sync(0xffffffffu, any_rescale)) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int n = 0; n < kNO; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            o[mt][n][e] *= alpha[mt][e >> 1];
            if constexpr (Tr::kCompensated) oc[mt][n][e] *= alpha[mt][e >> 1];
          }
    }

    // P as the A operand: the accumulator layout of two n8 tiles is the A layout of one k16 step.
    auto p_frag = [&](std::uint32_t(&a)[4], int kk, int mt) {
      a[0] = ptx::pack2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
      a[1] = ptx::pack2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
      a[2] = ptx::pack2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
      a[3] = ptx::pack2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
    };

    // O += P V.
    if constexpr (!Tr::kCompensated) {
#pragma unroll
      for (int kk = 0; kk < Tr::kKStepsPV; ++kk) {
        std::uint32_t pa[kMT][4];
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) p_frag(pa[mt], kk, mt);
#pragma unroll
        for (int dp = 0; dp < kNO / 2; ++dp) {
          std::uint32_t bv[4];
          ptx::ldmatrix_x4_trans(
              bv, sv + tile_off<kVChunks, kSwz>(kk * 16 + (lane & 15), dp * 2 + (lane >> 4)));
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            ptx::mma_16816<T>(o[mt][2 * dp], pa[mt], bv[0], bv[1]);
            ptx::mma_16816<T>(o[mt][2 * dp + 1], pa[mt], bv[2], bv[3]);
          }
        }
      }
    } else {
      // Compensated: this tile's P V goes into a fresh accumulator, then Kahan-adds into O.
      std::uint32_t pa[Tr::kKStepsPV][kMT][4];
#pragma unroll
      for (int kk = 0; kk < Tr::kKStepsPV; ++kk)
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) p_frag(pa[kk][mt], kk, mt);
#pragma unroll
      for (int dp = 0; dp < kNO / 2; ++dp) {
        float tacc[kMT][2][4];
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int x = 0; x < 2; ++x)
#pragma unroll
            for (int e = 0; e < 4; ++e) tacc[mt][x][e] = 0.f;
#pragma unroll
        for (int kk = 0; kk < Tr::kKStepsPV; ++kk) {
          std::uint32_t bv[4];
          ptx::ldmatrix_x4_trans(
              bv, sv + tile_off<kVChunks, kSwz>(kk * 16 + (lane & 15), dp * 2 + (lane >> 4)));
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            ptx::mma_16816<T>(tacc[mt][0], pa[kk][mt], bv[0], bv[1]);
            ptx::mma_16816<T>(tacc[mt][1], pa[kk][mt], bv[2], bv[3]);
          }
        }
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int x = 0; x < 2; ++x)
#pragma unroll
            for (int e = 0; e < 4; ++e)
              kahan_add(o[mt][2 * dp + x][e], oc[mt][2 * dp + x][e], tacc[mt][x][e]);
      }
    }
    t = t_next;
  }

  // Epilogue: normalize, store O (rows past the sequence end are skipped) and the LSE.
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float l = quad_sum(row_sum[mt][r]);
      const float inv = l > 0.f ? 1.f / l : 0.f;
      const int row = m0 + warp_row0 + mt * 16 + g + 8 * r;
      if (row < lq) {
        T* out = static_cast<T*>(p.o) + p.o_offset(b, row, h) + split * Tr::kDimO + 2 * t4;
#pragma unroll
        for (int n = 0; n < kNO; ++n) {
          *reinterpret_cast<std::uint32_t*>(out + n * 8) =
              ptx::pack2<T>(o[mt][n][2 * r] * inv, o[mt][n][2 * r + 1] * inv);
        }
        // The CTAs of an O split compute the same row statistics: one writes them.
        if (p.lse != nullptr && t4 == 0 && split == 0) {
          p.lse[p.lse_offset(b, row, h)] =
              l > 0.f ? (row_max[mt][r] + log2f(l)) * 0.69314718055994531f : -INFINITY;
        }
      }
    }
  }
}

template <class Tr, MaskMode kMode>
void launch_kernel(const FwdParams& p, cudaStream_t stream) {
  // The block-layout kernel keeps its tile bitmaps after the other shared memory.
  constexpr int kSmem =
      Tr::kSmemBytes +
      (kMode == MaskMode::blocks ? static_cast<int>(sizeof(BlockTileBits<Tr::kNWarps>)) : 0);
  // The opt-in maximum of the A100 (163 KB; the H100's is 227 KB): head dim 256 takes 161 KB.
  static_assert(kSmem <= 163 * 1024, "shared memory per block");
  if (kSmem > max_smem_per_block()) {  // e.g. sm_86/sm_89 (99 KB): a clear error, not a launch one
    throw Error(ErrorCode::not_supported,
                "gpuattn::attention_forward: the sm_80 kernel's " + std::to_string(Tr::kBlockM) +
                    "x" + std::to_string(Tr::kBlockN) + " configuration at head dim " +
                    std::to_string(Tr::kHeadDim) + " needs " + std::to_string(kSmem) +
                    " bytes of shared memory per block; this GPU allows " +
                    std::to_string(max_smem_per_block()));
  }
  static PerDeviceFlags configured{};
  set_max_dynamic_smem(reinterpret_cast<const void*>(fwd_kernel<Tr, kMode>), kSmem, configured);
  const dim3 grid((p.seqlen_q + Tr::kBlockM - 1) / Tr::kBlockM * Tr::kOSplit, p.hq, p.batch);
  fwd_kernel<Tr, kMode><<<grid, Tr::kThreads, kSmem, stream>>>(p);
  GPUATTN_CUDA_CHECK(cudaGetLastError());
}

template <class Tr>
void launch_fwd(const FwdParams& p, cudaStream_t stream) {
  if (p.has_block_layout()) {
    launch_kernel<Tr, MaskMode::blocks>(p, stream);
  } else if (p.dense_or_causal() && !p.has_alibi()) {  // ALiBi: the masked one's bias branch
    launch_kernel<Tr, MaskMode::none>(p, stream);
  } else {
    launch_kernel<Tr, MaskMode::position>(p, stream);
  }
}

// The tile configurations of one (dtype, head dim), one per sm80_* entry of the table in
// core/tile_config.h (which holds the why of each and the rule that picks one).
template <typename T, int D>
struct FwdConfigs {
  using Large = FwdTraits<T, D, 4, 2, 64, 2, false>;       // sm80_128x64: 2 CTAs per SM
  using Small = FwdTraits<T, D, 4, 1, 64, 2, false>;       // sm80_64x64: 2 CTAs per SM
  using Compensated = FwdTraits<T, D, 4, 1, 64, 1, true>;  // sm80_64x64_compensated: 1 per SM
};

// Head dim 256: O alone is 128 fp32 registers per thread at 16 rows per warp, so there is no
// 2-m-tile configuration (Large is never instantiated), and the 161 KB of shared memory leave one
// CTA per SM. The compensated mode splits O's columns over 2 CTAs (O 64 + Kahan terms 64
// registers each, S still over all 256 dims: 1.5x the FLOPs of one CTA, twice the CTAs).
template <typename T>
struct FwdConfigs<T, 256> {
  using Large = void;
  using Small = FwdTraits<T, 256, 4, 1, 64, 1, false>;          // sm80_64x64
  using Compensated = FwdTraits<T, 256, 4, 1, 64, 1, true, 2>;  // sm80_64x64_compensated
};

template <class Tr>
constexpr bool matches_table(FwdKernel kernel) {
  if constexpr (std::is_void_v<Tr>) {
    return true;  // no such configuration at this head dim
  } else {
    const TileConfig& c = kFwdTileConfigs[static_cast<int>(kernel)];
    return c.block_m == Tr::kBlockM && c.block_n == Tr::kBlockN && c.warps == Tr::kNWarps &&
           c.stages == 2;  // the cp.async K/V ring of fwd_kernel
  }
}

// The shared memory launch_kernel asks for, with and without a block layout, is what the selection
// rule compares with the device's limit (sm80_smem_bytes, core/tile_config.h).
template <class Tr, int D>
constexpr bool smem_matches_table(FwdKernel kernel) {
  if constexpr (std::is_void_v<Tr>) {
    return sm80_smem_bytes(kernel, D, false) == 0;
  } else {
    return sm80_smem_bytes(kernel, D, false) == Tr::kSmemBytes &&
           sm80_smem_bytes(kernel, D, true) ==
               Tr::kSmemBytes + static_cast<int>(sizeof(BlockTileBits<Tr::kNWarps>));
  }
}

// Launches the configuration `kernel` chose by select_fwd_config().
template <typename T, int D>
void run_fwd(FwdKernel kernel, const FwdParams& p, cudaStream_t stream) {
  using C = FwdConfigs<T, D>;
  static_assert(matches_table<typename C::Large>(FwdKernel::sm80_128x64) &&
                    matches_table<typename C::Small>(FwdKernel::sm80_64x64) &&
                    matches_table<typename C::Compensated>(FwdKernel::sm80_64x64_compensated),
                "FwdConfigs and the tile configuration table agree");
  static_assert(
      smem_matches_table<typename C::Large, D>(FwdKernel::sm80_128x64) &&
          smem_matches_table<typename C::Small, D>(FwdKernel::sm80_64x64) &&
          smem_matches_table<typename C::Compensated, D>(FwdKernel::sm80_64x64_compensated),
      "sm80_smem_bytes (core/tile_config.h) is the shared memory launch_kernel asks for");
  const bool compensated = p.precision == Precision::compensated;
  if (compensated == (kernel == FwdKernel::sm80_64x64_compensated)) {
    switch (kernel) {
      case FwdKernel::sm80_128x64:
        if constexpr (!std::is_void_v<typename C::Large>) {
          return launch_fwd<typename C::Large>(p, stream);
        }
        break;  // head dim 256: not this kernel's
      case FwdKernel::sm80_64x64: return launch_fwd<typename C::Small>(p, stream);
      case FwdKernel::sm80_64x64_compensated: return launch_fwd<typename C::Compensated>(p, stream);
      default: break;  // an sm90_* configuration: not this kernel's
    }
  }
  throw Error(ErrorCode::not_supported, std::string("gpuattn: the sm_80 kernel has no ") +
                                            tile_config(kernel).name + " configuration for " +
                                            to_string(p.precision) + " precision at head dim " +
                                            std::to_string(D));
}

}  // namespace gpuattn::sm80
