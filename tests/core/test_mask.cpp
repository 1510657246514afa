// MaskPolicy (core/mask.h) against a brute-force definition written here from the documented rule,
// on exhaustive small grids: per-element visibility, visible counts, block key ranges and tile
// predicates.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <random>
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

// A position mask (causal, window, global tokens), no block layout.
MaskPolicy position_mask(bool causal, int window_left, int window_right, int global_tokens,
                         int global_stride) {
  return MaskPolicy{causal, window_left, window_right, global_tokens, global_stride};
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
            const MaskPolicy m = position_mask(causal, wl, wr, g, st);
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

// m.visible (keys -2 .. lk + 1) and m.visible_count against the brute-force matrix `vis`; counts
// the elements checked in `checked`. `where` describes m for the messages.
void check_visible_and_count(const MaskPolicy& m, const std::vector<std::vector<bool>>& vis, int lq,
                             int lk, const std::string& where, std::int64_t& checked) {
  for (int i = 0; i < lq; ++i) {
    int count = 0;
    for (int j = -2; j < lk + 2; ++j) {
      const bool want = j >= 0 && j < lk && vis[i][j];
      count += want;
      ASSERT_EQ(m.visible(i, j, lq, lk), want) << where << " i " << i << " j " << j;
      ++checked;
    }
    ASSERT_EQ(m.visible_count(i, lq, lk), count) << where << " i " << i;
  }
}

// For every block of rows [a, b]: m.key_range within [0, lk) and accepted by
// check_range(range, seen, where), where seen[j] is true for the keys some row of the block sees
// in `vis`; tile_any_visible exact; tile_fully_visible never wrongly true.
template <class CheckRange>
void check_row_blocks(const MaskPolicy& m, const std::vector<std::vector<bool>>& vis, int lq,
                      int lk, const std::string& what, CheckRange check_range) {
  for (int a = 0; a < lq; ++a) {
    // seen[j]: some row in [a, b] sees key j, built row by row.
    std::vector<bool> seen(lk, false);
    // cnt[j]: rows in [a, b] that see key j, for the fully-visible check.
    std::vector<int> cnt(lk, 0);
    for (int b = a; b < lq; ++b) {
      for (int j = 0; j < lk; ++j) {
        seen[j] = seen[j] || vis[b][j];
        cnt[j] += vis[b][j];
      }
      const KeyRange r = m.key_range(a, b, lq, lk);
      const std::string where =
          what + " rows [" + std::to_string(a) + ", " + std::to_string(b) + "]";
      ASSERT_GE(r.begin, 0) << where;
      ASSERT_LE(r.end, lk) << where;
      ASSERT_NO_FATAL_FAILURE(check_range(r, seen, where));
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
}

TEST(MaskPolicy, VisibleAndCountMatchBruteForce) {
  std::int64_t checked = 0;
  for_each_mask([&](const MaskPolicy& m, int lq, int lk) {
    check_visible_and_count(m, brute_matrix(m, lq, lk), lq, lk, describe(m, lq, lk), checked);
  });
  EXPECT_GT(checked, 1000000);
}

// For every block of rows: key_range holds every key some row sees and is tight (its first and
// last key are seen); tile_any_visible is exact; tile_fully_visible is never wrongly true.
TEST(MaskPolicy, BlockRangesAndTilesMatchBruteForce) {
  for_each_mask([&](const MaskPolicy& m, int lq, int lk) {
    check_row_blocks(
        m, brute_matrix(m, lq, lk), lq, lk, describe(m, lq, lk),
        [&](const KeyRange& r, const std::vector<bool>& seen, const std::string& where) {
          int first = -1, last = -1;
          for (int j = 0; j < lk; ++j) {
            if (seen[j]) {
              if (first < 0) first = j;
              last = j;
            }
          }
          if (first < 0) {
            ASSERT_TRUE(r.empty()) << where << " range [" << r.begin << ", " << r.end << ")";
          } else {
            ASSERT_EQ(r.begin, first) << where;
            ASSERT_EQ(r.end, last + 1) << where;
          }
        });
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

// A window alone on the sm_90a kernel's dense instantiation (FwdParams::banded()): per block of
// 128 query rows it loads the tiles of band_tiles(), and each 64-row warpgroup masks per element
// (visible iff row_keys().lo <= key < row_keys().hi) only the tiles that leave its common_keys().
// Against MaskPolicy::visible for every (row, key): no visible key outside the loaded tiles, no
// loaded edge tile without a visible key, and the kernel's visibility equal to the mask's inside
// every loaded tile, at tile sizes 64 and 128, Sq above, equal to and below Sk, windows around
// the tile sizes, each side unbounded, causal or not.
TEST(BandedWindow, TilesAndMasksMatchTheMask) {
  const int lens[] = {1, 63, 65, 129, 300};
  const int windows[] = {-1, 0, 1, 64, 129, 100000};
  long long checked = 0;
  for (int lq : lens) {
    for (int lk : lens) {
      for (int wl : windows) {
        for (int wr : windows) {
          for (bool causal : {false, true}) {
            FwdParams p;
            p.causal = causal;
            p.window_left = wl;
            p.window_right = wr;
            if (!p.banded()) continue;  // no window at all: the dense path proper
            const MaskPolicy m = p.mask();
            for (int block_n : {64, 128}) {
              const std::string where = "lq " + std::to_string(lq) + " lk " + std::to_string(lk) +
                                        " window " + std::to_string(wl) + "," + std::to_string(wr) +
                                        " causal " + std::to_string(causal) + " tile " +
                                        std::to_string(block_n);
              for (int m0 = 0; m0 < lq; m0 += 128) {
                const BandTiles t = band_tiles(p, m0, 128, block_n, lq, lk);
                const int k_begin = t.t_first * block_n;
                const int k_end = (t.t_first + t.n_tiles) * block_n;
                const int rows_end = std::min(m0 + 128, lq);
                for (int i = m0; i < rows_end; ++i) {
                  for (int j = 0; j < lk; ++j) {
                    if (m.visible(i, j, lq, lk)) {
                      ASSERT_TRUE(j >= k_begin && j < k_end)
                          << where << " row " << i << " key " << j << ": visible, not loaded";
                    }
                  }
                }
                for (int e : {0, t.n_tiles - 1}) {  // the edge tiles hold a visible key
                  if (t.n_tiles == 0) break;
                  const int n0 = (t.t_first + e) * block_n;
                  bool any = false;
                  for (int i = m0; i < rows_end && !any; ++i) {
                    for (int j = n0; j < std::min(n0 + block_n, lk) && !any; ++j) {
                      any = m.visible(i, j, lq, lk);
                    }
                  }
                  EXPECT_TRUE(any) << where << " m0 " << m0 << ": tile " << n0 / block_n
                                   << " is loaded but holds no visible key";
                }
                for (int first = m0; first < rows_end; first += 64) {  // a consumer warpgroup
                  const int last = std::min(first + 63, lq - 1);
                  const KeyRange band = common_keys(p, first, last, lq, lk);
                  for (int tile = 0; tile < t.n_tiles; ++tile) {
                    const int n0 = (t.t_first + tile) * block_n;
                    const bool masked = n0 < band.begin || n0 + block_n > band.end;
                    for (int i = first; i <= last; ++i) {
                      const RowKeys k = row_keys(p, i + lk - lq, lk);
                      for (int j = n0; j < n0 + block_n; ++j) {
                        const bool kernel = !masked || (j >= k.lo && j < k.hi);
                        const bool want = m.visible(i, j, lq, lk);  // false past lk
                        ASSERT_EQ(kernel, want) << where << " row " << i << " key " << j
                                                << (masked ? " (masked tile)" : " (unmasked)");
                        ++checked;
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000000);
}

// A block layout of whole tiles on the sm_90a kernel's dense instantiation
// (FwdParams::whole_tile_layout): per block of block_m query rows the producer loads the tiles t
// with LayoutTiles::on(t), in key order, and tells the consumers their count n and a key length
// lk' = lk - (the last one - (n - 1)) * block_n; the consumers take the j-th loaded tile's keys
// from n0 = j * block_n and mask only keys at or past lk' (need_mask: n0 + block_n > lk'), as for
// a dense non-causal item. Against MaskPolicy::visible
// for every (row, key): no visible key outside the loaded tiles, and the kernel's visibility equal
// to the mask's inside every loaded tile, with lengths on, one past and one short of the tile
// edges, blocks of 1-3 tiles each way, contiguous and transposed layouts, two heads.
TEST(WholeTileLayout, ListedTilesMatchTheMask) {
  std::mt19937 rng(1234);
  long long checked = 0;
  for (int block_n : {64, 128}) {
    const int block_m = 128;
    for (int lq : {1, 127, 128, 129, 300}) {
      for (int lk : {1, block_n - 1, block_n, block_n + 1, 5 * block_n + 3, 8 * block_n}) {
        for (int bq : {block_m, 2 * block_m}) {
          for (int bk : {block_n, 3 * block_n}) {
            for (bool transposed : {false, true}) {
              const int nq = (lq + bq - 1) / bq, nk = (lk + bk - 1) / bk;
              std::vector<std::uint8_t> layout(2 * nq * nk);
              for (auto& b : layout) b = rng() % 3 == 0 ? 1 : 0;  // ~1/3 on
              FwdParams p;
              p.block_layout = layout.data();
              p.block_head_stride = nq * nk;
              p.block_row_stride = transposed ? 1 : nk;
              p.block_col_stride = transposed ? nq : 1;
              p.block_q = bq;
              p.block_k = bk;
              ASSERT_TRUE(p.whole_tile_layout(block_m, block_n));
              const std::string where = "tile " + std::to_string(block_n) + " lq " +
                                        std::to_string(lq) + " lk " + std::to_string(lk) +
                                        " blocks " + std::to_string(bq) + "x" + std::to_string(bk) +
                                        (transposed ? " transposed" : "");
              for (int h = 0; h < 2; ++h) {
                const MaskPolicy m = p.mask(h);
                for (int m0 = 0; m0 < lq; m0 += block_m) {
                  const LayoutTiles tiles(p, h, m0, block_n);
                  std::vector<int> loaded;
                  for (int t = 0; t < (lk + block_n - 1) / block_n; ++t) {
                    if (tiles.on(t)) loaded.push_back(t);
                  }
                  const int n = static_cast<int>(loaded.size());
                  const int lk_shifted = n == 0 ? lk : lk - (loaded.back() - (n - 1)) * block_n;
                  std::vector<bool> in_loaded(lk, false);
                  const int rows_end = std::min(m0 + block_m, lq);
                  for (int j = 0; j < n; ++j) {
                    const int real0 = loaded[j] * block_n, n0 = j * block_n;
                    const bool need_mask = n0 + block_n > lk_shifted;
                    for (int x = 0; x < block_n && real0 + x < lk; ++x) in_loaded[real0 + x] = true;
                    for (int i = m0; i < rows_end; ++i) {
                      for (int x = 0; x < block_n; ++x) {
                        const bool kernel = !need_mask || n0 + x < lk_shifted;
                        const bool want = real0 + x < lk && m.visible(i, real0 + x, lq, lk);
                        ASSERT_EQ(kernel, want)
                            << where << " head " << h << " row " << i << " key " << real0 + x;
                        ++checked;
                      }
                    }
                  }
                  for (int i = m0; i < rows_end; ++i) {
                    for (int key = 0; key < lk; ++key) {
                      if (m.visible(i, key, lq, lk)) {
                        ASSERT_TRUE(in_loaded[key]) << where << " head " << h << " row " << i
                                                    << " key " << key << ": visible, not loaded";
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000000);
}

// Which calls count as a layout of whole tiles: the layout alone, its blocks multiples of the
// tile each way.
TEST(WholeTileLayout, OnlyALayoutAloneOfWholeTiles) {
  const std::uint8_t layout[1] = {1};
  FwdParams p;
  EXPECT_FALSE(p.whole_tile_layout(128, 128));  // no layout
  p.block_layout = layout;
  p.block_q = 256;
  p.block_k = 128;
  EXPECT_TRUE(p.whole_tile_layout(128, 128));
  EXPECT_TRUE(p.whole_tile_layout(128, 64));
  EXPECT_FALSE(p.whole_tile_layout(192, 128));  // 256 rows are not whole 192-row blocks
  EXPECT_FALSE(p.whole_tile_layout(128, 256));
  p.block_q = 64;
  EXPECT_FALSE(p.whole_tile_layout(128, 128));
  p.block_q = 128;
  p.block_k = 64;
  EXPECT_FALSE(p.whole_tile_layout(128, 128));
  p.block_k = 128;
  p.causal = true;  // the diagonal cuts tiles
  EXPECT_FALSE(p.whole_tile_layout(128, 128));
  p.causal = false;
  p.window_left = 1000;
  EXPECT_FALSE(p.whole_tile_layout(128, 128));
  p.window_left = -1;
  p.global_tokens = 1;
  EXPECT_FALSE(p.whole_tile_layout(128, 128));
  p.global_tokens = 0;
  p.global_stride = 64;
  EXPECT_FALSE(p.whole_tile_layout(128, 128));
  p.global_stride = 0;
  EXPECT_TRUE(p.whole_tile_layout(128, 128));
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
  EXPECT_FALSE(p.banded());
  EXPECT_DOUBLE_EQ(attention_flops(p), 4.0 * 100 * 100 * 64);
  p.causal = true;
  EXPECT_FALSE(p.banded());
  p.window_left = 10;
  EXPECT_FALSE(p.dense_or_causal());
  EXPECT_TRUE(p.banded());  // a window alone: the sm_90a kernel's dense instantiation
  p.window_left = -1;
  p.window_right = 0;
  EXPECT_TRUE(p.banded());
  p.window_left = 10;
  p.window_right = -1;
  const MaskPolicy m = p.mask();
  EXPECT_TRUE(m.causal);
  EXPECT_EQ(m.window_left, 10);
  EXPECT_EQ(m.window_right, -1);
  double visible = 0;
  for (int i = 0; i < 100; ++i) visible += std::min(i + 1, 11);
  EXPECT_DOUBLE_EQ(attention_flops(p), 4.0 * visible * 64);
  p.global_tokens = 3;
  EXPECT_FALSE(p.dense_or_causal());
  EXPECT_FALSE(p.banded());  // global tokens: the masked kernel
  EXPECT_EQ(p.visible_keys(50, 100, 100, 0), 11 + 3);
  EXPECT_EQ(p.visible_keys(1, 100, 100, 0), 2);  // global query, causal: keys 0..1
}

// ---- block-sparse layouts -----------------------------------------------------------------------

// A layout of n_q x n_k blocks (row-major unless `transposed`: then stored column-major, to check
// the strides), each block on with probability `density`.
struct Layout {
  std::vector<unsigned char> bytes;
  int n_q = 0, n_k = 0;
  bool transposed = false;
  Layout(int nq, int nk, double density, std::uint64_t seed, bool t = false)
      : bytes(static_cast<std::size_t>(nq) * nk), n_q(nq), n_k(nk), transposed(t) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    // Nonzero values other than 1 count as on too.
    for (auto& b : bytes) b = u(rng) < density ? static_cast<unsigned char>(1 + rng() % 255) : 0;
  }
  bool on(int r, int c) const { return bytes[transposed ? c * n_q + r : r * n_k + c] != 0; }
  void attach(MaskPolicy& m, int bq, int bk) const {
    m.blocks = bytes.data();
    m.block_q = bq;
    m.block_k = bk;
    m.block_row_stride = transposed ? 1 : n_k;
    m.block_col_stride = transposed ? n_q : 1;
  }
};

// The documented rule: the position mask AND the block of the element.
std::vector<std::vector<bool>> brute_matrix_blocks(const MaskPolicy& m, const Layout& l, int bq,
                                                   int bk, int lq, int lk) {
  MaskPolicy pos = m;
  pos.blocks = nullptr;
  auto vis = brute_matrix(pos, lq, lk);
  for (int i = 0; i < lq; ++i) {
    for (int j = 0; j < lk; ++j) vis[i][j] = vis[i][j] && l.on(i / bq, j / bk);
  }
  return vis;
}

// Position masks (a smaller grid than for_each_mask), block sizes that do and do not divide the
// lengths, layouts from all off to all on, row-major and column-major.
template <class Fn>
void for_each_block_mask(Fn fn) {
  struct W {
    int l, r;
  };
  const W windows[] = {{-1, -1}, {0, 0}, {3, 1}, {-1, 2}};
  const int globals[] = {0, 2};
  const int strides[] = {0, 4};
  const int lens[] = {1, 3, 8, 11};
  const std::pair<int, int> blocks[] = {{1, 1}, {2, 3}, {4, 4}, {3, 5}, {16, 16}};
  const double densities[] = {0.0, 0.1, 0.5, 1.0};
  std::uint64_t seed = 1;
  for (bool causal : {false, true}) {
    for (const W w : windows) {
      for (int g : globals) {
        for (int st : strides) {
          const MaskPolicy m = position_mask(causal, w.l, w.r, g, st);
          for (auto [bq, bk] : blocks) {
            for (double density : densities) {
              for (int lq : lens) {
                for (int lk : lens) {
                  const int nq = (lq + bq - 1) / bq, nk = (lk + bk - 1) / bk;
                  ++seed;
                  const Layout layout(nq, nk, density, seed, seed % 2 == 0);
                  MaskPolicy mb = m;
                  layout.attach(mb, bq, bk);
                  fn(mb, layout, lq, lk);
                  if (::testing::Test::HasFatalFailure()) return;
                }
              }
            }
          }
        }
      }
    }
  }
}

std::string describe_blocks(const MaskPolicy& m, int lq, int lk) {
  return describe(m, lq, lk) + " blocks " + std::to_string(m.block_q) + "x" +
         std::to_string(m.block_k);
}

TEST(MaskPolicyBlocks, VisibleAndCountMatchBruteForce) {
  std::int64_t checked = 0;
  for_each_block_mask([&](const MaskPolicy& m, const Layout& l, int lq, int lk) {
    check_visible_and_count(m, brute_matrix_blocks(m, l, m.block_q, m.block_k, lq, lk), lq, lk,
                            describe_blocks(m, lq, lk), checked);
  });
  EXPECT_GT(checked, 100000);
}

// key_range holds every key some row sees (need not be tight with blocks); tile_any_visible is
// exact; tile_fully_visible is never wrongly true.
TEST(MaskPolicyBlocks, BlockRangesAndTilesMatchBruteForce) {
  for_each_block_mask([&](const MaskPolicy& m, const Layout& l, int lq, int lk) {
    check_row_blocks(
        m, brute_matrix_blocks(m, l, m.block_q, m.block_k, lq, lk), lq, lk,
        describe_blocks(m, lq, lk),
        [&](const KeyRange& r, const std::vector<bool>& seen, const std::string& where) {
          for (int j = 0; j < lk; ++j) {
            if (seen[j]) {
              ASSERT_TRUE(r.begin <= j && j < r.end)
                  << where << " key " << j << " outside [" << r.begin << ", " << r.end << ")";
            }
          }
        });
  });
}

// A layout with every block on changes nothing: every method answers as without a layout.
TEST(MaskPolicyBlocks, AllOnLayoutIsNoLayout) {
  for_each_mask([&](const MaskPolicy& m, int lq, int lk) {
    if (lq > 8 || lk > 8 || m.window_left == INT_MAX || m.global_tokens == 13) return;  // smaller
    for (auto [bq, bk] : {std::pair{1, 1}, std::pair{3, 2}, std::pair{16, 16}}) {
      const int nq = (lq + bq - 1) / bq, nk = (lk + bk - 1) / bk;
      const Layout all(nq, std::max(nk, 1), 1.0, 7);
      MaskPolicy mb = m;
      all.attach(mb, bq, bk);
      const std::string where = describe_blocks(mb, lq, lk);
      for (int a = 0; a < lq; ++a) {
        ASSERT_EQ(mb.visible_count(a, lq, lk), m.visible_count(a, lq, lk)) << where;
        for (int b = a; b < lq; ++b) {
          const KeyRange r = mb.key_range(a, b, lq, lk), r0 = m.key_range(a, b, lq, lk);
          ASSERT_TRUE(r.empty() ? r0.empty() : r.begin == r0.begin && r.end == r0.end) << where;
          for (int c = 0; c < lk; ++c) {
            for (int d = c; d < lk; ++d) {
              ASSERT_EQ(mb.tile_any_visible(a, b, c, d, lq, lk),
                        m.tile_any_visible(a, b, c, d, lq, lk))
                  << where;
              ASSERT_EQ(mb.tile_fully_visible(a, b, c, d, lq, lk),
                        m.tile_fully_visible(a, b, c, d, lq, lk))
                  << where;
            }
          }
        }
      }
    }
  });
}

// Tiles whose blocks are all off are skipped even where the position mask sees everything, and
// fully visible tiles inside on blocks need no mask.
TEST(MaskPolicyBlocks, TilesFollowTheLayout) {
  // 4 x 4 blocks of 64: a diagonal band (r == c) plus block column 0.
  std::vector<unsigned char> layout(16, 0);
  for (int r = 0; r < 4; ++r) layout[r * 4 + r] = layout[r * 4] = 1;
  MaskPolicy m;
  m.blocks = layout.data();
  m.block_q = m.block_k = 64;
  m.block_row_stride = 4;
  m.block_col_stride = 1;
  const int s = 256;
  EXPECT_TRUE(m.tile_any_visible(128, 191, 0, 63, s, s));
  EXPECT_TRUE(m.tile_fully_visible(128, 191, 0, 63, s, s));
  EXPECT_FALSE(m.tile_any_visible(128, 191, 64, 127, s, s));
  EXPECT_TRUE(m.tile_fully_visible(128, 191, 128, 191, s, s));
  EXPECT_FALSE(m.tile_fully_visible(128, 191, 64, 191, s, s));  // overlaps an off block
  EXPECT_FALSE(m.tile_any_visible(128, 191, 192, 255, s, s));
  EXPECT_EQ(m.visible_count(130, s, s), 128);
  const KeyRange r = m.key_range(192, 255, s, s);
  EXPECT_EQ(r.begin, 0);
  EXPECT_EQ(r.end, 256);
  m.causal = true;
  EXPECT_EQ(m.visible_count(130, s, s), 64 + 3);  // block column 0 and keys 128..130
  EXPECT_EQ(m.key_range(0, 63, s, s).end, 64);
  layout[0] = 0;  // row block 0 all off
  EXPECT_TRUE(m.key_range(0, 63, s, s).empty());
  EXPECT_EQ(m.visible_count(10, s, s), 0);
}

TEST(MaskPolicyBlocks, FwdParamsPickTheHeadsLayout) {
  // 2 heads, 2 x 2 blocks of 16 (32 x 32 tokens): head 0 the diagonal, head 1 all on.
  const unsigned char layout[8] = {1, 0, 0, 1, 1, 1, 1, 1};
  FwdParams p;
  p.batch = 1;
  p.hq = 2;
  p.hkv = 1;
  p.head_dim = 64;
  p.seqlen_q = p.seqlen_k = 32;
  EXPECT_TRUE(p.dense_or_causal());
  p.block_layout = layout;
  p.block_q = p.block_k = 16;
  p.block_head_stride = 4;
  p.block_row_stride = 2;
  p.block_col_stride = 1;
  EXPECT_TRUE(p.has_block_layout());
  EXPECT_FALSE(p.dense_or_causal());  // keeps block-sparse calls off the dense-only kernels
  p.window_left = 4;
  EXPECT_FALSE(p.banded());  // and a window with a layout
  p.window_left = -1;
  EXPECT_FALSE(p.mask().has_blocks());
  EXPECT_EQ(p.mask(0).blocks, layout);
  EXPECT_EQ(p.mask(1).blocks, layout + 4);
  EXPECT_EQ(p.visible_keys(20, 32, 32, 0), 16);
  EXPECT_EQ(p.visible_keys(20, 32, 32, 1), 32);
  EXPECT_DOUBLE_EQ(attention_flops(p), 4.0 * (32 * 16 + 32 * 32) * 64);
  p.block_head_stride = 0;  // shared: head 0's layout for both
  EXPECT_EQ(p.visible_keys(20, 32, 32, 1), 16);
  EXPECT_DOUBLE_EQ(attention_flops(p), 4.0 * (32 * 16) * 2 * 64);
  p.causal = true;
  EXPECT_DOUBLE_EQ(attention_flops(p), 4.0 * (2 * (16 * 17 / 2)) * 2 * 64);
}

}  // namespace
}  // namespace gpuattn
