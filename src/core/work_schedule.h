// The order in which the sm_90a kernel's CTAs take their work items (src/cuda/fwd_sm90.cuh), kept
// here, host-and-device, so that the order itself is tested on the CPU
// (tests/core/test_work_schedule.cpp). Host-side core: no CUDA headers here.
#pragma once

#include "core/fwd_params.h"
#include "core/mask.h"

namespace gpuattn {

// One work item: query rows [m_block * block_m, + block_m) of head h of batch entry b.
struct WorkItem {
  int m_block, h, b;
};

// The dense causal order's last heads (WorkSchedule::tail_heads): about two waves of items on a
// 132-SM H100 / H200 (kCausalTailItems / row blocks a head), as many heads as kCausalTailKvBytes
// of K and V (16-bit) hold, from kCausalTailMinBlocks row blocks a head.
inline constexpr int kCausalTailItems = 264;
inline constexpr long long kCausalTailKvBytes = 16LL << 20;  // a third of the 50 MB L2
inline constexpr int kCausalTailMinBlocks = 4;               // fewer: not measured

// The items w = 0 .. items - 1 in the order the CTAs take them. Head by head (batch entry, then
// head), row blocks fastest, so that the CTAs running at one time share the K and V of a few heads
// in L2; causal: a head's row blocks last first (longest first). Dense causal calls with
// kCausalTailMinBlocks row blocks or more a head end on their last `tail_heads` heads longest
// first across them (row block m of each, then m - 1, ...): head by head, those heads' longest
// blocks started when the CTAs were running out of work, and the call ended on them (a
// list-scheduling simulation of the sweep's causal shapes gave 2-8% of the time at S512-S8192;
// H200, same-run A/Bs, 5 rounds, twenty-third session: from 16 row blocks (call 5) D128 S2048
// 0.940x, S4096 0.977x, S8192 0.929x, D256 S2048 0.952x, S4096 0.970x, D64 S4096 0.968x, S8192
// 0.939x, B4 H16 S4096 D128 fp16 0.950x / bf16 0.975x; then from 4 (call 6) S512 / S1024 D64
// 0.985x / 0.974x, D128 0.971x / 0.969x, D256 0.958x / 0.962x).
// The whole order so (heads in L2-sized groups, longest first across each: twenty-third session,
// call 4) cost the short calls 3-9% (D64 S512 1.086x, S1024 1.059x, D128 S512 1.036x the time):
// items of one head running together read its K and V once from HBM, items of many heads at the
// same row block each read their own. Masked non-causal calls with global tokens put every head's
// `heavy` row blocks from `heavy_first` in front: they hold the global query rows (at positions
// [0, global_tokens), row i at position i + Sk - Sq: rows [0, G) when Sq = Sk, fewer or none when
// Sk > Sq, from row Sq - Sk on when Sq > Sk), which see every key (at S 128K: 1024 key tiles
// against ~33 for a window row), and taken last they were the run's tail (H200, window
// (2048, 2048) + 128 globals at S 128K: 0.74 -> 0.67x FlexAttention's time). Putting every row
// block of all heads in that order instead (row-block-major) kept all heads' K/V live at once and
// cost block-sparse calls 10%.
//
// How the kernel walks them: dense non-causal calls on a static schedule (one CTA per SM; CTA c of
// G takes items c, c + G, c + 2 G, ..., each round rotated among the CTAs: static_item below),
// causal and masked calls on a dynamic one when there are more items than SMs (CTA c starts with
// item c, then takes G + an atomic counter's value, fresh for each launch: a CTA takes its next
// item when it is done with the last). A static snake order lost 20% on causal (511 -> 413
// TFLOP/s); with no counter, a CTA per item. Validation keeps ceil(Sq / 64) * Hq * B below 2^30, so
// every count here fits an int.
struct WorkSchedule {
  int m_blocks;  // row blocks per head (varlen: of the longest sequence)
  int hq;
  int heads;        // hq * batch
  int items;        // m_blocks * heads
  int heavy;        // row blocks of every head taken first (masked, non-causal, global tokens)
  int heavy_first;  // the first of them; they are row blocks [heavy_first, heavy_first + heavy)
  bool reverse;
  int tail_heads;  // dense causal: the last heads, taken longest first across them (0: none)

