// The split-KV decode path's arithmetic (core/decode_split.h): which calls take it, how many
// splits a launch makes, which key tiles each split takes, and where a causal row block's keys end.
// Expectations are literals worked out by hand.
#include <gtest/gtest.h>

#include <vector>

#include "core/decode_split.h"

namespace gpuattn {
namespace {

TEST(DecodePlan, TakesCallsWithAtMost64RowsPerKvHead) {
  EXPECT_TRUE(DecodePlan::eligible(1, 1));
  EXPECT_TRUE(DecodePlan::eligible(1, 64));   // MQA with 64 query heads: 4 row blocks
  EXPECT_FALSE(DecodePlan::eligible(1, 65));  // 65 rows
  EXPECT_TRUE(DecodePlan::eligible(16, 4));
  EXPECT_FALSE(DecodePlan::eligible(17, 4));  // 68 rows
  EXPECT_TRUE(DecodePlan::eligible(64, 1));
  EXPECT_FALSE(DecodePlan::eligible(128, 1));
  EXPECT_FALSE(DecodePlan::eligible(0, 4));              // no query rows: nothing to decode
  EXPECT_FALSE(DecodePlan::eligible(1 << 20, 1 << 12));  // no overflow of the product
}

TEST(DecodePlan, SplitsFillOneWaveOfSlots) {
  // compare_torch's decode shape: B8 Hkv8 (group 4), Sq 1, Sk 4096 (64 tiles); 132 SMs x 2 CTAs.
  DecodePlan d = DecodePlan::plan(8, 8, 4, 1, 4096, 264);
  EXPECT_EQ(d.row_blocks, 1);
  EXPECT_EQ(d.units, 64);
  EXPECT_EQ(d.splits, 4);  // 264 / 64, under 64 / 4 = 16
  // A long single sequence: 8 units, 16384 tiles: 264 / 8 = 33 splits.
  d = DecodePlan::plan(1, 8, 1, 1, 1 << 20, 264);
  EXPECT_EQ(d.splits, 33);
  // ... capped at kMaxSplits with more slots.
  d = DecodePlan::plan(1, 1, 1, 1, 1 << 20, 10000);
  EXPECT_EQ(d.splits, DecodePlan::kMaxSplits);
  // Short sequences: at least 4 tiles a split (Sk 1000: 16 tiles, 4 splits; Sk 255: 4 tiles, 1).
  EXPECT_EQ(DecodePlan::plan(1, 1, 1, 1, 1000, 264).splits, 4);
  EXPECT_EQ(DecodePlan::plan(1, 1, 1, 1, 255, 264).splits, 1);
  EXPECT_EQ(DecodePlan::plan(1, 1, 1, 1, 1, 264).splits, 1);
  // More units than slots: no split.
  d = DecodePlan::plan(64, 32, 1, 1, 8192, 264);
  EXPECT_EQ(d.units, 2048);
  EXPECT_EQ(d.splits, 1);
  // Rows: Sq 3 x group 8 = 24 rows, 2 row blocks; Sq 4 x group 16 = 64 rows, 4.
  EXPECT_EQ(DecodePlan::plan(2, 4, 8, 3, 4096, 264).row_blocks, 2);
  EXPECT_EQ(DecodePlan::plan(2, 4, 8, 3, 4096, 264).units, 16);
  EXPECT_EQ(DecodePlan::plan(1, 1, 16, 4, 4096, 264).row_blocks, 4);
}

TEST(DecodePlan, SplitsTakeEveryTileOnceInOrder) {
  for (int tiles : {0, 1, 3, 4, 5, 63, 64, 65, 1000}) {
    for (int splits : {1, 2, 3, 6, 7, 49, 64}) {
      int next = 0;
      int smallest = 1 << 30, largest = 0;
      for (int s = 0; s < splits; ++s) {
        int t0 = -1, t1 = -1;
        DecodePlan::range(tiles, splits, s, t0, t1);
        EXPECT_EQ(t0, next) << tiles << " tiles, split " << s << " of " << splits;
        EXPECT_LE(t0, t1);
        next = t1;
        smallest = t1 - t0 < smallest ? t1 - t0 : smallest;
        largest = t1 - t0 > largest ? t1 - t0 : largest;
      }
      EXPECT_EQ(next, tiles) << tiles << " tiles over " << splits;
      EXPECT_LE(largest - smallest, 1) << tiles << " tiles over " << splits;
    }
  }
  int t0 = 0, t1 = 0;
  DecodePlan::range(64, 6, 5, t0, t1);  // 64 tiles over 6: the last split takes [53, 64)
  EXPECT_EQ(t0, 53);
  EXPECT_EQ(t1, 64);
}

TEST(DecodePlan, CausalKeyEndOfARowBlock) {
  EXPECT_EQ(DecodePlan::key_end(0, 4, 1, 4096, false), 4096);
  EXPECT_EQ(DecodePlan::key_end(0, 4, 1, 4096, true), 4096);  // the one query sees every key
  // Sq 8, group 4: block 0 holds queries 0-3 (rows 0-15), whose last sees lk - 8 + 3 + 1 keys.
  EXPECT_EQ(DecodePlan::key_end(0, 4, 8, 100, true), 96);
  EXPECT_EQ(DecodePlan::key_end(1, 4, 8, 100, true), 100);
  // Sq 8 > Sk 2: query i sees i - 5 keys; block 0 (queries 0-3) none, group 1 (queries 0-7) 2.
  EXPECT_EQ(DecodePlan::key_end(0, 4, 8, 2, true), 0);
  EXPECT_EQ(DecodePlan::key_end(0, 1, 8, 2, true), 2);
  // A block past the last query (varlen: a shorter sequence) ends at the last query's limit.
  EXPECT_EQ(DecodePlan::key_end(3, 1, 5, 10, true), 10);
  EXPECT_EQ(DecodePlan::key_end(0, 1, 1, 0, true), 0);
}

// The lean kernel (2 stages, 5 CTAs an SM) takes head-dim-64 grids that fit one wave of the 3-stage
// kernel, and only those; the switch forces it either way at head dim 64 and nowhere else.
TEST(DecodePlan, LeanKernelTakesOneWaveGridsAtHeadDim64) {
  constexpr long long kWave = 132 * 4;            // an H200 with the 3-stage kernel's 4 CTAs an SM
  EXPECT_TRUE(DecodePlan::lean(64, 12, kWave));   // GPT-2 124M B1
  EXPECT_TRUE(DecodePlan::lean(64, 384, kWave));  // B32
  EXPECT_TRUE(DecodePlan::lean(64, kWave, kWave));  // exactly one wave
  EXPECT_FALSE(DecodePlan::lean(64, kWave + 1, kWave));
  EXPECT_FALSE(DecodePlan::lean(64, 1536, kWave));  // B128: ~3 waves
  EXPECT_FALSE(DecodePlan::lean(128, 12, kWave));
  EXPECT_FALSE(DecodePlan::lean(256, 12, kWave));
  EXPECT_TRUE(DecodePlan::lean(64, 1536, kWave, 1));
  EXPECT_FALSE(DecodePlan::lean(64, 12, kWave, 0));
  EXPECT_FALSE(DecodePlan::lean(128, 12, kWave, 1));
  EXPECT_EQ(DecodePlan::stages(64, true), 2);
  EXPECT_EQ(DecodePlan::stages(64), 3);
  EXPECT_EQ(DecodePlan::smem_bytes(64, true), (16 + 2 * 2 * 64) * 2 * 64);  // 34 KB
  EXPECT_LT(DecodePlan::smem_bytes(64, true) * 5, 228 * 1024);  // 5 fit an SM's shared memory
}

}  // namespace
}  // namespace gpuattn
