// The sm_90a kernel's work-item order (core/work_schedule.h): every item exactly once, head by
// head with row blocks fastest, causal longest first (dense: the last heads longest first across
// them), and a masked call's global row blocks in front.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/work_schedule.h"

namespace gpuattn {
namespace {

FwdParams params(int batch, int hq, int seqlen_q, bool causal, int global_tokens = 0,
                 int head_dim = 128, int hkv = 0) {
  FwdParams p;
  p.batch = batch;
  p.hq = hq;
  p.hkv = hkv > 0 ? hkv : hq;
  p.head_dim = head_dim;
  p.seqlen_q = seqlen_q;
  p.seqlen_k = seqlen_q;
  p.causal = causal;
  p.global_tokens = global_tokens;
  return p;
}

std::vector<WorkItem> order(const WorkSchedule& s) {
  std::vector<WorkItem> v;
  for (int w = 0; w < s.items; ++w) v.push_back(s.item(w));
  return v;
}

std::string str(const WorkItem& it) {
  return "(m " + std::to_string(it.m_block) + ", h " + std::to_string(it.h) + ", b " +
         std::to_string(it.b) + ")";
}

TEST(WorkSchedule, EveryItemExactlyOnce) {
  struct Case {
    int batch, hq, seqlen, global;
    bool causal, masked;
  };
  for (const Case& c : std::vector<Case>{{1, 1, 1, 0, false, false},
                                         {2, 16, 1500, 0, false, false},
                                         {2, 16, 1500, 0, true, false},
                                         {3, 5, 8192, 0, true, false},   // 4 heads last
                                         {1, 7, 32768, 0, true, false},  // no tail
                                         {3, 5, 1000, 0, true, true},
                                         {1, 16, 131072, 128, false, true},
                                         {2, 3, 777, 200, false, true},    // 2 heavy blocks
                                         {2, 3, 777, 5000, false, true},   // G > S: all heavy
                                         {2, 3, 777, 200, true, true}}) {  // causal: none heavy
    const FwdParams p = params(c.batch, c.hq, c.seqlen, c.causal, c.global);
    const WorkSchedule s(p, 128, c.masked);
    SCOPED_TRACE("B" + std::to_string(c.batch) + " H" + std::to_string(c.hq) + " S" +
                 std::to_string(c.seqlen) + " G" + std::to_string(c.global) +
                 (c.causal ? " causal" : "") + (c.masked ? " masked" : ""));
    const int m_blocks = (c.seqlen + 127) / 128;
    ASSERT_EQ(s.items, m_blocks * c.hq * c.batch);
    std::set<std::tuple<int, int, int>> seen;
    for (const WorkItem& it : order(s)) {
      ASSERT_GE(it.m_block, 0) << str(it);
      ASSERT_LT(it.m_block, m_blocks) << str(it);
      ASSERT_GE(it.h, 0) << str(it);
      ASSERT_LT(it.h, c.hq) << str(it);
      ASSERT_GE(it.b, 0) << str(it);
      ASSERT_LT(it.b, c.batch) << str(it);
      EXPECT_TRUE(seen.insert({it.m_block, it.h, it.b}).second) << str(it) << " twice";
    }
    EXPECT_EQ(static_cast<int>(seen.size()), s.items);
  }
}

TEST(WorkSchedule, DenseGoesHeadByHeadRowBlocksFastest) {
  const WorkSchedule s(params(2, 3, 1000, false), 128, false);  // 8 row blocks per head
  const std::vector<WorkItem> v = order(s);
  for (int w = 0; w < s.items; ++w) {
    const int head = w / 8;
    EXPECT_EQ(v[w].m_block, w % 8) << w;
    EXPECT_EQ(v[w].h, head % 3) << w;
    EXPECT_EQ(v[w].b, head / 3) << w;
  }
}

TEST(WorkSchedule, MaskedCausalTakesEachHeadsLongestRowBlockFirst) {
  const WorkSchedule s(params(2, 3, 1000, true, /*global_tokens=*/200), 128, true);
  EXPECT_EQ(s.heavy, 0) << "causal global rows see only the keys before them";
  const std::vector<WorkItem> v = order(s);
  for (int w = 0; w < s.items; ++w) {
    EXPECT_EQ(v[w].m_block, 7 - w % 8) << w;
    EXPECT_EQ(v[w].h, (w / 8) % 3) << w;
  }
}

// The dense causal order, written out: head by head, each head's row blocks last first, but the
// last `tail` heads, which go longest first across them (row block m of each, then m - 1, ...).
std::vector<WorkItem> causal_order(int batch, int hq, int m_blocks, int tail) {
  std::vector<WorkItem> v;
  const int heads = batch * hq;
  for (int head = 0; head < heads - tail; ++head)
    for (int m = m_blocks - 1; m >= 0; --m) v.push_back({m, head % hq, head / hq});
  for (int m = m_blocks - 1; m >= 0; --m)
    for (int head = heads - tail; head < heads; ++head) v.push_back({m, head % hq, head / hq});
  return v;
}

TEST(WorkSchedule, DenseCausalEndsOnItsLastHeadsLongestFirst) {
  struct Case {
    int batch, hq, hkv, seqlen, head_dim, tail;
  };
  for (const Case& c : std::vector<Case>{
           {2, 3, 3, 300, 128, 0},       // 3 row blocks a head: head by head
           {2, 3, 3, 1000, 128, 6},      // 8 row blocks: 264 / 8 = 33 heads, all 6
           {32, 32, 32, 1920, 64, 17},   // 15 row blocks: 264 / 15 heads
           {8, 32, 32, 2048, 64, 16},    // 16 row blocks: 264 / 16 heads
           {4, 16, 16, 4096, 128, 8},    // 264 / 32 row blocks; 2 MB of K/V a head, 8 in 16 MB
           {2, 3, 3, 4096, 128, 6},      // 6 heads: all of them
           {1, 2, 2, 2048, 128, 2},      // fewer heads than the tail would take: all of them
           {1, 8, 2, 8192, 256, 4},      // 264 / 64 row blocks (GQA 4: 2 MB a q head, 8 fit)
           {2, 8, 8, 8192, 256, 2},      // 8 MB a head: 2 fit
           {1, 32, 32, 32768, 128, 0},   // 16 MB a head: one, no tail
           {1, 3, 3, 65536, 256, 0}}) {  // more than the budget: none
    const WorkSchedule s(params(c.batch, c.hq, c.seqlen, true, 0, c.head_dim, c.hkv), 128, false);
    SCOPED_TRACE("B" + std::to_string(c.batch) + " H" + std::to_string(c.hq) + " Hkv" +
                 std::to_string(c.hkv) + " S" + std::to_string(c.seqlen) + " D" +
                 std::to_string(c.head_dim));
    const int m_blocks = (c.seqlen + 127) / 128;
    EXPECT_EQ(s.tail_heads, c.tail);
    const std::vector<WorkItem> want = causal_order(c.batch, c.hq, m_blocks, c.tail);
    const std::vector<WorkItem> got = order(s);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t w = 0; w < got.size(); ++w) {
      ASSERT_TRUE(got[w].m_block == want[w].m_block && got[w].h == want[w].h &&
                  got[w].b == want[w].b)
          << "item " << w << ": " << str(got[w]) << ", want " << str(want[w]);
    }
  }
}

TEST(WorkSchedule, MaskedGlobalRowBlocksOfEveryHeadComeFirst) {
  // 200 global tokens: row blocks 0 and 1 hold global rows.
  const WorkSchedule s(params(2, 3, 1000, false, 200), 128, true);
  ASSERT_EQ(s.heavy, 2);
  const std::vector<WorkItem> v = order(s);
  const int heads = 6;
  for (int w = 0; w < 2 * heads; ++w) {
    EXPECT_EQ(v[w].m_block, w / heads) << w;
    EXPECT_EQ(v[w].h + 3 * v[w].b, w % heads) << w;
  }
  for (int w = 2 * heads; w < s.items; ++w) {  // then head by head, row blocks 2..7
    const int y = w - 2 * heads;
    EXPECT_EQ(v[w].m_block, 2 + y % 6) << w;
    EXPECT_EQ(v[w].h + 3 * v[w].b, y / 6) << w;
  }
  // The dense kernel never sees global tokens; the flag alone decides.
  EXPECT_EQ(WorkSchedule(params(2, 3, 1000, false, 200), 128, false).heavy, 0);
  // More global tokens than rows: every row block is in front.
  EXPECT_EQ(WorkSchedule(params(2, 3, 1000, false, 5000), 128, true).heavy, 8);
}

// Sq != Sk: query row i sits at key position i + Sk - Sq (core/mask.h), so the global query rows
// are the rows at positions [0, G), not rows [0, G): fewer of them when Sk > Sq (none when
// Sk - Sq >= G), and from row Sq - Sk on when Sq > Sk. The heavy items are exactly every head's
// row blocks holding a row MaskPolicy calls global, row block by row block, and the rest follow
// head by head, row blocks fastest.
TEST(WorkSchedule, HeavyRowBlocksAreTheBlocksOfGlobalQueryRows) {
  std::mt19937 rng(20261207);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int t = 0; t < 3000; ++t) {
    const int block_m = 64 * pick(1, 3);
    const int global_tokens = pick(0, 3) == 0 ? 0 : pick(1, 800);
    FwdParams p = params(pick(1, 2), pick(1, 3), pick(1, 700), false, global_tokens);
    p.seqlen_k = pick(0, 3) == 0 ? p.seqlen_q : pick(1, 700);
    const WorkSchedule s(p, block_m, true);
    const std::string shape = "B" + std::to_string(p.batch) + " H" + std::to_string(p.hq) + " Sq" +
                              std::to_string(p.seqlen_q) + " Sk" + std::to_string(p.seqlen_k) +
                              " G" + std::to_string(p.global_tokens) + " block_m " +
                              std::to_string(block_m);
    SCOPED_TRACE(shape);
    std::vector<int> global_blocks;  // ascending
    const MaskPolicy m = p.mask();
    for (int i = 0; i < p.seqlen_q; ++i) {
      const int mb = i / block_m;
      if (m.is_global_query(i, p.seqlen_q, p.seqlen_k) &&
          (global_blocks.empty() || global_blocks.back() != mb)) {
        global_blocks.push_back(mb);
      }
    }
    ASSERT_EQ(s.heavy, static_cast<int>(global_blocks.size()));
    const std::vector<WorkItem> v = order(s);
    std::set<std::tuple<int, int, int>> seen;
    for (const WorkItem& it : v) {
      ASSERT_TRUE(seen.insert({it.m_block, it.h, it.b}).second) << str(it) << " twice";
    }
    ASSERT_EQ(static_cast<int>(seen.size()), s.m_blocks * s.heads);
    const int front = s.heavy * s.heads;
    for (int w = 0; w < front; ++w) {
      ASSERT_EQ(v[w].m_block, global_blocks[w / s.heads]) << "item " << w << ": " << str(v[w]);
      ASSERT_EQ(v[w].h + p.hq * v[w].b, w % s.heads) << "item " << w << ": " << str(v[w]);
    }
    const int per = s.m_blocks - s.heavy;
    for (int w = front, prev = -1; w < s.items; ++w) {
      const int head = (w - front) / (per > 0 ? per : 1);
      ASSERT_EQ(v[w].h + p.hq * v[w].b, head) << "item " << w << ": " << str(v[w]);
      if ((w - front) % per != 0) {  // row blocks ascending within a head
        ASSERT_GT(v[w].m_block, prev) << "item " << w << ": " << str(v[w]);
      }
      prev = v[w].m_block;
    }
    // Causal global rows see only the keys before them, and the dense kernel never sees global
    // tokens: neither puts any row block in front.
    p.causal = true;
    EXPECT_EQ(WorkSchedule(p, block_m, true).heavy, 0);
    p.causal = false;
    EXPECT_EQ(WorkSchedule(p, block_m, false).heavy, 0);
  }
}

