// The sm_90a kernel's work-item order (core/work_schedule.h): every item exactly once, head by
// head with row blocks fastest, causal longest first, and a masked call's global row blocks in
// front.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/work_schedule.h"

namespace gpuattn {
namespace {

FwdParams params(int batch, int hq, int seqlen_q, bool causal, int global_tokens = 0) {
  FwdParams p;
  p.batch = batch;
  p.hq = hq;
  p.hkv = hq;
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

TEST(WorkSchedule, CausalTakesEachHeadsLongestRowBlockFirst) {
  for (bool masked : {false, true}) {
    const WorkSchedule s(params(2, 3, 1000, true, /*global_tokens=*/200), 128, masked);
    EXPECT_EQ(s.heavy, 0) << "causal global rows see only the keys before them";
    const std::vector<WorkItem> v = order(s);
    for (int w = 0; w < s.items; ++w) {
      EXPECT_EQ(v[w].m_block, 7 - w % 8) << w;
      EXPECT_EQ(v[w].h, (w / 8) % 3) << w;
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

}  // namespace
}  // namespace gpuattn