  GPUATTN_HD WorkSchedule(const FwdParams& p, int block_m, bool masked)
      : m_blocks((p.seqlen_q + block_m - 1) / block_m),
        hq(p.hq),
        heads(p.hq * p.batch),
        items(m_blocks * heads),
        heavy(0),
        heavy_first(0),
        reverse(p.causal),
        tail_heads(0) {
    if (!masked && p.causal && m_blocks >= kCausalTailMinBlocks) {
      // Each q head's share of its K/V head's bytes (GQA: group_size() q heads share one).
      const long long kv_bytes =
          4LL * (p.seqlen_k > 0 ? p.seqlen_k : 1) * (p.head_dim > 0 ? p.head_dim : 1);
      const long long fit = kCausalTailKvBytes * (p.hkv > 0 ? p.group_size() : 1) / kv_bytes;
      long long n = kCausalTailItems / m_blocks;
      if (n > fit) n = fit;
      if (n > heads) n = heads;
      tail_heads = n > 1 ? static_cast<int>(n) : 0;
    }
    if (masked && !p.causal && p.global_tokens > 0) {
      // Rows [lo, hi) are at global positions. Varlen: each sequence has its own Sk - Sq, and
      // seqlen_q / seqlen_k are only the longest; its rows are taken as Sq = Sk (self-attention).
      const long long d = p.is_varlen() ? 0 : static_cast<long long>(p.seqlen_k) - p.seqlen_q;
      const long long lo = d < 0 ? -d : 0;
      const long long hi = p.global_tokens - d < p.seqlen_q ? p.global_tokens - d : p.seqlen_q;
      if (lo < hi) {
        heavy_first = static_cast<int>(lo / block_m);
        heavy = static_cast<int>((hi - 1) / block_m) - heavy_first + 1;
      }
    }
  }
  // Item w, 0 <= w < items.
  GPUATTN_HD WorkItem item(int w) const {
    const int front = heavy * heads;
    int head, m;
    if (w < front) {
      const int k = w / heads;
      head = w - k * heads;
      m = heavy_first + k;
    } else if (tail_heads > 0 && w >= (heads - tail_heads) * m_blocks) {
      const int y = w - (heads - tail_heads) * m_blocks, k = y / tail_heads;
      m = m_blocks - 1 - k;
      head = heads - tail_heads + (y - k * tail_heads);
    } else {
      const int per = m_blocks - heavy, y = w - front;
      head = y / per;
      const int k = y - head * per;
      m = reverse ? m_blocks - 1 - k : (k < heavy_first ? k : k + heavy);
    }
    return {m, head % hq, head / hq};
  }
};

// The static schedule's w-th item (dense non-causal calls): CTA c of `grid` takes w = c, c + grid,
// c + 2 grid, ..., and round r = w / grid runs items [r grid, r grid + n) (n = grid but in the last
// round) rotated by r among the CTAs. The grid is often a multiple of the row blocks a head has
// (132 SMs and 3, 6, 11 or 22 blocks of 192 rows at S512-S4096), so without the rotation each CTA
// took the same row block of every head, and the CTAs with the last, partly empty block (see the
// kernel's warpgroups past the sequence end) or varlen's short sequences finished early while the
// others set the time. H200, same-run A/B (twenty-third session, call 3, 3 rounds): D64 B32 H32
// S512 0.965x and B16 H32 S1024 0.963x the time with the rotation and those warpgroups' skip,
// 1.007x / 1.005x with the skip alone.
GPUATTN_HD int static_item(int w, int grid, int items) {
  const int r = w / grid;
  const int n = items - r * grid < grid ? items - r * grid : grid;
  return r * grid + (w - r * grid + r) % n;
}

}  // namespace gpuattn
