// The `auto` sparsity policy (gpuattn/sparsity.h): its decisions at 4K, 128K and 512K tokens, with
// plenty and with little free memory, its estimates, and its request checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <random>
#include <string>

#include "core/mask.h"
#include "gpuattn/sparsity.h"

namespace gpuattn {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;
constexpr std::int64_t kMiB = std::int64_t{1} << 20;

// B1 H16 D128 bf16, causal: the long-context shape of issue 5.
SparsityRequest request(std::int64_t seqlen, std::int64_t free = 80 * kGiB) {
  SparsityRequest r;
  r.seqlen = seqlen;
  r.heads = 16;
  r.head_dim = 128;
  r.dtype_bytes = 2;
  r.free_memory_bytes = free;
  return r;
}

// Q, K, V, O (bf16) and the fp32 LSE of request(seqlen).
std::int64_t io_bytes(std::int64_t seqlen) {
  return seqlen * 16 * 128 * 2 * 4 + seqlen * 16 * 4;
}

void expect_reason(const SparsityChoice& c, std::initializer_list<std::string> needles) {
  for (const std::string& n : needles) {
    EXPECT_NE(c.reason.find(n), std::string::npos)
        << "reason '" << c.reason << "' lacks '" << n << "'";
  }
}

TEST(Sparsity, ShortSequenceIsDense) {
  for (std::optional<int> hint : {std::optional<int>{}, std::optional<int>{1024}}) {
    SparsityRequest r = request(4096);
    r.window_hint = hint;
    const SparsityChoice c = choose_sparsity(r);
    EXPECT_EQ(c.mode, SparsityMode::dense) << c.reason;
    EXPECT_TRUE(c.fits);
    EXPECT_EQ(c.window_left, -1);
    EXPECT_EQ(c.block_size, 0);
    EXPECT_EQ(c.dense.bytes, io_bytes(4096));
    EXPECT_DOUBLE_EQ(c.dense.visible_pairs, 16.0 * 4096 * 4097 / 2);
    expect_reason(c, {"dense", "S = 4096", "max_dense_seqlen 32768", "64.2 MiB", "80.00 GiB free"});
  }
}

TEST(Sparsity, LongSequenceWithWindowHintIsSlidingWindow) {
  for (std::int64_t s : {std::int64_t{131072}, std::int64_t{524288}}) {
    SparsityRequest r = request(s);
    r.window_hint = 4096;
    r.global_tokens = 128;
    const SparsityChoice c = choose_sparsity(r);
    EXPECT_EQ(c.mode, SparsityMode::sliding_window) << c.reason;
    EXPECT_TRUE(c.fits);
    EXPECT_EQ(c.window_left, 4096);
    EXPECT_EQ(c.window_right, 0);
    EXPECT_EQ(c.global_tokens, 128);
    EXPECT_EQ(c.sliding_window.bytes, io_bytes(s));
    // Each row sees at most 4097 window keys and 128 globals: linear in S.
    EXPECT_LE(c.sliding_window.visible_pairs, 16.0 * s * (4097 + 128));
    EXPECT_GT(c.sliding_window.visible_pairs, 16.0 * (s - 8192) * (4097 + 128));
    EXPECT_LT(c.sliding_window.visible_pairs * 10, c.dense.visible_pairs);
    expect_reason(c, {"sliding_window (4096, 0) + 128 global tokens", "S = " + std::to_string(s),
                      "window hint"});
  }
  SparsityRequest r = request(131072);  // non-causal: the window reaches both ways
  r.causal = false;
  r.window_hint = 512;
  const SparsityChoice c = choose_sparsity(r);
  EXPECT_EQ(c.mode, SparsityMode::sliding_window);
  EXPECT_EQ(c.window_left, 512);
  EXPECT_EQ(c.window_right, 512);
}

TEST(Sparsity, LongSequenceWithoutHintIsBlockSparse) {
  struct Want {
    std::int64_t s;
    double density;
    std::int64_t layout;  // 16 heads x (S / 128)^2 bytes
  };
  for (const Want w : {Want{131072, 0.25, 16 * 1024 * 1024}, Want{524288, 0.0625, 256 * kMiB}}) {
    const SparsityChoice c = choose_sparsity(request(w.s));
    EXPECT_EQ(c.mode, SparsityMode::block_sparse) << c.reason;
    EXPECT_TRUE(c.fits);
    EXPECT_EQ(c.block_size, 128);
    EXPECT_DOUBLE_EQ(c.max_block_density, w.density);
    EXPECT_EQ(c.block_sparse.bytes, io_bytes(w.s) + w.layout);
    EXPECT_DOUBLE_EQ(c.block_sparse.visible_pairs, w.density * c.dense.visible_pairs);
    expect_reason(c, {"block_sparse (block 128", "no window hint", "for the layout"});
  }
}

// 512K tokens: Q, K, V, O fit, the 256 MiB layout does not: a sliding window with the same work
// budget instead.
TEST(Sparsity, LayoutThatDoesNotFitFallsBackToWindow) {
  const std::int64_t s = 524288;
  const SparsityChoice c = choose_sparsity(request(s, io_bytes(s) + 128 * kMiB));
  EXPECT_EQ(c.mode, SparsityMode::sliding_window) << c.reason;
  EXPECT_TRUE(c.fits);
  EXPECT_FALSE(c.block_sparse.fits);
  EXPECT_TRUE(c.dense.fits);        // memory is O(N) for dense too; the length rules it out
  EXPECT_EQ(c.window_left, 16383);  // 16384 keys per row, as dense causal at 32K averages
  EXPECT_EQ(c.window_right, 0);
  expect_reason(c, {"block-sparse layout (256.0 MiB", "does not fit"});

  SparsityRequest r = request(131072, io_bytes(131072) + kMiB);
  r.causal = false;
  const SparsityChoice nc = choose_sparsity(r);
  EXPECT_EQ(nc.mode, SparsityMode::sliding_window) << nc.reason;
  EXPECT_EQ(nc.window_left, 16384);
  EXPECT_EQ(nc.window_right, 16384);
}

// Not even Q, K, V, O fit: the length still picks the mode, and fits = false says so.
TEST(Sparsity, SmallFreeMemoryFitsNothing) {
  for (std::int64_t s : {std::int64_t{4096}, std::int64_t{131072}, std::int64_t{524288}}) {
    for (std::optional<int> hint : {std::optional<int>{}, std::optional<int>{4096}}) {
      SparsityRequest r = request(s, 32 * kMiB);
      r.window_hint = hint;
      const SparsityChoice c = choose_sparsity(r);
      EXPECT_FALSE(c.fits) << c.reason;
      EXPECT_FALSE(c.dense.fits);
      EXPECT_FALSE(c.sliding_window.fits);
      EXPECT_FALSE(c.block_sparse.fits);
      EXPECT_EQ(c.mode, s == 4096 ? SparsityMode::dense : SparsityMode::sliding_window) << c.reason;
      expect_reason(c, {"DOES NOT FIT", "32.0 MiB free", "shard the sequence"});
    }
  }
}

TEST(Sparsity, DenseWhenTheBudgetOrTheWindowCoversTheSequence) {
  SparsityRequest r = request(131072);
  r.max_dense_seqlen = 131072;
  EXPECT_EQ(choose_sparsity(r).mode, SparsityMode::dense);
  r = request(131072);
  r.window_hint = 131071;
  const SparsityChoice c = choose_sparsity(r);
  EXPECT_EQ(c.mode, SparsityMode::dense) << c.reason;
  expect_reason(c, {"reaches across the whole sequence"});
}

// GQA shrinks K and V in the estimate; the batch multiplies everything.
TEST(Sparsity, EstimatesFollowHeadsAndBatch) {
  SparsityRequest r = request(4096);
  r.kv_heads = 2;
  r.batch = 3;
  const SparsityChoice c = choose_sparsity(r);
  EXPECT_EQ(c.dense.bytes, 3 * (4096 * (2 * 16 + 2 * 2) * 128 * 2 + 16 * 4096 * 4));
  EXPECT_DOUBLE_EQ(c.dense.visible_pairs, 3 * 16.0 * 4096 * 4097 / 2);
}

// The byte estimate in 64 bits from the first product: 2 x heads and batch x heads were int
// products (2^30 heads gave 4 GiB for 12, and fit a 5 GiB budget).
TEST(Sparsity, EstimatesDoNotWrapAtLargeCounts) {
  SparsityRequest r = request(1);
  r.heads = 1 << 30;
  r.head_dim = 1;
  r.dtype_bytes = 1;
  r.free_memory_bytes = std::int64_t{5} << 30;
  const SparsityChoice c = choose_sparsity(r);
  // Q, O, K, V: 4 x 2^30 one-byte elements; the fp32 LSE: 2^30 x 4 bytes.
  EXPECT_EQ(c.dense.bytes, (std::int64_t{4} << 30) + (std::int64_t{4} << 30));
  EXPECT_FALSE(c.dense.fits);
}

// The sliding-window estimate's pairs, row by row: the mask choose_sparsity builds (its window
// rule written out again), counted by MaskPolicy::visible_count, summed into a double.
double brute_window_pairs(const SparsityRequest& r) {
  const int s = static_cast<int>(r.seqlen);
  MaskPolicy m;
  m.causal = r.causal;
  if (r.window_hint) {
    m.window_left = *r.window_hint;
  } else {
    const std::int64_t wide = r.max_dense_seqlen;
    m.window_left = static_cast<int>(
        std::min<std::int64_t>(r.causal ? std::max<std::int64_t>(wide / 2 - 1, 0) : wide / 2, s));
  }
  m.window_right = r.causal ? 0 : m.window_left;
  m.global_tokens = r.global_tokens;
  double n = 0;
  for (int i = 0; i < s; ++i) n += m.visible_count(i, s, s);
  return n;
}

// The sliding-window estimate in closed form equals the row-by-row count exactly (every sum here
// is below 2^53, where the double loop is exact), edges included: one token, window 0, windows
// and global tokens reaching past the sequence, no global tokens, no hint.
TEST(Sparsity, SlidingWindowPairsMatchTheRowByRowCount) {
  std::mt19937 rng(20261207);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int t = 0; t < 4000; ++t) {
    const int s = t < 40 ? 1 + t % 4 : (pick(0, 3) == 0 ? pick(1, 8) : pick(1, 3000));
    SparsityRequest r = request(s);
    r.heads = 1;
    r.causal = pick(0, 1) == 1;
    switch (pick(0, 6)) {
      case 0: break;  // no hint: the window follows max_dense_seqlen
      case 1: r.window_hint = 0; break;
      case 2: r.window_hint = s - 1; break;
      case 3: r.window_hint = s + pick(0, 5); break;
      case 4: r.window_hint = INT_MAX; break;
      default: r.window_hint = pick(0, s); break;
    }
    r.max_dense_seqlen = pick(0, 2) == 0 ? pick(1, 4) : pick(1, 2 * s + 2);
    switch (pick(0, 4)) {
      case 0: r.global_tokens = 0; break;
      case 1: r.global_tokens = s + pick(-1, 3); break;
      case 2: r.global_tokens = INT_MAX; break;
      default: r.global_tokens = pick(0, s); break;
    }
    const SparsityChoice c = choose_sparsity(r);
    ASSERT_EQ(c.sliding_window.visible_pairs, brute_window_pairs(r))
        << "S " << s << (r.causal ? " causal" : "") << " hint "
        << (r.window_hint ? std::to_string(*r.window_hint) : "none") << " max_dense_seqlen "
        << r.max_dense_seqlen << " global " << r.global_tokens;
  }
  // Longer sequences, still exact in a double (S^2 < 2^53).
  for (const int s : {65537, 1 << 20}) {
    for (const bool causal : {true, false}) {
      SparsityRequest r = request(s);
      r.heads = 1;
      r.causal = causal;
      r.window_hint = 4095;
      r.global_tokens = 129;
      EXPECT_EQ(choose_sparsity(r).sliding_window.visible_pairs, brute_window_pairs(r))
          << "S " << s << (causal ? " causal" : "");
    }
  }
}

