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

// The items w = 0 .. items - 1 in the order the CTAs take them. Head by head (batch entry, then
// head), row blocks fastest, so that the CTAs running at one time share the K and V of a few heads
// in L2; causal: a head's row blocks last first (longest first). Masked non-causal calls with
// global tokens put every head's first `heavy` row blocks in front: they hold the global query
// rows, which see every key (at S 128K: 1024 key tiles against ~33 for a window row), and taken
// last they were the run's tail (H200, window (2048, 2048) + 128 globals at S 128K: 0.74 -> 0.67x
// FlexAttention's time). Putting every row block of all heads in that order instead
// (row-block-major) kept all heads' K/V live at once and cost block-sparse calls 10%.
//
// How the kernel walks them: dense non-causal calls on a static schedule (one CTA per SM; CTA c of
// G takes items c, c + G, c + 2 G, ...: equal items), causal and masked calls on a dynamic one
// when there are more items than SMs (CTA c starts with item c, then takes G + an atomic
// counter's value, fresh for each launch: a CTA takes its next item when it is done with the
// last). A static snake order lost 20% on causal (511 -> 413 TFLOP/s); with no counter, a CTA per
// item. Validation keeps ceil(Sq / 64) * Hq * B below 2^30, so every count here fits an int.
struct WorkSchedule {
  int m_blocks;  // row blocks per head (varlen: of the longest sequence)
  int hq;
  int heads;  // hq * batch
  int items;  // m_blocks * heads
  int heavy;  // row blocks of every head taken first (masked, non-causal, global tokens)
  bool reverse;

  GPUATTN_HD WorkSchedule(const FwdParams& p, int block_m, bool masked)
      : m_blocks((p.seqlen_q + block_m - 1) / block_m),
        hq(p.hq),
        heads(p.hq * p.batch),
        items(m_blocks * heads),
        heavy(0),
        reverse(p.causal) {
    if (masked && !p.causal && p.global_tokens > 0) {
      const int g = (p.global_tokens + block_m - 1) / block_m;
      heavy = g < m_blocks ? g : m_blocks;
    }
  }
  // Item w, 0 <= w < items.
  GPUATTN_HD WorkItem item(int w) const {
    const int front = heavy * heads;
    int head, m;
    if (w < front) {
      m = w / heads;
      head = w - m * heads;
    } else {
      const int per = m_blocks - heavy, y = w - front;
      head = y / per;
      const int k = y - head * per;
      m = reverse ? m_blocks - 1 - k : heavy + k;
    }
    return {m, head % hq, head / hq};
  }
};

}  // namespace gpuattn
