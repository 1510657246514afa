// Sequence-parallel attention on the CPU backend's ranks: every strategy and layout against the
// fp64 reference of the whole sequence, and every bad call named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "common/expect_error.h"
#include "common/random_cases.h"
#include "dist/dist_test_util.h"
#include "gpuattn/distributed.h"

namespace gpuattn::testing {
namespace {

// Runs p on a CPU group; returns the comparison with the reference.
Comparison run_cpu(const SpProblem& p, Precision precision = Precision::standard,
                   std::optional<float> scale = std::nullopt, const MaskSpec& mask = {}) {
  SpData d = make_data(p);
  const RankGroup g = RankGroup::local_cpu(p.world, 2);
  SequenceParallelArgs args;
  args.layout = p.layout;
  args.strategy = p.strategy;
  for (int r = 0; r < p.world; ++r) {
    AttentionArgs a = tensor_args(d.sq[r], d.sk[r], d.sv[r], d.sout[r], &d.slse[r]);
    a.causal = p.causal;
    a.precision = precision;
    a.softmax_scale = scale;
    a.mask = mask;
    args.shards.push_back(a);
  }
  sequence_parallel_attention(g, args);
  const Assembled a = assemble(p, d.sout, d.slse);
  HostTensor out_unused(p.dtype, {p.batch, p.seq(), p.hq, p.head_dim});
  AttentionArgs ra = tensor_args(d.q, d.k, d.v, out_unused);
  ra.causal = p.causal;
  ra.softmax_scale = scale;
  ra.mask = mask;
  const ReferenceResult ref = reference_attention(ra);
  const std::int64_t S = p.seq();
  return compare(ref, a.out, p.hq, p.head_dim, &a.lse,
                 [&](std::int64_t row, int h) { return (row / S * p.hq + h) * S + row % S; });
}

using Case = std::tuple<int, ShardLayout, SeqParallelStrategy, bool>;

class SequenceParallelCpu : public ::testing::TestWithParam<Case> {};

TEST_P(SequenceParallelCpu, MatchesTheWholeSequenceReference) {
  SpProblem p;
  std::tie(p.world, p.layout, p.strategy, p.causal) = GetParam();
  p.batch = 2;
  p.rows = 74;  // two chunks of 37: not a multiple of any tile
  p.hq = 4;
  p.hkv = 2;
  if (p.strategy == SeqParallelStrategy::head_parallel) {  // heads split over the ranks
    p.hq = 2 * p.world;
    p.hkv = p.world;
  }
  p.seed = 100 + p.world;
  const Comparison c = run_cpu(p);
  EXPECT_EQ(c.nonfinite, 0);
  EXPECT_LT(c.rel_err, 2e-6);
  EXPECT_LT(c.lse_rel, 2e-6);
}

INSTANTIATE_TEST_SUITE_P(
    All, SequenceParallelCpu,
    ::testing::Combine(::testing::Values(1, 2, 3, 4),
                       ::testing::Values(ShardLayout::contiguous, ShardLayout::zigzag),
                       ::testing::Values(SeqParallelStrategy::ring, SeqParallelStrategy::all_gather,
                                         SeqParallelStrategy::head_parallel),
                       ::testing::Bool()),
    [](const ::testing::TestParamInfo<Case>& i) {
      return "W" + std::to_string(std::get<0>(i.param)) + "_" + to_string(std::get<1>(i.param)) +
             "_" + to_string(std::get<2>(i.param)) + (std::get<3>(i.param) ? "_causal" : "_full");
    });

// A shard's out may be its own q (distributed.h): every strategy, layout and mask kind gives the
// whole-sequence result in q's memory.
TEST(SequenceParallelCpu, OutInPlaceOfQ) {
  for (const SeqParallelStrategy st : {SeqParallelStrategy::ring, SeqParallelStrategy::all_gather,
                                       SeqParallelStrategy::head_parallel}) {
    for (const ShardLayout layout : {ShardLayout::contiguous, ShardLayout::zigzag}) {
      for (const bool causal : {false, true}) {
        SpProblem p;
        p.world = 2;
        p.rows = 10;
        p.hq = 4;
        p.hkv = 2;
        p.causal = causal;
        p.layout = layout;
        p.strategy = st;
        p.seed = 77;
        SCOPED_TRACE(std::string(to_string(st)) + " " + to_string(layout) +
                     (causal ? " causal" : ""));
        SpData d = make_data(p);
        SequenceParallelArgs args;
        args.layout = layout;
        args.strategy = st;
        for (int r = 0; r < p.world; ++r) {
          AttentionArgs a = tensor_args(d.sq[r], d.sk[r], d.sv[r], d.sq[r], &d.slse[r]);
          a.causal = causal;
          args.shards.push_back(a);
        }
        sequence_parallel_attention(RankGroup::local_cpu(p.world, 1), args);
        const Assembled got = assemble(p, d.sq, d.slse);
        const Comparison c = compare_global(p, d, got);
        EXPECT_EQ(c.nonfinite, 0);
        EXPECT_LT(c.rel_err, 2e-6);
        EXPECT_LT(c.lse_rel, 2e-6);
      }
    }
  }
}

TEST(SequenceParallelCpu, SixteenBitRingMergesInFp32) {
  for (DType t : {DType::f16, DType::bf16}) {
    SpProblem p;
    p.world = 3;
    p.rows = 42;
    p.hq = 6;
    p.hkv = 1;  // MQA
    p.head_dim = 128;
    p.dtype = t;
    p.causal = true;
    p.layout = ShardLayout::zigzag;
    const Comparison c = run_cpu(p);
    EXPECT_EQ(c.nonfinite, 0) << to_string(t);
    // One rounding of the output to 16 bits (the partial results merge in fp32): the same error
    // as a single-rank call.
    EXPECT_LT(c.rel_err, t == DType::f16 ? 1e-3 : 8e-3) << to_string(t);
    EXPECT_LT(c.lse_rel, 1e-5) << to_string(t);
  }
}

// automatic: head_parallel where the heads divide over the ranks (4 and 2 over 2), ring where
// they do not (3 over 2): both match the reference.
TEST(SequenceParallelCpu, AutomaticStrategy) {
  using S = SeqParallelStrategy;
  EXPECT_EQ(resolve_strategy(S::automatic, 4, 2, 2), S::head_parallel);
  EXPECT_EQ(resolve_strategy(S::automatic, 3, 1, 2), S::ring);
  EXPECT_EQ(resolve_strategy(S::automatic, 8, 2, 4), S::ring);  // kv heads 2 over 4 ranks
  EXPECT_EQ(resolve_strategy(S::all_gather, 4, 2, 2), S::all_gather);
  for (int hkv : {2, 1}) {
    SpProblem p;
    p.world = 2;
    p.rows = 24;
    p.hq = hkv == 2 ? 4 : 3;
    p.hkv = hkv;
    p.causal = true;
    p.layout = ShardLayout::zigzag;
    p.strategy = SeqParallelStrategy::automatic;
    const Comparison c = run_cpu(p);
    EXPECT_EQ(c.nonfinite, 0);
    EXPECT_LT(c.rel_err, 2e-6) << "hkv " << hkv;
    EXPECT_LT(c.lse_rel, 2e-6) << "hkv " << hkv;
  }
}

// Sliding windows and global tokens over global positions: head_parallel with any of them,
// all_gather with the causal ones, both layouts, against the reference of the whole sequence.
TEST(SequenceParallelCpu, WindowsAndGlobalTokensOverGlobalPositions) {
  struct Mask {
    bool causal;
    MaskSpec spec;
  };
  const Mask masks[] = {{true, make_mask(37, 0)},
                        {true, make_mask(20, -1, 5)},
                        {true, make_mask(10, 0, 0, 16)},
                        {false, make_mask(17, 9)},
                        {false, make_mask(8, 8, 3)}};
  for (const Mask& m : masks) {
    for (auto layout : {ShardLayout::contiguous, ShardLayout::zigzag}) {
      for (auto strategy : {SeqParallelStrategy::head_parallel, SeqParallelStrategy::all_gather}) {
        if (!m.causal && strategy == SeqParallelStrategy::all_gather) continue;
        SpProblem p;
        p.world = 3;
        p.batch = 2;
        p.rows = 52;
        p.hq = 6;
        p.hkv = 3;
        p.causal = m.causal;
        p.layout = layout;
        p.strategy = strategy;
        const Comparison c = run_cpu(p, Precision::standard, std::nullopt, m.spec);
        const std::string what = std::string(to_string(layout)) + " " + to_string(strategy) +
                                 " window (" + std::to_string(m.spec.window_left) + ", " +
                                 std::to_string(m.spec.window_right) + ") global " +
                                 std::to_string(m.spec.global_tokens) + "/" +
                                 std::to_string(m.spec.global_stride);
        EXPECT_EQ(c.nonfinite, 0) << what;
        EXPECT_LT(c.rel_err, 2e-6) << what;
        EXPECT_LT(c.lse_rel, 2e-6) << what;
      }
    }
  }
}

// A causal call whose window is only on the right (left unbounded) is plain causal: every
// strategy runs it, the ring included (it was refused there as a window), and the ring's blocks
// off the diagonal, which run without causal, do not take the right window in their own
// coordinates.
TEST(SequenceParallelCpu, ACausalRightWindowIsPlainCausal) {
  for (const int right : {0, 5}) {
    for (auto strategy : {SeqParallelStrategy::ring, SeqParallelStrategy::all_gather,
                          SeqParallelStrategy::head_parallel, SeqParallelStrategy::automatic}) {
      for (auto layout : {ShardLayout::contiguous, ShardLayout::zigzag}) {
        SpProblem p;
        p.world = 3;
        p.batch = 2;
        p.rows = 52;
        p.hq = 6;
        p.hkv = 3;
        p.causal = true;
        p.layout = layout;
        p.strategy = strategy;
        const Comparison c = run_cpu(p, Precision::standard, std::nullopt, make_mask(-1, right));
        const std::string what = std::string(to_string(layout)) + " " + to_string(strategy) +
                                 " right window " + std::to_string(right);
        EXPECT_EQ(c.nonfinite, 0) << what;
        EXPECT_LT(c.rel_err, 2e-6) << what;
        EXPECT_LT(c.lse_rel, 2e-6) << what;
      }
    }
  }
}

TEST(SequenceParallelCpu, CompensatedPrecisionAndACustomScale) {
  SpProblem p;
  p.world = 4;
  p.rows = 20;
  p.causal = true;
  p.layout = ShardLayout::zigzag;
  const Comparison c = run_cpu(p, Precision::compensated, 0.37f);
  EXPECT_EQ(c.nonfinite, 0);
  EXPECT_LT(c.rel_err, 2e-6);
  EXPECT_LT(c.lse_rel, 2e-6);
}

// GPUATTN_FUZZ_CASES random calls (default 60) from GPUATTN_FUZZ_SEED (a fixed default; another
// seed explores; tests/common/random_cases.h): 1-4 ranks, both layouts, every strategy (automatic
// among them), causal or not, f32 / f16 / bf16, every head dim, GQA and MQA, rows a rank from 2 to
// 90 (odd ones on the contiguous layout), windows and global tokens where the strategy takes them,
// compensated precision, a custom scale.
TEST(SequenceParallelCpu, RandomCallsMatchTheWholeSequenceReference) {
  const FuzzRun run = FuzzRun::from_env(kDefaultFuzzSeed, 60);
  Dice d(run.seed);
  for (int i = 0; i < run.cases; ++i) {
    SpProblem p;
    p.world = d.between(1, 4);
    p.layout = d.chance(0.5) ? ShardLayout::zigzag : ShardLayout::contiguous;
    p.strategy = d.one_of({SeqParallelStrategy::ring, SeqParallelStrategy::all_gather,
                           SeqParallelStrategy::head_parallel, SeqParallelStrategy::automatic});
    p.causal = d.chance(0.6);
    p.dtype = d.one_of({DType::f32, DType::f16, DType::bf16});
    p.head_dim = d.one_of({64, 128, 256});
    p.batch = d.between(1, 2);
    p.rows = d.between(1, 45) * 2 - (p.layout == ShardLayout::contiguous && d.chance(0.5) ? 1 : 0);
    p.hkv = d.one_of({1, 2, 4});
    p.hq = p.hkv * d.one_of({1, 2, 3});
    if (p.strategy == SeqParallelStrategy::head_parallel) {  // heads a multiple of the ranks
      p.hkv = p.world * d.between(1, 2);
      p.hq = p.hkv * d.one_of({1, 2});
    }
    const SeqParallelStrategy resolved =
        resolve_strategy(p.strategy, p.hq, p.hkv, p.world, true, p.causal);
    MaskSpec mask;
    const bool maskable = p.world == 1 || resolved == SeqParallelStrategy::head_parallel ||
                          (resolved == SeqParallelStrategy::all_gather && p.causal);
    if (maskable && d.chance(0.4)) {
      mask.window_left = d.chance(0.2) ? -1 : d.between(0, 120);
      mask.window_right = d.chance(0.5) ? 0 : d.between(0, 60);
      if (d.chance(0.4)) {
        mask.global_tokens = d.between(0, 8);
        mask.global_stride = d.chance(0.5) ? d.between(5, 70) : 0;
      }
    }
    const Precision precision = d.chance(0.2) ? Precision::compensated : Precision::standard;
    const std::optional<float> scale =
        d.chance(0.2) ? std::optional<float>(0.05f * d.between(1, 10)) : std::nullopt;
    p.seed = run.case_seed(i);
    std::ostringstream what;
    what << run.where(i) << ": W" << p.world << ' ' << to_string(p.layout) << ' '
         << to_string(p.strategy) << (p.causal ? " causal " : " full ") << to_string(p.dtype)
         << " B" << p.batch << " rows " << p.rows << " Hq" << p.hq << " Hkv" << p.hkv << " D"
         << p.head_dim << " window (" << mask.window_left << ", " << mask.window_right << ") G"
         << mask.global_tokens << "/" << mask.global_stride << ' ' << to_string(precision)
         << " scale " << (scale ? *scale : 0.f);
    SCOPED_TRACE(what.str());
    const Comparison c = run_cpu(p, precision, scale, mask);
    EXPECT_EQ(c.nonfinite, 0);
    // 16 bits: one rounding of the output, the partial results merged in fp32 (as a single-rank
    // call); f32: the merges' own rounding, and the logits' (relative to |q| |k|, so the bound
    // grows with a scale above 1 / sqrt(D): seed 101 met lse 2.3e-6 against 2e-6 at D256, scale
    // 0.35, a single rank).
    const double f32_tol = 2e-6 * std::max(1.0, scale ? *scale * std::sqrt(p.head_dim) : 1.0);
    EXPECT_LT(c.rel_err, p.dtype == DType::f32 ? f32_tol : p.dtype == DType::f16 ? 1e-3 : 8e-3);
    EXPECT_LT(c.lse_rel, p.dtype == DType::f32 ? f32_tol : 1e-5);
  }
}

// Shards that are views into larger tensors (padded head strides, out and lse included),
// lse absent on rank 0, under every strategy: out and lse match the reference and nothing outside
// the views is written.
TEST(SequenceParallelCpu, StridedShardsAndAnAbsentLse) {
  for (auto strategy : {SeqParallelStrategy::ring, SeqParallelStrategy::all_gather,
                        SeqParallelStrategy::head_parallel}) {
    SCOPED_TRACE(to_string(strategy));
    SpProblem p;
    p.world = 2;
    p.rows = 30;
    p.causal = true;
    p.layout = ShardLayout::zigzag;
    SpData d = make_data(p);
    const int pad = 16;
    std::vector<HostTensor> keep;
    keep.reserve(9);
    // A [.., n] tensor inside a poisoned [.., n + pad] one.
    auto padded = [&](const HostTensor& t) {
      std::vector<std::int64_t> shape = t.shape;
      const std::int64_t n = shape.back();
      shape.back() += pad;
      keep.emplace_back(t.dtype, shape);
      HostTensor& big = keep.back();
      big.poison();
      for (std::int64_t i = 0; i < t.numel() / n; ++i) {
        for (std::int64_t e = 0; e < n; ++e) big.set(i * (n + pad) + e, t.get(i * n + e));
      }
      TensorView v = big.view();
      v.shape[v.rank - 1] = n;
      return v;
    };
    SequenceParallelArgs args;
    args.strategy = strategy;
    args.layout = p.layout;
    for (int r = 0; r < 2; ++r) {
      AttentionArgs a;
      a.q = padded(d.sq[r]);
      a.k = padded(d.sk[r]);
      a.v = padded(d.sv[r]);
      a.out = padded(d.sout[r]);
      if (r == 1) a.lse = padded(d.slse[r]);
      a.causal = true;
      args.shards.push_back(a);
    }
    sequence_parallel_attention(RankGroup::local_cpu(2, 1), args);
    const HostTensor* outs[2] = {&keep[3], &keep[7]};
    const HostTensor& lse1 = keep[8];
    const std::int64_t D = p.head_dim, L = p.rows;
    for (int r = 0; r < 2; ++r) {
      for (std::int64_t i = 0; i < d.sout[r].numel() / D; ++i) {
        for (std::int64_t e = 0; e < D + pad; ++e) {
          const float x = outs[r]->get(i * (D + pad) + e);
          if (e < D) {
            d.sout[r].set(i * D + e, x);
          } else {
            ASSERT_TRUE(std::isnan(x)) << "rank " << r << " wrote padding at row " << i;
          }
        }
      }
    }
    for (std::int64_t i = 0; i < d.slse[1].numel() / L; ++i) {
      for (std::int64_t e = 0; e < L + pad; ++e) {
        const float x = lse1.get(i * (L + pad) + e);
        if (e < L) {
          d.slse[1].set(i * L + e, x);
        } else {
          ASSERT_TRUE(std::isnan(x)) << "lse padding written at row " << i;
        }
      }
    }
    // Rank 0 had no lse: give it rank 0's reference values so that the comparison covers out on
    // every row and lse on rank 1's.
    HostTensor unused(p.dtype, {p.batch, p.seq(), p.hq, p.head_dim});
    AttentionArgs ra = tensor_args(d.q, d.k, d.v, unused);
    ra.causal = true;
    const ReferenceResult ref = reference_attention(ra);
    const auto rows0 = shard_rows(p.layout, 2, 0, p.seq());
    for (int h = 0; h < p.hq; ++h) {
      for (std::int64_t i = 0; i < L; ++i) {
        d.slse[0].set(h * L + i, static_cast<float>(ref.lse[rows0[i] * p.hq + h]));
      }
    }
    const Comparison c = compare_global(p, d, assemble(p, d.sout, d.slse));
    EXPECT_EQ(c.nonfinite, 0);
    EXPECT_LT(c.rel_err, 2e-6);
    EXPECT_LT(c.lse_rel, 2e-6);
  }
}

TEST(ShardRows, ContiguousAndZigzag) {
  EXPECT_EQ(shard_rows(ShardLayout::contiguous, 2, 1, 8), (std::vector<std::int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(shard_rows(ShardLayout::zigzag, 2, 0, 8), (std::vector<std::int64_t>{0, 1, 6, 7}));
  EXPECT_EQ(shard_rows(ShardLayout::zigzag, 2, 1, 8), (std::vector<std::int64_t>{2, 3, 4, 5}));
  expect_invalid_argument([] { shard_rows(ShardLayout::zigzag, 2, 0, 6); },
                          "seq_len 6 is not a multiple of 4");
  expect_invalid_argument([] { shard_rows(ShardLayout::contiguous, 2, 2, 8); },
                          "rank 2 is not in [0, 2)");
  expect_invalid_argument([] { shard_rows(ShardLayout::contiguous, 2, 0, -4); },
                          "seq_len -4 is negative");  // it read "not a multiple of 2"
  // 2 x world_size in 64 bits: 2^30 ranks wrapped it negative (no rows, or a bad multiple).
  EXPECT_EQ(shard_rows(ShardLayout::zigzag, 1 << 30, 0, std::int64_t{1} << 31),
            (std::vector<std::int64_t>{0, (std::int64_t{1} << 31) - 1}));
}

// ---- errors ------------------------------------------------------------------------------------

struct BadCall {
  SpProblem p;
  SpData d;
  SequenceParallelArgs args;
  BadCall() {
    p.world = 2;
    p.rows = 8;
    p.causal = true;
    d = make_data(p);
    for (int r = 0; r < 2; ++r) {
      AttentionArgs a = tensor_args(d.sq[r], d.sk[r], d.sv[r], d.sout[r], &d.slse[r]);
      a.causal = true;
      args.shards.push_back(a);
    }
  }
  // The call fails naming `words` and leaves every out and lse as they were (NaN).
  void expect(const std::string& words) {
    expect_invalid_argument([&] { sequence_parallel_attention(RankGroup::local_cpu(2, 1), args); },
                            words);
    for (int r = 0; r < 2; ++r) {
      for (std::int64_t i = 0; i < d.sout[r].numel(); ++i) {
        ASSERT_TRUE(std::isnan(d.sout[r].get(i))) << "rank " << r << " out written at " << i;
      }
      for (std::int64_t i = 0; i < d.slse[r].numel(); ++i) {
        ASSERT_TRUE(std::isnan(d.slse[r].get(i))) << "rank " << r << " lse written at " << i;
      }
    }
  }
};

TEST(SequenceParallelErrors, NamesTheBadShard) {
  {
    BadCall c;
    c.args.shards.pop_back();
    c.expect("1 shards for a group that drives 2 rank(s)");
  }
  {
    BadCall c;
    c.args.shards[1].causal = false;
    c.expect("shards[1].causal is 0 but shards[0]'s is 1");
  }
  {
    BadCall c;
    c.args.shards[1].q.shape[1] = 4;
    c.args.shards[1].out.shape[1] = 4;
    c.args.shards[1].lse.shape[2] = 4;
    c.expect("shards[1]: q holds 4 rows but k holds 8");
  }
  {
    BadCall c;
    for (auto& s : c.args.shards) {
      for (TensorView* t : {&s.q, &s.k, &s.v, &s.out}) t->shape[1] = 7;
      s.lse.shape[2] = 7;
    }
    c.args.layout = ShardLayout::zigzag;
    c.expect("shards hold 7 rows (odd)");
  }
  {
    BadCall c;
    c.args.shards[0].softmax_scale = -1.f;  // the attention call's own validation, prefixed
    c.expect("shards[0]: ");
  }
  {
    BadCall c;
    c.args.shards[1].softmax_scale = 0.5f;
    c.expect("shards[1]: softmax scale 0.5");
  }
  {
    BadCall c;  // 4 q heads, 2 kv heads
    for (auto& s : c.args.shards) {
      s.k.shape[2] = 1;
      s.v.shape[2] = 1;
    }
    c.args.strategy = SeqParallelStrategy::head_parallel;
    c.expect("the shards have 4 q heads and 1 kv heads (each must be a multiple of 2)");
  }
  {
    BadCall c;
    c.args.strategy = static_cast<SeqParallelStrategy>(7);
    c.expect("strategy 7 is not a SeqParallelStrategy");
  }
}

// all_gather's calls over the gathered keys are checked before any rank computes: one key row per
// rank is exempt from the row-stride limit in the shards, but rank 1's call reads two gathered
// rows Hkv x D = 8,388,864 elements apart (past the kernels' 2^23). Rank 0's call passes; before
// the check, it wrote rank 0's out, then rank 1's call failed (a half-written output).
TEST(SequenceParallelErrors, AllGatherChecksEveryCallBeforeAnyWrite) {
  SpProblem p;
  p.world = 2;
  p.rows = 1;
  p.hq = p.hkv = 32769;
  p.head_dim = 256;
  p.dtype = DType::f16;
  p.causal = true;
  p.strategy = SeqParallelStrategy::all_gather;
  SpData d = make_data(p);
  SequenceParallelArgs args;
  args.strategy = p.strategy;
  for (int r = 0; r < 2; ++r) {
    AttentionArgs a = tensor_args(d.sq[r], d.sk[r], d.sv[r], d.sout[r], &d.slse[r]);
    a.causal = true;
    args.shards.push_back(a);
  }
  expect_invalid_argument([&] { sequence_parallel_attention(RankGroup::local_cpu(2, 1), args); },
                          "shards[1]: all_gather's call over the gathered keys (rows 0..0 against "
                          "2 keys): gpuattn::attention_forward: k sequence (row) stride 8388864");
  for (int r = 0; r < 2; ++r) {
    for (std::int64_t i = 0; i < d.sout[r].numel(); i += 4099) {
      ASSERT_TRUE(std::isnan(d.sout[r].get(i))) << "rank " << r << " out written at " << i;
    }
  }
}

TEST(SequenceParallelErrors, UnsupportedFieldsAreNamed) {
  auto expect_not_supported = [](BadCall& c, const std::string& words) {
    try {
      sequence_parallel_attention(RankGroup::local_cpu(2, 1), c.args);
      ADD_FAILURE() << "no error for " << words;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::not_supported) << e.what();
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  BadCall ring;  // a window on the ring
  ring.args.strategy = SeqParallelStrategy::ring;
  for (auto& sh : ring.args.shards) sh.mask.window_left = 16;
  expect_not_supported(ring, "not on the ring");
  BadCall gather;  // a window on a non-causal all_gather call
  gather.args.strategy = SeqParallelStrategy::all_gather;
  for (auto& sh : gather.args.shards) {
    sh.causal = false;
    sh.mask.global_tokens = 2;
  }
  expect_not_supported(gather, "all_gather takes a sliding window or global tokens on causal");
  BadCall s;
  HostTensor used = int32s({4});
  s.args.shards[0].seqused_k = used.view();
  expect_not_supported(s, "shards[0].seqused_k");
  BadCall b;
  HostTensor layout(DType::u8, {1, 1, 1});
  b.args.shards[1].mask.block_sparse = {layout.view(), 64, 64};
  expect_not_supported(b, "shards[1].mask.block_sparse");
  BadCall cap;  // soft-capping: the strategies' partial calls do not carry it
  cap.args.shards[1].softcap = 30.f;
  expect_not_supported(cap, "shards[1].softcap: soft-capping is not supported");
  BadCall nan_cap;
  nan_cap.args.shards[0].softcap = std::numeric_limits<float>::quiet_NaN();
  nan_cap.expect("shards[0].softcap nan must be finite and >= 0");
  BadCall mismatch;  // the window differs between shards
  mismatch.args.shards[1].mask.window_left = 16;
  mismatch.expect("shards[1].mask.window_left is 16 but shards[0]'s is -1");
  // automatic: a causal window with heads that do not split over the ranks takes all_gather.
  EXPECT_EQ(resolve_strategy(SeqParallelStrategy::automatic, 3, 1, 2, true, true),
            SeqParallelStrategy::all_gather);
  EXPECT_EQ(resolve_strategy(SeqParallelStrategy::automatic, 3, 1, 2, true, false),
            SeqParallelStrategy::ring);  // then named as not supported
}

TEST(RankGroupErrors, NamesTheBadValue) {
  expect_invalid_argument([] { RankGroup::local_cpu(0); }, "world_size 0 is not positive");
  expect_invalid_argument([] { RankGroup::local_cpu(2, -1); }, "threads_per_rank -1");
  expect_invalid_argument([] { RankGroup::nccl_from_file("/tmp/x", 3, 2, 0); },
                          "rank 3 is not in [0, 2)");
  expect_invalid_argument([] { RankGroup::nccl_from_file("", 0, 2, 0); },
                          "bootstrap_path is empty");
  expect_invalid_argument([] { RankGroup::local_cuda({0}, Transport::host); },
                          "transport host is not a CUDA transport");
  const RankGroup g = RankGroup::local_cpu(3);
  EXPECT_EQ(g.world_size(), 3);
  EXPECT_EQ(g.local_ranks(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(g.transport(), Transport::host);
  EXPECT_EQ(g.device(), Device::cpu);
  EXPECT_TRUE(g.devices().empty());
}

}  // namespace
}  // namespace gpuattn::testing