// The longest sequence choose_sparsity takes: the estimate does not walk its 2^30 rows (a row
// loop took 2.7 s here, 2026-12).
TEST(Sparsity, LongestSequenceIsQuick) {
  SparsityRequest r = request((std::int64_t{1} << 30) - 1, std::int64_t{1} << 50);
  r.window_hint = 4096;
  r.global_tokens = 128;
  const auto t0 = std::chrono::steady_clock::now();
  const SparsityChoice c = choose_sparsity(r);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(c.mode, SparsityMode::sliding_window) << c.reason;
  EXPECT_LT(seconds, 0.5);
  const double s = double(r.seqlen);
  EXPECT_LE(c.sliding_window.visible_pairs, 16.0 * s * (4097 + 128));
  EXPECT_GT(c.sliding_window.visible_pairs, 16.0 * (s - 8192) * (4097 + 128));
}

TEST(Sparsity, BadRequests) {
  auto expect_bad = [](const SparsityRequest& r, const std::string& needle) {
    try {
      choose_sparsity(r);
      ADD_FAILURE() << "no error; expected one naming '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(ErrorCode::invalid_argument));
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  SparsityRequest r = request(0);
  expect_bad(r, "seqlen is 0");
  r = request(4096);
  r.heads = 0;
  expect_bad(r, "heads is 0");
  r = request(4096);
  r.kv_heads = 3;
  expect_bad(r, "kv_heads 3 does not divide heads 16");
  r = request(4096);
  r.block_size = 40;
  expect_bad(r, "block_size 40");
  r = request(4096, -1);
  expect_bad(r, "free_memory_bytes -1");
  r = request(4096);
  r.window_hint = -5;
  expect_bad(r, "window_hint -5");
  r = request(std::int64_t{1} << 31);
  expect_bad(r, "exceeds 2^30");
  r = request(std::int64_t{1} << 29);  // 2^29 tokens x 2^30 heads x D 2^20: no int64 holds it
  r.heads = r.kv_heads = 1 << 30;
  r.head_dim = 1 << 20;
  expect_bad(r, "beyond what the estimates can count");
  EXPECT_STREQ(to_string(SparsityMode::block_sparse), "block_sparse");
}

}  // namespace
}  // namespace gpuattn