// The static schedule's rounds (static_item): every item once, round r's items in round r, each
// round rotated by r, and with a grid that is a multiple of the row blocks a head has (132 SMs, 3
// blocks of 192 rows at S512), every CTA takes every row block in turn.
TEST(WorkSchedule, StaticRoundsRotateAmongTheCtas) {
  for (const auto& [items, grid] : std::vector<std::pair<int, int>>{
           {1, 1}, {5, 132}, {132, 132}, {133, 132}, {3072, 132}, {2048, 132}, {1000, 7}}) {
    SCOPED_TRACE("items " + std::to_string(items) + " grid " + std::to_string(grid));
    std::vector<int> seen(items, 0);
    for (int w = 0; w < items; ++w) {
      const int it = static_item(w, grid, items);
      ASSERT_GE(it, 0) << w;
      ASSERT_LT(it, items) << w;
      ++seen[it];
      EXPECT_EQ(it / grid, w / grid) << "item " << it << " left its round, w " << w;
    }
    for (int i = 0; i < items; ++i) EXPECT_EQ(seen[i], 1) << "item " << i;
  }
  EXPECT_EQ(static_item(0, 132, 3072), 0);  // round 0 as before: CTA c takes item c
  EXPECT_EQ(static_item(131, 132, 3072), 131);
  EXPECT_EQ(static_item(132, 132, 3072), 133);  // round 1: CTA 0 takes item 132 + 1
  EXPECT_EQ(static_item(263, 132, 3072), 132);  // and CTA 131 wraps to the round's first
  EXPECT_EQ(static_item(2904, 132, 3000), 2904 + 22 % 96);  // the last round: 96 items, r = 22
  // D64 B32 H32 S512 on 3 consumers: 3 row blocks a head (item % 3), 3072 items on 132 CTAs.
  for (int c = 0; c < 132; ++c) {
    std::set<int> blocks;
    for (int w = c; w < 3072; w += 132) blocks.insert(static_item(w, 132, 3072) % 3);
    EXPECT_EQ(blocks.size(), 3u) << "CTA " << c;
  }
}

}  // namespace
}  // namespace gpuattn
