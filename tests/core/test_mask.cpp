// MaskPolicy (core/mask.h) against a brute-force definition written here from the documented rule,
// on exhaustive small grids: per-element visibility, visible counts, block key ranges and tile
// predicates.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "core/fwd_params.h"
#include "core/mask.h"

namespace gpuattn {
namespace {

// The rule of attention.h, built as sets: the window band, plus every global key, plus every key
// for a global query, then cut by causal.
std::vector<std::vector<bool>> brute_matrix(const MaskPolicy& m, int lq, int lk) {
  std::vector<std::vector<bool>> vis(lq, std::vector<bool>(lk, false));
  auto global_pos = [&](long long t) {
    return t >= 0 && (t < m.global_tokens || (m.global_stride > 0 && t % m.global_stride == 0));
  };
  const bool window = m.window_left != -1 || m.window_right != -1;
  for (int i = 0; i < lq; ++i) {
    const long long p = static_cast<long long>(i) + lk - lq;
    for (int j = 0; j < lk; ++j) {
      bool in = true;
      if (window) {
        const long long lo = m.window_left == -1 ? LLONG_MIN : p - m.window_left;
        const long long hi = m.window_right == -1 ? LLONG_MAX : p + m.window_right;
        in = lo <= j && j <= hi;
      }
      if (window && (global_pos(j) || global_pos(p))) in = true;
      if (m.causal && j > p) in = false;
      vis[i][j] = in;
    }
  }
  return vis;
}

std::string describe(const MaskPolicy& m, int lq, int lk) {
  std::ostringstream s;
  s << "lq " << lq << " lk " << lk << (m.causal ? " causal" : "") << " window (" << m.window_left
    << ", " << m.window_right << ") G " << m.global_tokens << " S " << m.global_stride;
  return s.str();
}

// Every mask of a small grid, over every (lq, lk) of another. Large values check for overflow.
template <class Fn>
void for_each_mask(Fn fn) {
  const int windows[] = {-1, 0, 1, 3, 12, INT_MAX};
  const int globals[] = {0, 1, 4, 13, INT_MAX};
  const int strides[] = {0, 1, 3, 5, INT_MAX};
  const int lens[] = {0, 1, 2, 3, 5, 8, 11};
  for (bool causal : {false, true}) {
    for (int wl : windows) {
      for (int wr : windows) {
        for (int g : globals) {
          for (int st : strides) {
            MaskPolicy m;
            m.causal = causal;
            m.window_left = wl;
            m.window_right = wr;
            m.global_tokens = g;
            m.global_stride = st;
            for (int lq : lens) {
              for (int lk : lens) {
                if (lq > 0) fn(m, lq, lk);
                if (::testing::Test::HasFatalFailure()) return;
              }
            }
          }
        }
      }
    }
  }
}

TEST(MaskPolicy, VisibleAndCountMatchBruteForce) {
  std::int64_t checked = 0;
  for_each_mask([&](const MaskPolicy& m, int lq, int lk) {
    const auto vis = brute_matrix(m, lq, lk);
    for (int i = 0; i < lq; ++i) {
      int count = 0;
      for (int j = -2; j < lk + 2; ++j) {
        const bool want = j >= 0 && j < lk && vis[i][j];
        count += want;
        ASSERT_EQ(m.visible(i, j, lq, lk), want) << describe(m, lq, lk) << " i " << i << " j " << j;
        ++checked;
      }
      ASSERT_EQ(m.visible_count(i, lq, lk), count) << describe(m, lq, lk) << " i " << i;
    }
  });
  EXPECT_GT(checked, 1000000);
}

// For every block of rows: key_range holds every key some row sees and is tight (its first and
// last key are seen); tile_any_visible is exact; tile_fully_visible is never wrongly true.
TEST(MaskPolicy, BlockRangesAndTilesMatchBruteForce) {
  for_each_mask([&](const MaskPolicy& m, int lq, int lk) {
    const auto vis = brute_matrix(m, lq, lk);
    // seen[a][b][j]: some row in [a, b] sees key j, built row by row.
    for (int a = 0; a < lq; ++a) {
      std::vector<bool> seen(lk, false);
      // cnt[j]: rows in [a, b] that see key j, for the fully-visible check.
      std::vector<int> cnt(lk, 0);
      for (int b = a; b < lq; ++b) {
        for (int j = 0; j < lk; ++j) {
          seen[j] = seen[j] || vis[b][j];
          cnt[j] += vis[b][j];
        }
        const KeyRange r = m.key_range(a, b, lq, lk);
        int first = -1, last = -1;
        for (int j = 0; j < lk; ++j) {
          if (seen[j]) {
            if (first < 0) first = j;
            last = j;
          }
        }
        const std::string where =
            describe(m, lq, lk) + " rows [" + std::to_string(a) + ", " + std::to_string(b) + "]";
        ASSERT_GE(r.begin, 0) << where;
        ASSERT_LE(r.end, lk) << where;
        if (first < 0) {
          ASSERT_TRUE(r.empty()) << where << " range [" << r.begin << ", " << r.end << ")";
        } else {
          ASSERT_EQ(r.begin, first) << where;
          ASSERT_EQ(r.end, last + 1) << where;
        }
        for (int c = 0; c < lk; ++c) {
          bool any = false, all = true;
          for (int d = c; d < lk; ++d) {
            any = any || seen[d];
            all = all && cnt[d] == b - a + 1;
            ASSERT_EQ(m.tile_any_visible(a, b, c, d, lq, lk), any)
                << where << " keys [" << c << ", " << d << "]";
            if (!all) {
              ASSERT_FALSE(m.tile_fully_visible(a, b, c, d, lq, lk))
                  << where << " keys [" << c << ", " << d << "]";
            }
          }
        }
      }
    }
  });
}

// tile_fully_visible is conservative, but must still find the common cases, or the kernels would
// mask tiles that need no mask.
TEST(MaskPolicy, FullyVisibleTilesAreFound) {
  MaskPolicy m;
  EXPECT_TRUE(m.tile_fully_visible(0, 63, 0, 63, 1000, 1000));  // dense
  m.causal = true;
  EXPECT_TRUE(m.tile_fully_visible(64, 127, 0, 63, 1000, 1000));     // below the diagonal
  EXPECT_FALSE(m.tile_fully_visible(64, 127, 64, 127, 1000, 1000));  // on it
  EXPECT_TRUE(m.tile_fully_visible(0, 63, 837, 900, 100, 1000));     // bottom-right aligned
  EXPECT_FALSE(m.tile_fully_visible(0, 63, 838, 901, 100, 1000));
  m.window_left = 256;
  m.window_right = 0;
  EXPECT_TRUE(m.tile_fully_visible(256, 319, 64, 255, 1000, 1000));  // inside the band
  EXPECT_FALSE(m.tile_fully_visible(256, 319, 0, 63, 1000, 1000));   // left edge
  m.global_tokens = 64;
  EXPECT_TRUE(m.tile_fully_visible(256, 319, 0, 63, 1000, 1000));  // the global keys
  EXPECT_FALSE(m.tile_fully_visible(256, 319, 0, 64, 1000, 1000));
  EXPECT_FALSE(m.tile_fully_visible(0, 63, 0, 1000, 1000, 1000));  // past the sequence end
}

// Tiles between the global keys and the window are skipped: a long sequence with a narrow window
// sees O(window + globals) keys per row.
TEST(MaskPolicy, LongSequenceWindowSkipsTiles) {
  MaskPolicy m;
  m.causal = true;
  m.window_left = 4096;
  m.window_right = 0;
  m.global_tokens = 128;
  const int s = 131072, bm = 128, bn = 128;
  for (int i0 : {0, 4096, 65536, s - bm}) {
    const int i1 = i0 + bm - 1;
    const KeyRange r = m.key_range(i0, i1, s, s);
    EXPECT_EQ(r.begin, 0);
    EXPECT_EQ(r.end, i1 + 1);
    int tiles = 0;
    for (int j0 = r.begin; j0 < r.end; j0 += bn) {
      tiles += m.tile_any_visible(i0, i1, j0, std::min(j0 + bn, r.end) - 1, s, s);
    }
    EXPECT_LE(tiles, (4096 + bm) / bn + 2) << "rows " << i0;
    EXPECT_EQ(m.visible_count(i1, s, s), i1 < 4096 + 128 ? i1 + 1 : 4097 + 128) << "row " << i1;
  }
}

// Positions are bottom-right aligned: with Sq < Sk the query rows are the last tokens, so a
// decode query is not "the first query" and is global only at a global position.
TEST(MaskPolicy, GlobalQueriesUseBottomRightPositions) {
  MaskPolicy m;
  m.window_left = 2;
  m.window_right = 0;
  m.global_tokens = 4;
  EXPECT_FALSE(m.is_global_query(0, 1, 100));  // position 99
  EXPECT_EQ(m.visible_count(0, 1, 100), 3 + 4);
  EXPECT_TRUE(m.is_global_query(0, 100, 100));
  EXPECT_FALSE(m.is_global_query(0, 10, 5));  // position -5: no token of the key sequence
  EXPECT_TRUE(m.is_global_query(5, 10, 5));
  m.global_stride = 33;
  EXPECT_TRUE(m.is_global_query(0, 1, 100));  // position 99 = 3 * 33
}

TEST(MaskPolicy, FwdParamsCarryTheMask) {
  FwdParams p;
  p.batch = 1;
  p.hq = p.hkv = 1;
  p.head_dim = 64;
  p.seqlen_q = p.seqlen_k = 100;
  EXPECT_TRUE(p.dense_or_causal());
  EXPECT_DOUBLE_EQ(attention_flops(p), 4.0 * 100 * 100 * 64);
  p.causal = true;
  p.window_left = 10;
  EXPECT_FALSE(p.dense_or_causal());
  const MaskPolicy m = p.mask();
  EXPECT_TRUE(m.causal);
  EXPECT_EQ(m.window_left, 10);
  EXPECT_EQ(m.window_right, -1);
  double visible = 0;
  for (int i = 0; i < 100; ++i) visible += std::min(i + 1, 11);
  EXPECT_DOUBLE_EQ(attention_flops(p), 4.0 * visible * 64);
  p.global_tokens = 3;
  EXPECT_FALSE(p.dense_or_causal());
  EXPECT_EQ(p.visible_keys(50, 100, 100), 11 + 3);
  EXPECT_EQ(p.visible_keys(1, 100, 100), 2);  // global query, causal: keys 0..1
}

}  // namespace
}  // namespace gpuattn
