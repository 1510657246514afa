// CPU backend (tiled fp32, online softmax) against the fp64 reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <limits>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/expect_error.h"
#include "common/random_cases.h"
#include "common/test_util.h"
#include "gpuattn/attention.h"
#include "gpuattn/reference.h"

namespace gpuattn {
namespace {

using testing::Comparison;
using testing::HostTensor;
using testing::make_cu_seqlens;
using testing::make_mask;
using testing::tensor_args;

double out_tol(DType t) {
  switch (t) {
    case DType::bf16: return 1e-2;
    case DType::f16: return 5e-3;
    default: return 1e-5;
  }
}
double lse_tol(DType t) {
  return t == DType::f32 ? 1e-5 : 1e-3;
}

struct Problem {
  DType dtype = DType::f16;
  int batch = 2, sq = 17, sk = 17, hq = 2, hkv = 2, d = 64;
  bool causal = false;
  MaskSpec mask;
  Precision precision = Precision::standard;
  int threads = 0;
  float q_scale = 1.f;
  float softcap = 0.f;              // AttentionArgs::softcap
  int alibi_rows = 0;               // AttentionArgs::alibi_slopes: 0 none, 1 [Hq], 2 [B, Hq]
  std::vector<int> lens_q, lens_k;  // varlen when non-empty
  // Block-sparse layout: on when block_q > 0. [layout_heads, n_blocks_q, n_blocks_k] bytes, random
  // with block_density of the blocks on, unless `blocks` gives them (row-major); stored
  // column-major (a strided view) when layout_transposed.
  int block_q = 0, block_k = 0;
  int layout_heads = 1;
  double block_density = 1.0;
  std::vector<std::uint8_t> blocks;
  bool layout_transposed = false;

  bool varlen() const { return !lens_q.empty(); }
  bool block_sparse() const { return block_q > 0; }
  std::string str() const {
    std::ostringstream s;
    s << to_string(dtype) << " D" << d << " Hq" << hq << " Hkv" << hkv;
    if (varlen()) {
      s << " varlen q{";
      for (int l : lens_q) s << l << ' ';
      s << "} k{";
      for (int l : lens_k) s << l << ' ';
      s << '}';
    } else {
      s << " B" << batch << " Sq" << sq << " Sk" << sk;
    }
    s << (causal ? " causal" : "");
    if (mask.window_left != -1 || mask.window_right != -1) {
      s << " window(" << mask.window_left << ", " << mask.window_right << ")";
    }
    if (mask.global_tokens) s << " G" << mask.global_tokens;
    if (mask.global_stride) s << " stride" << mask.global_stride;
    if (block_sparse()) {
      s << " blocks " << block_q << "x" << block_k << " layout heads " << layout_heads
        << (blocks.empty() ? " density " + std::to_string(block_density) : " explicit")
        << (layout_transposed ? " transposed" : "");
    }
    s << ' ' << to_string(precision) << " threads" << threads << " qscale" << q_scale;
    if (softcap != 0.f) s << " softcap" << softcap;
    if (alibi_rows > 0) s << (alibi_rows == 1 ? " alibi[Hq]" : " alibi[B, Hq]");
    return s.str();
  }
};

int sum(const std::vector<int>& v) {
  int s = 0;
  for (int x : v) s += x;
  return s;
}

// Inputs, outputs (poisoned) and args of one problem. Not copyable: args point into the tensors.
struct Case {
  Problem pr;
  HostTensor q, k, v, out, lse, cu_q, cu_k, layout, alibi;
  AttentionArgs args;
  std::int64_t total_q = 0;

  Case(const Problem& problem, std::uint64_t seed) : pr(problem) {
    if (pr.varlen()) {
      total_q = sum(pr.lens_q);
      const std::int64_t total_k = sum(pr.lens_k);
      q = HostTensor(pr.dtype, {total_q, pr.hq, pr.d});
      k = HostTensor(pr.dtype, {total_k, pr.hkv, pr.d});
      v = HostTensor(pr.dtype, {total_k, pr.hkv, pr.d});
      out = HostTensor(pr.dtype, {total_q, pr.hq, pr.d});
      lse = HostTensor(DType::f32, {pr.hq, total_q});
      cu_q = make_cu_seqlens(pr.lens_q);
      cu_k = make_cu_seqlens(pr.lens_k);
      args.cu_seqlens_q = cu_q.view();
      args.cu_seqlens_k = cu_k.view();
      args.max_seqlen_q = std::max(1, *std::max_element(pr.lens_q.begin(), pr.lens_q.end()));
      args.max_seqlen_k = std::max(1, *std::max_element(pr.lens_k.begin(), pr.lens_k.end()));
    } else {
      total_q = std::int64_t{pr.batch} * pr.sq;
      q = HostTensor(pr.dtype, {pr.batch, pr.sq, pr.hq, pr.d});
      k = HostTensor(pr.dtype, {pr.batch, pr.sk, pr.hkv, pr.d});
      v = HostTensor(pr.dtype, {pr.batch, pr.sk, pr.hkv, pr.d});
      out = HostTensor(pr.dtype, {pr.batch, pr.sq, pr.hq, pr.d});
      lse = HostTensor(DType::f32, {pr.batch, pr.hq, pr.sq});
    }
    q.randomize(seed * 3 + 1, pr.q_scale);
    k.randomize(seed * 3 + 2);
    v.randomize(seed * 3 + 3);
    out.poison();
    lse.poison();
    args.q = q.view();
    args.k = k.view();
    args.v = v.view();
    args.out = out.view();
    args.lse = lse.view();
    args.causal = pr.causal;
    args.mask = pr.mask;
    args.precision = pr.precision;
    args.num_threads = pr.threads;
    args.softcap = pr.softcap;
    args.backend = Backend::cpu;
    if (pr.block_sparse()) make_layout(seed);
    if (pr.alibi_rows > 0) {
      // The paper's slopes 2^(-8 (h + 1) / Hq), each sequence's scaled by its own factor.
      const int rows = pr.alibi_rows == 1 ? 1 : (pr.varlen() ? int(pr.lens_q.size()) : pr.batch);
      alibi = HostTensor(DType::f32, rows == 1 && pr.alibi_rows == 1
                                         ? std::vector<std::int64_t>{pr.hq}
                                         : std::vector<std::int64_t>{rows, pr.hq});
      auto* a = static_cast<float*>(alibi.data());
      for (int b = 0; b < rows; ++b) {
        for (int h = 0; h < pr.hq; ++h) {
          a[b * pr.hq + h] = (1.f + 0.37f * b) * std::exp2(-8.f * (h + 1) / pr.hq);
        }
      }
      args.alibi_slopes = alibi.view();
    }
  }
  Case(const Case&) = delete;

  void make_layout(std::uint64_t seed) {
    const int sq = pr.varlen() ? args.max_seqlen_q : pr.sq;
    const int sk = pr.varlen() ? args.max_seqlen_k : pr.sk;
    const std::int64_t h = pr.layout_heads, nq = (sq + pr.block_q - 1) / pr.block_q,
                       nk = (sk + pr.block_k - 1) / pr.block_k;
    std::vector<std::uint8_t> on = pr.blocks;
    if (on.empty()) {
      std::mt19937_64 rng(seed * 7 + 5);
      std::uniform_real_distribution<double> u(0.0, 1.0);
      for (std::int64_t i = 0; i < h * nq * nk; ++i) on.push_back(u(rng) < pr.block_density);
    }
    layout = HostTensor(DType::u8, pr.layout_transposed ? std::vector<std::int64_t>{h, nk, nq}
                                                        : std::vector<std::int64_t>{h, nq, nk});
    auto* bytes = static_cast<std::uint8_t*>(layout.data());
    TensorView view = layout.view();
    if (pr.layout_transposed) {
      view.shape = {h, nq, nk};
      view.stride = {nq * nk, 1, nq};
    }
    for (std::int64_t x = 0; x < h; ++x) {
      for (std::int64_t r = 0; r < nq; ++r) {
        for (std::int64_t c = 0; c < nk; ++c) {
          bytes[x * view.stride[0] + r * view.stride[1] + c * view.stride[2]] =
              on[static_cast<std::size_t>((x * nq + r) * nk + c)];
        }
      }
    }
    args.mask.block_sparse = {view, pr.block_q, pr.block_k};
  }
  Case& operator=(const Case&) = delete;

  std::int64_t lse_index(std::int64_t row, int h) const {
    if (pr.varlen()) return h * total_q + row;
    const std::int64_t b = row / pr.sq, i = row % pr.sq;
    return (b * pr.hq + h) * pr.sq + i;
  }
  std::vector<float> lse_values() const {
    std::vector<float> l(static_cast<std::size_t>(lse.numel()));
    if (!l.empty()) std::memcpy(l.data(), lse.data(), lse.bytes());
    return l;
  }
};

// Rows to check against the (slow) fp64 reference: all of them for small problems, otherwise the
// first and last 16 and an even spread in between.
std::vector<std::int64_t> rows_to_check(std::int64_t total_q, std::int64_t work_per_row) {
  std::vector<std::int64_t> rows;
  if (total_q * work_per_row <= 200000) return rows;  // empty: all rows
  for (std::int64_t r = 0; r < total_q; ++r) {
    if (r < 16 || r >= total_q - 16 || r % (total_q / 16 + 1) == 0) rows.push_back(r);
  }
  return rows;
}

Comparison run_and_compare(Case& s) {
  attention_forward(s.args);
  const int max_k = s.pr.varlen() ? s.args.max_seqlen_k : s.pr.sk;
  const ReferenceResult ref = reference_attention(s.args, rows_to_check(s.total_q, max_k));
  const std::vector<float> lse = s.lse_values();
  return testing::compare(ref, s.out, s.pr.hq, s.pr.d, &lse,
                          [&](std::int64_t row, int h) { return s.lse_index(row, h); });
}

void check(const Problem& pr, std::uint64_t seed) {
  SCOPED_TRACE(pr.str());
  Case s(pr, seed);
  const Comparison c = run_and_compare(s);
  EXPECT_EQ(c.nonfinite, 0);
  // f32: a logit's rounding error (the fp32 dot product over D terms) is relative to |q| |k|, and
  // lse and the softmax weights take it absolutely: with q scaled by s they move by up to s times
  // what they do at s = 1, so the bounds grow by s (RandomProblemsMatchReference, seed 1: lse at
  // 1.1e-5 against 1e-5, D128, logits x30). The 16-bit bounds are set by the rounding of P and out
  // and already hold at logits x30.
  const double s_f32 = pr.dtype == DType::f32 ? std::max(1.0, double(pr.q_scale)) : 1.0;
  EXPECT_LE(c.rel_err, out_tol(pr.dtype) * s_f32);
  EXPECT_LE(c.lse_rel, lse_tol(pr.dtype) * s_f32);
}

// After attention_forward(s.args): rows i (in every batch) with no_keys(i) have out exactly 0 and
// lse -inf, every other row a finite lse.
template <class NoKeys>
void expect_rows_without_keys(const Case& s, NoKeys no_keys) {
  const Problem& pr = s.pr;
  for (int b = 0; b < pr.batch; ++b) {
    for (int i = 0; i < pr.sq; ++i) {
      for (int h = 0; h < pr.hq; ++h) {
        const std::int64_t row = std::int64_t{b} * pr.sq + i;
        const float l = s.lse.get(s.lse_index(row, h));
        if (no_keys(i)) {
          EXPECT_TRUE(std::isinf(l) && l < 0) << "row " << i << " lse " << l;
          for (int d = 0; d < pr.d; ++d) {
            ASSERT_EQ(s.out.get((row * pr.hq + h) * pr.d + d), 0.f) << "row " << i;
          }
        } else {
          EXPECT_TRUE(std::isfinite(l)) << "row " << i;
        }
      }
    }
  }
}

// ---- dtype x head dim x sequence length x causal
// -------------------------------------------------

struct SweepParam {
  DType dtype;
  int d;
  int s;
  bool causal;
};

void PrintTo(const SweepParam& p, std::ostream* os) {
  *os << to_string(p.dtype) << " D" << p.d << " S" << p.s << (p.causal ? " causal" : "");
}

class CpuAttentionSweep : public ::testing::TestWithParam<SweepParam> {};

TEST_P(CpuAttentionSweep, MatchesReference) {
  const SweepParam sp = GetParam();
  Problem pr;
  pr.dtype = sp.dtype;
  pr.d = sp.d;
  pr.sq = pr.sk = sp.s;
  pr.causal = sp.causal;
  if (sp.s >= 1000) pr.batch = 1;  // keep the long case cheap
  check(pr, 1000 + static_cast<std::uint64_t>(sp.s) * 8 + sp.d + static_cast<int>(sp.dtype) * 3 +
                sp.causal);
}

std::vector<SweepParam> sweep_params() {
  std::vector<SweepParam> v;
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (int d : {64, 128, 256}) {
      for (int s : {1, 17, 77, 1000}) {
        for (bool causal : {false, true}) v.push_back({t, d, s, causal});
      }
    }
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(All, CpuAttentionSweep, ::testing::ValuesIn(sweep_params()),
                         [](const ::testing::TestParamInfo<SweepParam>& i) {
                           return std::string(to_string(i.param.dtype)) + "_D" +
                                  std::to_string(i.param.d) + "_S" + std::to_string(i.param.s) +
                                  (i.param.causal ? "_causal" : "");
                         });

// Head dim 256 beyond the sweep: GQA with Sq != Sk, compensated precision with large logits,
// varlen with length-1 and empty sequences, window + global tokens, a block layout.
TEST(CpuAttention, HeadDim256Variants) {
  std::uint64_t seed = 9100;
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    Problem base;
    base.dtype = t;
    base.d = 256;
    {
      Problem pr = base;
      pr.hq = 4;
      pr.hkv = 1;
      pr.sq = 77;
      pr.sk = 130;
      pr.causal = true;
      check(pr, ++seed);
    }
    {
      Problem pr = base;
      pr.sq = pr.sk = 150;
      pr.precision = Precision::compensated;
      pr.q_scale = 10.f;
      check(pr, ++seed);
    }
    {
      Problem pr = base;
      pr.lens_q = {1, 0, 70, 3};
      pr.lens_k = {1, 5, 130, 0};
      pr.causal = true;
      check(pr, ++seed);
    }
    {
      Problem pr = base;
      pr.sq = pr.sk = 200;
      pr.mask.window_left = 20;
      pr.mask.window_right = 5;
      pr.mask.global_tokens = 3;
      check(pr, ++seed);
    }
    {
      Problem pr = base;
      pr.batch = 1;
      pr.sq = pr.sk = 200;
      pr.hq = 4;
      pr.hkv = 2;
      pr.block_q = 64;
      pr.block_k = 32;
      pr.block_density = 0.5;
      pr.layout_heads = 4;
      check(pr, ++seed);
    }
  }
}

// GPUATTN_FUZZ_CASES random problems (default 200) from GPUATTN_FUZZ_SEED (a fixed default: every
// run checks the same ones; another seed explores; tests/common/random_cases.h): every dtype and
// head dim, GQA and MQA, dense (Sq == Sk, Sq != Sk, one to four query rows) or varlen batches
// (sequences of 0 and 1 rows among them), lengths at tile edges, causal, windows, global tokens,
// block layouts (any block sizes of 16-128, per head or shared, transposed), compensated
// precision, logits x30 and 1-3 threads. A failure names the problem and how to replay it.
TEST(CpuAttention, RandomProblemsMatchReference) {
  using testing::Dice;
  using testing::FuzzRun;
  const FuzzRun run = FuzzRun::from_env(testing::kDefaultFuzzSeed, 200);
  Dice d(run.seed);
  for (int i = 0; i < run.cases; ++i) {
    Problem pr;
    pr.dtype = d.one_of({DType::f32, DType::f16, DType::bf16});
    pr.d = d.one_of({64, 128, 256});
    pr.hkv = d.one_of({1, 2, 3});
    pr.hq = pr.hkv * d.one_of({1, 2, 4});
    if (d.chance(0.3)) {
      const int n = d.between(1, 4);
      for (int b = 0; b < n; ++b) {
        pr.lens_q.push_back(d.chance(0.15) ? 0 : d.length(1, 200));
        pr.lens_k.push_back(d.chance(0.3)    ? pr.lens_q.back()
                            : d.chance(0.15) ? 0
                                             : d.length(1, 300));
      }
      pr.batch = n;
    } else {
      pr.batch = d.between(1, 3);
      const int shape = d.between(0, 9);
      pr.sq = shape < 2 ? d.between(1, 4) : d.length(1, 200);
      pr.sk = shape >= 2 && shape < 6 ? pr.sq : d.length(1, 300);
    }
    pr.causal = d.chance(0.5);
    if (d.chance(0.3)) {
      const auto side = [&] { return d.chance(0.3) ? -1 : d.chance(0.2) ? 0 : d.between(0, 100); };
      pr.mask.window_left = side();
      pr.mask.window_right = side();
      if (d.chance(0.4)) {
        pr.mask.global_tokens = d.between(0, 20);
        pr.mask.global_stride = d.chance(0.5) ? d.between(2, 90) : 0;
      }
    }
    if (d.chance(0.25)) {
      pr.block_q = 16 * d.between(1, 8);
      pr.block_k = 16 * d.between(1, 8);
      pr.layout_heads = d.chance(0.5) ? 1 : pr.hq;
      pr.block_density = d.one_of({0.1, 0.5, 0.9});
      pr.layout_transposed = d.chance(0.3);
    }
    if (d.chance(0.2)) pr.precision = Precision::compensated;
    if (d.chance(0.1)) pr.q_scale = 30.f;
    pr.threads = d.one_of({1, 2, 3});
    SCOPED_TRACE(run.where(i));
    check(pr, run.case_seed(i));
  }
}

// ---- shapes -------------------------------------------------------------------------------------

// Soft-capping against the fp64 rule (softcap x tanh(score / softcap)), with logits large enough
// (q x 8) that the cap bends them: dense and causal, Sq != Sk, GQA, varlen with empty sequences, a
// window with global tokens, a block layout, compensated precision, every dtype.
TEST(CpuAttention, SoftcapMatchesReference) {
  std::vector<Problem> problems;
  for (DType t : {DType::f16, DType::bf16, DType::f32}) {
    Problem p;
    p.dtype = t;
    p.q_scale = 8.f;
    p.softcap = 5.f;
    problems.push_back(p);
    p.causal = true;
    p.sq = 13;
    p.sk = 70;
    p.hq = 4;
    p.hkv = 1;
    p.d = 128;
    p.softcap = 30.f;
    problems.push_back(p);
  }
  Problem v;
  v.q_scale = 8.f;
  v.softcap = 2.f;
  v.lens_q = {5, 0, 33, 1};
  v.lens_k = {9, 4, 33, 0};
  v.causal = true;
  problems.push_back(v);
  Problem w;
  w.q_scale = 6.f;
  w.softcap = 10.f;
  w.sq = w.sk = 150;
  w.mask = make_mask(20, 5, 3);
  problems.push_back(w);
  Problem b;
  b.q_scale = 6.f;
  b.softcap = 10.f;
  b.sq = b.sk = 130;
  b.block_q = b.block_k = 64;
  b.block_density = 0.6;
  problems.push_back(b);
  Problem c;
  c.q_scale = 8.f;
  c.softcap = 3.f;
  c.d = 256;
  c.precision = Precision::compensated;
  problems.push_back(c);
  for (std::size_t i = 0; i < problems.size(); ++i) check(problems[i], 900 + i);
}

// The cap changes the result where the logits pass it (so neither the backend nor the reference
// can ignore it and pass), and a cap far above every logit changes it by rounding only.
TEST(CpuAttention, SoftcapBendsLargeLogitsOnly) {
  Problem p;
  p.q_scale = 8.f;
  p.dtype = DType::f32;
  Case plain(p, 31);
  attention_forward(plain.args);
  p.softcap = 4.f;
  Case capped(p, 31);
  attention_forward(capped.args);
  double diff = 0;
  for (std::int64_t i = 0; i < plain.out.numel(); ++i) {
    diff = std::max(diff, std::fabs(double(plain.out.get(i)) - capped.out.get(i)));
  }
  EXPECT_GT(diff, 0.1) << "softcap 4 left logits of ~8 sigma unchanged";
  p.softcap = 1e6f;
  Case loose(p, 31);
  attention_forward(loose.args);
  for (std::int64_t i = 0; i < plain.out.numel(); ++i) {
    ASSERT_NEAR(plain.out.get(i), loose.out.get(i), 1e-4) << "element " << i;
  }
}

TEST(CpuAttention, BadSoftcapIsNamed) {
  Problem p;
  Case s(p, 3);
  for (float bad : {-1.f, std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity()}) {
    s.args.softcap = bad;
    testing::expect_invalid_argument([&] { attention_forward(s.args); }, "softcap ");
  }
  s.args.softcap = 3e38f;
  testing::expect_invalid_argument([&] { attention_forward(s.args); },
                                   "must be at most 2.36e38");
  // scale / softcap past float's normal range: a huge cap made the effective scale 27x, a tiny
  // one NaN for a zero q.k.
  for (float bad : {1e38f, 1e-40f}) {
    s.args.softcap = bad;
    testing::expect_invalid_argument([&] { attention_forward(s.args); },
                                     "scale / softcap must be a normal float");
  }
  // A decode-shaped soft-capped call needs the decode splits of its uncapped twin (the decode
  // kernel runs both).
  Problem d;
  d.sq = 1;
  d.sk = 300;
  d.hq = 8;
  d.hkv = 2;
  Case dc(d, 4);
  const std::int64_t plain = attention_counters_needed(dc.args);
  dc.args.softcap = 30.f;
  EXPECT_EQ(attention_counters_needed(dc.args), plain);
  EXPECT_GT(plain, 1) << "the plain call is a decode call of several splits";
}

// ALiBi against the fp64 rule (-slope x |i + Sk - Sq - j| on each score): slopes a head and a
// sequence and head, dense and causal, Sq != Sk both ways, GQA / MQA, varlen with an empty and a
// one-key sequence, a window with global tokens, a block layout, soft-capping, compensated
// precision, head dims 64 / 128 / 256, every dtype.
TEST(CpuAttention, AlibiMatchesReference) {
  std::vector<Problem> problems;
  for (DType t : {DType::f16, DType::bf16, DType::f32}) {
    Problem p;
    p.dtype = t;
    p.alibi_rows = 1;
    p.sq = p.sk = 77;
    problems.push_back(p);
    p.causal = true;
    p.sq = 13;
    p.sk = 70;
    p.hq = 4;
    p.hkv = 1;
    p.d = 128;
    p.alibi_rows = 2;
    problems.push_back(p);
    p.sq = 70;
    p.sk = 13;
    p.causal = false;
    problems.push_back(p);
  }
  Problem v;
  v.alibi_rows = 2;
  v.hq = 4;
  v.hkv = 2;
  v.lens_q = {5, 0, 33, 1};
  v.lens_k = {9, 4, 33, 1};
  v.causal = true;
  problems.push_back(v);
  Problem w;
  w.alibi_rows = 1;
  w.sq = w.sk = 150;
  w.mask = make_mask(20, 5, 3);
  problems.push_back(w);
  Problem b;
  b.alibi_rows = 2;
  b.sq = b.sk = 130;
  b.block_q = b.block_k = 64;
  b.block_density = 0.6;
  problems.push_back(b);
  Problem c;
  c.alibi_rows = 2;
  c.q_scale = 8.f;
  c.softcap = 3.f;
  c.d = 256;
  c.precision = Precision::compensated;
  c.causal = true;
  problems.push_back(c);
  for (std::size_t i = 0; i < problems.size(); ++i) check(problems[i], 1900 + i);
}

// Two keys of the same score a query row (k rows equal): their weights are exp(-slope x distance)
// alone, known without the reference. Row 0 of Sq 2, Sk 2, causal: it sees key 0 only; row 1 sees
// key 0 at distance 1 and key 1 at distance 0: out = (e^-s v0 + v1) / (e^-s + 1), lse = score +
// log(1 + e^-s).
TEST(CpuAttention, AlibiWeightsByHand) {
  const int D = 64;
  HostTensor q(DType::f32, {1, 2, 1, D}), k(DType::f32, {1, 2, 1, D}), v(DType::f32, {1, 2, 1, D}),
      out(DType::f32, {1, 2, 1, D}), lse(DType::f32, {1, 1, 2}), slope(DType::f32, {1});
  q.randomize(1);
  k.randomize(2);
  v.randomize(3);
  for (int d = 0; d < D; ++d) k.set(D + d, k.get(d));  // key 1 = key 0
  const float s = 0.75f;
  static_cast<float*>(slope.data())[0] = s;
  out.poison();
  lse.poison();
  AttentionArgs a = tensor_args(q, k, v, out, &lse);
  a.causal = true;
  a.alibi_slopes = slope.view();
  a.backend = Backend::cpu;
  attention_forward(a);
  double score = 0;
  for (int d = 0; d < D; ++d) score += double(q.get(D + d)) * k.get(d);
  score /= std::sqrt(double(D));
  const double w0 = std::exp(-double(s)), w1 = 1.0;
  for (int d = 0; d < D; ++d) {
    EXPECT_NEAR(out.get(d), v.get(d), 1e-5) << "row 0 sees key 0 only";
    const double want = (w0 * v.get(d) + w1 * v.get(D + d)) / (w0 + w1);
    EXPECT_NEAR(out.get(D + d), want, 1e-5) << "row 1, element " << d;
  }
  EXPECT_NEAR(lse.get(1), score + std::log(w0 + w1), 1e-5);
  // The reference agrees.
  const ReferenceResult ref = reference_attention(a, {});
  EXPECT_NEAR(ref.lse[1], score + std::log(w0 + w1), 1e-9);
}

// Every bad alibi_slopes view or value is named, out and lse untouched.
TEST(CpuAttention, BadAlibiSlopesAreNamed) {
  Problem p;  // B2 Hq2 Sq Sk 17
  p.alibi_rows = 2;
  Case s(p, 3);
  const auto rejected = [&](const AttentionArgs& a, const std::string& words) {
    s.out.poison();
    s.lse.poison();
    const std::vector<std::uint8_t> before(static_cast<const std::uint8_t*>(s.out.data()),
                                           static_cast<const std::uint8_t*>(s.out.data()) +
                                               s.out.bytes());
    testing::expect_invalid_argument([&] { attention_forward(a); }, words);
    EXPECT_EQ(std::memcmp(before.data(), s.out.data(), before.size()), 0) << words;
  };
  auto* slopes = static_cast<float*>(s.alibi.data());
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity(),
                    2e29f, -2e29f}) {
    slopes[3] = bad;
    rejected(s.args, "alibi_slopes[1][1] is ");
  }
  slopes[3] = 1e20f;  // 1e20 x 8 (1 / scale at D64) is within the bound
  attention_forward(s.args);
  slopes[3] = 0.5f;
  AttentionArgs a = s.args;
  a.softcap = 1e-9f;  // raw units 1 / softcap: 0.5e9, fine; 1e21 x 1e9 is not
  attention_forward(a);
  slopes[3] = 1e21f;
  rejected(a, "1 / softcap) must be at most 1.58e29");
  slopes[3] = 0.5f;
  HostTensor h16(DType::f16, {2, 2});
  a = s.args;
  a.alibi_slopes = h16.view();
  rejected(a, "alibi_slopes has dtype float16, expected float32");
  for (auto [shape, text] : {std::pair{std::vector<std::int64_t>{3}, "[3]"},
                             std::pair{std::vector<std::int64_t>{2, 3}, "[2, 3]"},
                             std::pair{std::vector<std::int64_t>{3, 2}, "[3, 2]"},
                             std::pair{std::vector<std::int64_t>{2, 2, 1}, "[2, 2, 1]"},
                             std::pair{std::vector<std::int64_t>{1, 2}, "[1, 2]"}}) {
    HostTensor t(DType::f32, shape);
    t.randomize(5);
    a.alibi_slopes = t.view();
    rejected(a, std::string("alibi_slopes has shape ") + text +
                    ", expected [Hq = 2] or [B = 2, Hq = 2]");
  }
  a.alibi_slopes = s.alibi.view();
  a.alibi_slopes.stride = {1, 2};  // heads apart: last stride 2
  rejected(a, "alibi_slopes last-dimension stride is 2, must be 1");
  a.alibi_slopes.stride = {1, 1};  // rows overlapping
  rejected(a, "alibi_slopes has batch stride 1: must be 0 or at least Hq = 2");
  a.alibi_slopes.stride = {0, 1};  // one row for both sequences: fine
  attention_forward(a);
  a.alibi_slopes = s.alibi.view(Device::cuda, s.alibi.data());
  a.alibi_slopes.device_index = 0;
  rejected(a, "alibi_slopes is on cuda:0 but q is on cpu:0");
  a.alibi_slopes = s.alibi.view();
  a.alibi_slopes.data = nullptr;
  rejected(a, "alibi_slopes is a null pointer");
  std::vector<float> room(8, 0.5f);  // a view 2 bytes into it: not a float's alignment
  a.alibi_slopes = s.alibi.view();
  a.alibi_slopes.data = reinterpret_cast<char*>(room.data()) + 2;
  rejected(a, "alibi_slopes pointer 0x");
  rejected(a, " is not 4-byte aligned");
  // A softmax_scale so small that 1 / scale is no float: no slope has a unit (slope 0 neither).
  a = s.args;
  a.softmax_scale = 1e-39f;
  rejected(a, "alibi_slopes with softmax_scale 1.00000022e-39: 1 / softmax_scale must be a float");
  // A view that overlaps out.
  a = s.args;
  a.alibi_slopes = TensorView::contiguous(s.out.data(), DType::f32, Device::cpu, {2, 2});
  rejected(a, "overlaps alibi_slopes");
}

// The bias changes the result (so that neither the backend nor the reference can ignore it and
// pass), and slopes of 0 change nothing.
TEST(CpuAttention, AlibiMovesTheResult) {
  Problem p;
  p.dtype = DType::f32;
  p.sq = p.sk = 60;
  Case plain(p, 41);
  attention_forward(plain.args);
  p.alibi_rows = 1;
  Case biased(p, 41);
  attention_forward(biased.args);
  double diff = 0;
  for (std::int64_t i = 0; i < plain.out.numel(); ++i) {
    diff = std::max(diff, std::fabs(double(plain.out.get(i)) - biased.out.get(i)));
  }
  EXPECT_GT(diff, 0.1) << "slopes 1/16 and 1/256 over 60 keys left out unchanged";
  std::fill_n(static_cast<float*>(biased.alibi.data()), p.hq, 0.f);
  attention_forward(biased.args);
  for (std::int64_t i = 0; i < plain.out.numel(); ++i) {
    ASSERT_EQ(plain.out.get(i), biased.out.get(i)) << "element " << i;
  }
}

TEST(CpuAttention, SqDiffersFromSkCausalBottomRight) {
  std::uint64_t seed = 2000;
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (auto [sq, sk] : {std::pair{17, 77}, std::pair{77, 17}, std::pair{1, 300},
                          std::pair{130, 64}, std::pair{64, 200}}) {
      for (bool causal : {false, true}) {
        Problem pr;
        pr.dtype = t;
        pr.sq = sq;
        pr.sk = sk;
        pr.causal = causal;
        pr.d = sq == 130 ? 128 : 64;
        check(pr, ++seed);
      }
    }
  }
}

TEST(CpuAttention, CausalRowsWithoutKeysGetZeroAndMinusInf) {
  Problem pr;
  pr.dtype = DType::bf16;
  pr.sq = 90;
  pr.sk = 20;  // rows 0..69 see no key
  pr.causal = true;
  Case s(pr, 2100);
  attention_forward(s.args);
  ASSERT_NO_FATAL_FAILURE(expect_rows_without_keys(s, [&](int i) { return i < pr.sq - pr.sk; }));
  check(pr, 2101);
}

TEST(CpuAttention, GqaAndMqa) {
  std::uint64_t seed = 3000;
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (int hkv : {2, 1}) {  // 8:2 GQA, 8:1 MQA
      for (bool causal : {false, true}) {
        Problem pr;
        pr.dtype = t;
        pr.hq = 8;
        pr.hkv = hkv;
        pr.sq = 45;
        pr.sk = 70;
        pr.d = hkv == 1 ? 128 : 64;
        pr.causal = causal;
        check(pr, ++seed);
      }
    }
  }
}

TEST(CpuAttention, Varlen) {
  std::uint64_t seed = 4000;
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (bool causal : {false, true}) {
      Problem pr;
      pr.dtype = t;
      pr.hq = 4;
      pr.hkv = 2;
      pr.causal = causal;
      pr.lens_q = pr.lens_k = {1, 17, 513, 70};
      check(pr, ++seed);
      pr.lens_k = {5, 40, 100, 70};  // Sq != Sk per sequence, both ways
      pr.d = 128;
      check(pr, ++seed);
    }
  }
}

TEST(CpuAttention, VarlenWithEmptySequences) {
  Problem pr;
  pr.dtype = DType::f16;
  pr.causal = true;
  pr.lens_q = {5, 0, 33, 64, 3};
  pr.lens_k = {7, 3, 0, 64, 0};  // sequences 2 and 4 have no keys: out 0, lse -inf
  check(pr, 4100);
  pr.causal = false;
  check(pr, 4101);
  // Every sequence empty on one side: packed k and v (then q and out) of no rows at all.
  const std::vector<int> lens_q = pr.lens_q, lens_k = pr.lens_k;
  pr.lens_k = {0, 0, 0, 0, 0};
  check(pr, 4103);
  pr.lens_q = {0, 0, 0, 0, 0};
  pr.lens_k = lens_k;
  check(pr, 4104);
  pr.lens_q = lens_q;

  Case s(pr, 4102);
  attention_forward(s.args);
  for (std::int64_t row = 5; row < 5 + 33; ++row) {  // sequence 2
    for (int h = 0; h < pr.hq; ++h) {
      EXPECT_TRUE(std::isinf(s.lse.get(s.lse_index(row, h))));
      for (int d = 0; d < pr.d; ++d) ASSERT_EQ(s.out.get((row * pr.hq + h) * pr.d + d), 0.f);
    }
  }
}

// q, k, v as slices of one packed qkv tensor [B, S, 3, H, D]; out and lse padded views whose
// padding must stay untouched.
TEST(CpuAttention, StridedViews) {
  std::uint64_t seed = 5000;
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (bool causal : {false, true}) {
      const int B = 2, S = 67, H = 3, D = 64, pad = 16;
      HostTensor qkv(t, {B, S, 3 * H, D});
      qkv.randomize(++seed);
      HostTensor out_buf(t, {B, S, H, D + pad});
      HostTensor lse_buf(DType::f32, {B, H, S + 4});
      out_buf.poison();
      lse_buf.poison();
      for (std::int64_t i = 0; i < lse_buf.numel(); ++i) {
        if (i % (S + 4) >= S) lse_buf.set(i, 7.f);
      }
      for (std::int64_t i = 0; i < out_buf.numel(); ++i) {
        if (i % (D + pad) >= D) out_buf.set(i, 7.f);
      }

      auto slice = [&](int which) {
        TensorView tv = qkv.view();
        tv.data = static_cast<char*>(qkv.data()) + which * H * D * element_size(t);
        tv.shape = {B, S, H, D};
        tv.stride = {std::int64_t{S} * 3 * H * D, 3 * H * D, D, 1};
        return tv;
      };
      AttentionArgs a;
      a.q = slice(0);
      a.k = slice(1);
      a.v = slice(2);
      a.out = out_buf.view();
      a.out.shape = {B, S, H, D};
      a.out.stride = {std::int64_t{S} * H * (D + pad), H * (D + pad), D + pad, 1};
      a.lse = lse_buf.view();
      a.lse.shape = {B, H, S};
      a.lse.stride = {std::int64_t{H} * (S + 4), S + 4, 1};
      a.causal = causal;
      attention_forward(a);

      HostTensor out(t, {B, S, H, D});
      std::vector<float> lse(static_cast<std::size_t>(B * H * S));
      for (std::int64_t r = 0; r < std::int64_t{B} * S * H; ++r) {
        for (int d = 0; d < D + pad; ++d) {
          const float x = out_buf.get(r * (D + pad) + d);
          if (d < D) {
            out.set(r * D + d, x);
          } else {
            ASSERT_EQ(x, 7.f) << "padding of out overwritten";
          }
        }
      }
      for (int bh = 0; bh < B * H; ++bh) {
        for (int i = 0; i < S + 4; ++i) {
          const float x = lse_buf.get(std::int64_t{bh} * (S + 4) + i);
          if (i < S) {
            lse[static_cast<std::size_t>(bh * S + i)] = x;
          } else {
            ASSERT_EQ(x, 7.f) << "padding of lse overwritten";
          }
        }
      }
      const ReferenceResult ref = reference_attention(a);
      const Comparison c = testing::compare(ref, out, H, D, &lse, [&](std::int64_t row, int h) {
        return (row / S * H + h) * S + row % S;
      });
      SCOPED_TRACE(std::string(to_string(t)) + (causal ? " causal" : ""));
      EXPECT_EQ(c.nonfinite, 0);
      EXPECT_LE(c.rel_err, out_tol(t));
      EXPECT_LE(c.lse_rel, lse_tol(t));
    }
  }
}

// ---- numerics -----------------------------------------------------------------------------------

TEST(CpuAttention, CompensatedPrecisionMatchesReference) {
  std::uint64_t seed = 6000;
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (bool causal : {false, true}) {
      Problem pr;
      pr.dtype = t;
      pr.precision = Precision::compensated;
      pr.causal = causal;
      pr.sq = 77;
      pr.sk = 150;
      pr.hq = 4;
      pr.hkv = 2;
      pr.d = causal ? 128 : 64;
      check(pr, ++seed);
      pr.lens_q = {1, 17, 130, 70};
      pr.lens_k = {1, 17, 130, 90};
      check(pr, ++seed);
    }
  }
}

// Uniform attention over many keys (all keys equal): the output is the mean of v, a sum of 16k
// terms whose fp32 rounding error the compensated mode removes.
TEST(CpuAttention, CompensatedSumIsMoreAccurate) {
  const int Sk = 16384, D = 64;
  double err[2] = {};
  for (Precision prec : {Precision::standard, Precision::compensated}) {
    HostTensor q(DType::f32, {1, 4, 1, D}), k(DType::f32, {1, Sk, 1, D}),
        v(DType::f32, {1, Sk, 1, D}), out(DType::f32, {1, 4, 1, D});
    q.randomize(6100);
    HostTensor k_row(DType::f32, {D});
    k_row.randomize(6101);
    for (std::int64_t i = 0; i < k.numel(); ++i) k.set(i, k_row.get(i % D));
    v.randomize(6102);
    for (std::int64_t i = 0; i < v.numel(); ++i) v.set(i, v.get(i) + 3.f);  // large running sums
    out.poison();
    AttentionArgs a = tensor_args(q, k, v, out);
    a.precision = prec;
    attention_forward(a);
    const ReferenceResult ref = reference_attention(a);
    const Comparison c =
        testing::compare(ref, out, 1, D, nullptr, [](std::int64_t, int) { return 0; });
    EXPECT_EQ(c.nonfinite, 0);
    err[prec == Precision::compensated] = c.rel_err;
  }
  EXPECT_LE(err[1], 2e-7) << "standard " << err[0];
  EXPECT_LT(err[1], err[0] / 10) << "standard " << err[0] << " compensated " << err[1];
}

TEST(CpuAttention, LargeLogitsStayFinite) {
  std::uint64_t seed = 7000;
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (Precision prec : {Precision::standard, Precision::compensated}) {
      for (bool causal : {false, true}) {
        Problem pr;
        pr.dtype = t;
        pr.q_scale = 30.f;
        pr.precision = prec;
        pr.causal = causal;
        pr.sq = 33;
        pr.sk = 140;
        SCOPED_TRACE(pr.str());
        Case s(pr, ++seed);
        const Comparison c = run_and_compare(s);
        EXPECT_EQ(c.nonfinite, 0);
        for (std::int64_t i = 0; i < s.lse.numel(); ++i) ASSERT_TRUE(std::isfinite(s.lse.get(i)));
        EXPECT_LE(c.rel_err, out_tol(t));
        EXPECT_LE(c.lse_rel, lse_tol(t));
      }
    }
  }
}

// A softmax scale near its ceiling (FLT_MAX / log2 e) with small keys: the scores are moderate,
// but q x scale x log2 e is not finite. The scale goes on the scores after the GEMM (as on the
// GPU); folded into q first, the output was all NaN.
TEST(CpuAttention, LargeSoftmaxScaleWithSmallKeysStaysFinite) {
  std::uint64_t seed = 7100;
  for (DType t : {DType::f32, DType::bf16}) {
    Problem pr;
    pr.dtype = t;
    pr.q_scale = 3.f;  // |q| past FLT_MAX / 1e38 / log2 e = 2.36 for about 40% of q
    pr.sq = 9;
    pr.sk = 70;
    SCOPED_TRACE(pr.str());
    Case s(pr, ++seed);
    for (std::int64_t i = 0; i < s.k.numel(); ++i) s.k.set(i, s.k.get(i) * 2e-38f);  // scores ~50
    s.args.softmax_scale = 1e38f;
    const Comparison c = run_and_compare(s);
    EXPECT_EQ(c.nonfinite, 0);
    EXPECT_LE(c.rel_err, out_tol(t));
    EXPECT_LE(c.lse_rel, lse_tol(t));
  }
}

// ---- threads ------------------------------------------------------------------------------------

TEST(CpuAttention, ThreadCountDoesNotChangeResults) {
  for (Precision prec : {Precision::standard, Precision::compensated}) {
    Problem pr;
    pr.dtype = DType::bf16;
    pr.hq = 4;
    pr.hkv = 2;
    pr.causal = true;
    pr.precision = prec;
    pr.lens_q = {1, 17, 300, 70};
    pr.lens_k = {3, 17, 300, 150};
    std::vector<std::uint8_t> first_out, first_lse;
    for (int threads : {1, 2, 3, 7, 0, 1000}) {
      pr.threads = threads;
      SCOPED_TRACE(pr.str());
      Case s(pr, 8000);  // same inputs every time
      attention_forward(s.args);
      const auto* o = static_cast<const std::uint8_t*>(s.out.data());
      const auto* l = static_cast<const std::uint8_t*>(s.lse.data());
      std::vector<std::uint8_t> out(o, o + s.out.bytes()), lse(l, l + s.lse.bytes());
      if (first_out.empty()) {
        first_out = out;
        first_lse = lse;
        const ReferenceResult ref = reference_attention(s.args);
        const std::vector<float> lv = s.lse_values();
        const Comparison c = testing::compare(
            ref, s.out, pr.hq, pr.d, &lv, [&](std::int64_t r, int h) { return s.lse_index(r, h); });
        EXPECT_LE(c.rel_err, out_tol(pr.dtype));
        EXPECT_LE(c.lse_rel, lse_tol(pr.dtype));
      } else {
        EXPECT_TRUE(out == first_out);
        EXPECT_TRUE(lse == first_lse);
      }
    }
  }
}

TEST(CpuAttention, WithoutLse) {
  Problem pr;
  pr.dtype = DType::f16;
  pr.causal = true;
  pr.sq = 70;
  pr.sk = 70;
  Case s(pr, 9000);
  s.args.lse = TensorView{};
  attention_forward(s.args);
  const ReferenceResult ref = reference_attention(s.args);
  const Comparison c =
      testing::compare(ref, s.out, pr.hq, pr.d, nullptr, [](std::int64_t, int) { return 0; });
  EXPECT_EQ(c.nonfinite, 0);
  EXPECT_LE(c.rel_err, out_tol(pr.dtype));
  for (std::int64_t i = 0; i < s.lse.numel(); ++i) ASSERT_TRUE(std::isnan(s.lse.get(i)));
}

// ---- masks: sliding window, global tokens -------------------------------------------------------

constexpr DType kDtypes[] = {DType::f32, DType::f16, DType::bf16};

std::vector<std::uint8_t> bytes_of(const HostTensor& t) {
  const auto* p = static_cast<const std::uint8_t*>(t.data());
  return std::vector<std::uint8_t>(p, p + t.bytes());
}

// Runs `pr` and `same` (a different mask meaning the same thing) on the same inputs: bitwise equal
// outputs, both matching the reference.
void check_same_as(const Problem& pr, const Problem& same, std::uint64_t seed) {
  check(pr, seed);
  Case a(pr, seed), b(same, seed);
  attention_forward(a.args);
  attention_forward(b.args);
  EXPECT_TRUE(bytes_of(a.out) == bytes_of(b.out)) << pr.str() << " vs " << same.str();
  EXPECT_TRUE(bytes_of(a.lse) == bytes_of(b.lse)) << pr.str() << " vs " << same.str();
}

// Runs `pr` with 1, 2, 3 and the default number of threads on the same inputs: bitwise equal
// outputs; then (default threads) against the reference.
void check_thread_counts_agree(Problem pr, std::uint64_t seed) {
  std::vector<std::uint8_t> first_out, first_lse;
  for (int threads : {1, 2, 3, 0}) {
    pr.threads = threads;
    SCOPED_TRACE(pr.str());
    Case s(pr, seed);
    attention_forward(s.args);
    if (first_out.empty()) {
      first_out = bytes_of(s.out);
      first_lse = bytes_of(s.lse);
    } else {
      EXPECT_TRUE(bytes_of(s.out) == first_out);
      EXPECT_TRUE(bytes_of(s.lse) == first_lse);
    }
  }
  check(pr, seed);
}

TEST(CpuAttentionMask, SlidingWindow) {
  std::uint64_t seed = 10000;
  int n = 0;
  for (DType t : kDtypes) {
    for (auto [l, r] :
         {std::pair{0, 0}, std::pair{1, 0}, std::pair{0, 1}, std::pair{17, 5}, std::pair{64, 64},
          std::pair{63, 0}, std::pair{100, -1}, std::pair{-1, 30}, std::pair{130, 7}}) {
      for (bool causal : {false, true}) {
        Problem pr;
        pr.dtype = t;
        pr.batch = 1;
        pr.sq = pr.sk = 300;
        pr.d = ++n % 2 ? 64 : 128;
        pr.causal = causal;
        pr.mask = make_mask(l, r);
        check(pr, ++seed);
      }
    }
  }
}

// Windows at or beyond the sequence length are no mask (or causal): the same tiles, bit for bit.
TEST(CpuAttentionMask, WindowLargerThanSequence) {
  std::uint64_t seed = 11000;
  for (DType t : kDtypes) {
    for (auto [sq, sk] : {std::pair{200, 200}, std::pair{77, 150}, std::pair{150, 77}}) {
      for (bool causal : {false, true}) {
        Problem none;
        none.dtype = t;
        none.sq = sq;
        none.sk = sk;
        none.causal = causal;
        for (const MaskSpec m : {make_mask(sq + sk, sq + sk), make_mask(5000, -1),
                                 make_mask(-1, 5000), make_mask(INT_MAX, INT_MAX)}) {
          Problem pr = none;
          pr.mask = m;
          check_same_as(pr, none, ++seed);
        }
        if (!causal) {  // (L, 0) with L >= Sk is causal
          Problem pr = none;
          pr.mask = make_mask(sk, 0);
          Problem c = none;
          c.causal = true;
          check_same_as(pr, c, ++seed);
        }
      }
    }
  }
}

// Window (0, 0): each row sees the key at its own position only, so out is that value row exactly;
// with Sq > Sk the first Sq - Sk rows see nothing.
TEST(CpuAttentionMask, WindowZero) {
  std::uint64_t seed = 12000;
  for (DType t : kDtypes) {
    for (auto [sq, sk] : {std::pair{100, 100}, std::pair{50, 100}, std::pair{100, 50}}) {
      Problem pr;
      pr.dtype = t;
      pr.batch = 1;
      pr.sq = sq;
      pr.sk = sk;
      pr.mask = make_mask(0, 0);
      check(pr, ++seed);
      Case s(pr, seed);
      attention_forward(s.args);
      for (int i = 0; i < sq; ++i) {
        const int j = i + sk - sq;
        for (int h = 0; h < pr.hq; ++h) {
          const float l = s.lse.get(s.lse_index(i, h));
          for (int d = 0; d < pr.d; ++d) {
            const float o = s.out.get((std::int64_t{i} * pr.hq + h) * pr.d + d);
            const float want = j < 0 ? 0.f : s.v.get((std::int64_t{j} * pr.hkv + h) * pr.d + d);
            ASSERT_EQ(o, want) << to_string(t) << " Sq " << sq << " Sk " << sk << " row " << i;
          }
          EXPECT_EQ(j < 0, std::isinf(l) && l < 0) << "row " << i << " lse " << l;
        }
      }
    }
  }
}

TEST(CpuAttentionMask, GlobalTokens) {
  std::uint64_t seed = 13000;
  int n = 0;
  for (int g : {1, 5, 64, 100}) {
    for (bool causal : {false, true}) {
      Problem pr;
      pr.dtype = kDtypes[n % 3];
      pr.d = ++n % 2 ? 64 : 128;
      pr.batch = 1;
      pr.sq = pr.sk = 300;
      pr.causal = causal;
      pr.mask = causal ? make_mask(16, 0, g) : make_mask(16, 16, g);
      check(pr, ++seed);
    }
  }
}

// G >= S: every key is global, so the window changes nothing.
TEST(CpuAttentionMask, GlobalTokensBeyondTheSequence) {
  std::uint64_t seed = 13500;
  for (DType t : kDtypes) {
    for (bool causal : {false, true}) {
      Problem none;
      none.dtype = t;
      none.sq = 90;
      none.sk = 150;
      none.causal = causal;
      for (int g : {150, 1000, INT_MAX}) {
        Problem pr = none;
        pr.mask = make_mask(3, 3, g);
        check_same_as(pr, none, ++seed);
      }
    }
  }
}

TEST(CpuAttentionMask, StridedGlobalTokens) {
  std::uint64_t seed = 14000;
  int n = 0;
  for (int stride : {1, 7, 64, 100}) {
    for (int g : {0, 3}) {
      for (bool causal : {false, true}) {
        Problem pr;
        pr.dtype = kDtypes[n % 3];
        pr.d = ++n % 2 ? 64 : 128;
        pr.batch = 1;
        pr.sq = pr.sk = 300;
        pr.causal = causal;
        pr.mask = causal ? make_mask(8, 0, g, stride) : make_mask(8, 8, g, stride);
        check(pr, ++seed);
      }
    }
  }
  Problem none;  // stride 1: every token global
  none.sq = none.sk = 130;
  Problem pr = none;
  pr.mask = make_mask(2, 2, 0, 1);
  check_same_as(pr, none, ++seed);
}

TEST(CpuAttentionMask, SqDiffersFromSk) {
  std::uint64_t seed = 15000;
  int n = 0;
  for (auto [sq, sk] : {std::pair{17, 300}, std::pair{300, 17}, std::pair{1, 500},
                        std::pair{130, 64}, std::pair{64, 200}}) {
    for (const MaskSpec m : {make_mask(10, 5), make_mask(32, 0, 4), make_mask(5, 5, 0, 16)}) {
      for (bool causal : {false, true}) {
        Problem pr;
        pr.dtype = kDtypes[n % 3];
        pr.d = ++n % 2 ? 64 : 128;
        pr.sq = sq;
        pr.sk = sk;
        pr.causal = causal;
        pr.mask = m;
        check(pr, ++seed);
      }
    }
  }
}

TEST(CpuAttentionMask, Varlen) {
  std::uint64_t seed = 16000;
  for (DType t : kDtypes) {
    for (const MaskSpec m : {make_mask(20, 3), make_mask(40, 0, 8), make_mask(16, 16, 2, 50)}) {
      for (bool causal : {false, true}) {
        Problem pr;
        pr.dtype = t;
        pr.hq = 4;
        pr.hkv = 2;
        pr.causal = causal;
        pr.mask = m;
        pr.lens_q = pr.lens_k = {1, 17, 513, 70};
        check(pr, ++seed);
        pr.lens_k = {5, 40, 100, 70};  // Sq != Sk per sequence, both ways
        pr.d = 128;
        check(pr, ++seed);
        pr.lens_q = {5, 0, 33, 64, 3};  // empty sequences
        pr.lens_k = {7, 3, 0, 64, 0};
        check(pr, ++seed);
      }
    }
  }
}

TEST(CpuAttentionMask, GqaAndMqa) {
  std::uint64_t seed = 17000;
  for (DType t : kDtypes) {
    for (int hkv : {2, 1}) {
      for (bool causal : {false, true}) {
        Problem pr;
        pr.dtype = t;
        pr.hq = 8;
        pr.hkv = hkv;
        pr.sq = 145;
        pr.sk = 170;
        pr.d = hkv == 1 ? 128 : 64;
        pr.causal = causal;
        pr.mask = make_mask(24, causal ? 0 : 9, 3, 40);
        check(pr, ++seed);
      }
    }
  }
}

// Rows that see no key: out 0, lse -inf; the others finite.
TEST(CpuAttentionMask, RowsWithoutKeysGetZeroAndMinusInf) {
  struct Setup {
    bool causal;
    MaskSpec mask;
    int first_seeing;  // rows below this see no key (Sq 90, Sk 20: positions i - 70)
  };
  std::uint64_t seed = 18000;
  for (const Setup su : {Setup{false, make_mask(0, 3), 67},    // window ends before key 0
                         Setup{true, make_mask(3, 0, 2), 70},  // causal: globals stay invisible
                         Setup{true, make_mask(0, 0, 0, 4), 70}}) {
    for (DType t : kDtypes) {
      Problem pr;
      pr.dtype = t;
      pr.sq = 90;
      pr.sk = 20;
      pr.causal = su.causal;
      pr.mask = su.mask;
      SCOPED_TRACE(pr.str());
      Case s(pr, ++seed);
      attention_forward(s.args);
      ASSERT_NO_FATAL_FAILURE(
          expect_rows_without_keys(s, [&](int i) { return i < su.first_seeing; }));
      check(pr, seed);
    }
  }
}

// A long sequence with a narrow window: only the tiles near the diagonal and the global tiles are
// computed (the full problem would take minutes here); sampled rows against the reference.
TEST(CpuAttentionMask, LongSequenceSlidingWindow) {
  Problem pr;
  pr.dtype = DType::bf16;
  pr.batch = 1;
  pr.hq = pr.hkv = 1;
  pr.sq = pr.sk = 32768;
  pr.causal = true;
  pr.mask = make_mask(128, 0, 16);
  check(pr, 19000);
  pr.causal = false;
  pr.mask = make_mask(64, 64, 0, 4096);
  check(pr, 19001);
}

// Key counts within a tile of 2^31 - 1 (one K/V row broadcast by stride 0, so no memory): the
// key-tile loops stepped an int past INT_MAX (a crash, or with a block layout an endless loop).
// A 10-key window leaves 11 visible keys of equal score: out = v, lse = score + log 11.
TEST(CpuAttentionMask, KeyCountsNearTheInt32Limit) {
  const int D = 64;
  alignas(16) static float q[D], k[D], v[D], o[D];
  for (int d = 0; d < D; ++d) {
    q[d] = 0.01f * d;
    k[d] = 0.02f;
    v[d] = 1.0f + d;
  }
  static unsigned char on = 1;
  double score = 0.0;
  for (int d = 0; d < D; ++d) score += static_cast<double>(q[d]) * k[d];
  score /= 8.0;
  // The masked limit is Sq + Sk <= 2^31 - 1: Sk = 2^31 - 2 with one query row is the largest.
  for (const std::int64_t sk : {std::int64_t{2147483584}, std::int64_t{2147483646}}) {
    for (const bool layout : {false, true}) {
      SCOPED_TRACE("Sk " + std::to_string(sk) + (layout ? " with a block layout" : ""));
      std::fill(o, o + D, -7.0f);
      float lse = -7.0f;
      AttentionArgs a;
      a.q = TensorView::contiguous(q, DType::f32, Device::cpu, {1, 1, 1, D});
      a.k = TensorView::contiguous(k, DType::f32, Device::cpu, {1, sk, 1, D});
      a.k.stride[0] = a.k.stride[1] = a.k.stride[2] = 0;
      a.v = a.k;
      a.v.data = v;
      a.out = TensorView::contiguous(o, DType::f32, Device::cpu, {1, 1, 1, D});
      a.lse = TensorView::contiguous(&lse, DType::f32, Device::cpu, {1, 1, 1});
      a.mask.window_left = 10;
      a.num_threads = 1;
      if (layout) {
        a.mask.block_sparse.layout =
            TensorView::contiguous(&on, DType::u8, Device::cpu, {1, 1, (sk + 15) / 16});
        a.mask.block_sparse.layout.stride[2] = 0;
        a.mask.block_sparse.block_q = a.mask.block_sparse.block_k = 16;
      }
      attention_forward(a);
      for (int d = 0; d < D; ++d) ASSERT_NEAR(o[d], v[d], 1e-4f * v[d]) << "d " << d;
      EXPECT_NEAR(lse, score + std::log(11.0), 1e-5);
    }
  }
}

TEST(CpuAttentionMask, CompensatedPrecision) {
  std::uint64_t seed = 20000;
  for (DType t : kDtypes) {
    Problem pr;
    pr.dtype = t;
    pr.precision = Precision::compensated;
    pr.causal = true;
    pr.sq = 77;
    pr.sk = 250;
    pr.hq = 4;
    pr.hkv = 2;
    pr.mask = make_mask(70, 0, 5, 60);
    check(pr, ++seed);
  }
}

TEST(CpuAttentionMask, ThreadCountDoesNotChangeResults) {
  Problem pr;
  pr.dtype = DType::f16;
  pr.hq = 4;
  pr.hkv = 2;
  pr.causal = true;
  pr.mask = make_mask(50, 0, 4, 64);
  pr.lens_q = {1, 17, 300, 70};
  pr.lens_k = {3, 17, 300, 150};
  check_thread_counts_agree(pr, 21000);
}

// ---- block-sparse layouts -----------------------------------------------------------------------

Problem block_problem(DType t, int s, int bq, int bk, double density, int layout_heads) {
  Problem pr;
  pr.dtype = t;
  pr.batch = 1;
  pr.sq = pr.sk = s;
  pr.hq = 4;
  pr.hkv = 2;
  pr.block_q = bq;
  pr.block_k = bk;
  pr.block_density = density;
  pr.layout_heads = layout_heads;
  return pr;
}

// 50% and 90% sparsity, a layout per head and one shared by all, with and without causal.
TEST(CpuAttentionBlockSparse, HalfAndNinetyPercentSparse) {
  std::uint64_t seed = 30000;
  int n = 0;
  for (DType t : kDtypes) {
    for (double density : {0.5, 0.1}) {
      for (int heads : {1, 4}) {
        for (bool causal : {false, true}) {
          Problem pr = block_problem(t, 300, 64, 64, density, heads);
          pr.causal = causal;
          pr.d = ++n % 2 ? 64 : 128;
          check(pr, ++seed);
        }
      }
    }
  }
}

// Block sizes that are and are not multiples of the CPU tile (64), and blocks larger than the
// sequence.
TEST(CpuAttentionBlockSparse, BlockSizes) {
  std::uint64_t seed = 31000;
  int n = 0;
  for (auto [bq, bk] : {std::pair{16, 16}, std::pair{128, 128}, std::pair{48, 80},
                        std::pair{32, 128}, std::pair{256, 16}, std::pair{512, 512}}) {
    for (bool causal : {false, true}) {
      Problem pr = block_problem(kDtypes[n % 3], 333, bq, bk, 0.5, n % 2 ? 4 : 1);
      pr.causal = causal;
      ++n;
      check(pr, ++seed);
    }
  }
}

// The layout ANDs with the window and the global tokens (and causal).
TEST(CpuAttentionBlockSparse, WithWindowAndGlobalTokens) {
  std::uint64_t seed = 32000;
  int n = 0;
  for (const MaskSpec m : {make_mask(40, 0), make_mask(30, 30), make_mask(20, 0, 8),
                           make_mask(16, 16, 4, 100), make_mask(-1, 0, 0, 64)}) {
    for (double density : {0.5, 0.1}) {
      for (bool causal : {false, true}) {
        Problem pr = block_problem(kDtypes[n % 3], 300, 32, 64, density, n % 2 ? 4 : 1);
        ++n;
        pr.causal = causal;
        pr.mask = m;
        check(pr, ++seed);
      }
    }
  }
}

TEST(CpuAttentionBlockSparse, SqDiffersFromSk) {
  std::uint64_t seed = 33000;
  int n = 0;
  for (auto [sq, sk] : {std::pair{17, 300}, std::pair{300, 17}, std::pair{1, 500},
                        std::pair{130, 64}, std::pair{64, 260}}) {
    for (bool causal : {false, true}) {
      for (double density : {0.5, 0.1}) {
        Problem pr = block_problem(kDtypes[n % 3], 0, 16, 32, density, n % 2 ? 4 : 1);
        ++n;
        pr.sq = sq;
        pr.sk = sk;
        pr.batch = 2;
        pr.causal = causal;
        if (n % 3 == 0) pr.mask = make_mask(50, 10, 2);
        check(pr, ++seed);
      }
    }
  }
}

// One layout (from max_seqlen) for every sequence, each starting at block 0.
TEST(CpuAttentionBlockSparse, Varlen) {
  std::uint64_t seed = 34000;
  for (DType t : kDtypes) {
    for (bool causal : {false, true}) {
      for (int heads : {1, 4}) {
        Problem pr = block_problem(t, 0, 32, 16, 0.5, heads);
        pr.causal = causal;
        pr.lens_q = pr.lens_k = {1, 17, 513, 70};
        check(pr, ++seed);
        pr.lens_k = {5, 40, 100, 70};  // Sq != Sk per sequence, both ways
        pr.d = 128;
        pr.block_density = 0.1;
        check(pr, ++seed);
        pr.lens_q = {5, 0, 33, 64, 3};  // empty sequences
        pr.lens_k = {7, 3, 0, 64, 0};
        pr.mask = make_mask(8, 8, 1);
        check(pr, ++seed);
      }
    }
  }
}

TEST(CpuAttentionBlockSparse, GqaAndMqa) {
  std::uint64_t seed = 35000;
  for (DType t : kDtypes) {
    for (int hkv : {2, 1}) {
      for (bool causal : {false, true}) {
        Problem pr = block_problem(t, 0, 64, 32, 0.5, 8);  // a layout per query head
        pr.hq = 8;
        pr.hkv = hkv;
        pr.sq = 145;
        pr.sk = 170;
        pr.d = hkv == 1 ? 128 : 64;
        pr.causal = causal;
        check(pr, ++seed);
      }
    }
  }
}

// A layout stored column-major (strides [nq * nk, 1, nq]) means the same as the row-major one.
TEST(CpuAttentionBlockSparse, StridedLayout) {
  std::uint64_t seed = 36000;
  for (bool causal : {false, true}) {
    Problem pr = block_problem(DType::f16, 200, 32, 48, 0.5, 4);
    pr.causal = causal;
    Problem transposed = pr;
    transposed.layout_transposed = true;
    check_same_as(transposed, pr, ++seed);
  }
}

// Every block on is no layout: the same tiles in the same order, bit for bit.
TEST(CpuAttentionBlockSparse, AllOnLayoutIsNoLayout) {
  std::uint64_t seed = 37000;
  for (DType t : kDtypes) {
    for (bool causal : {false, true}) {
      Problem none;
      none.dtype = t;
      none.sq = 150;
      none.sk = 200;
      none.causal = causal;
      none.mask = make_mask(40, 5, 3);
      for (auto [bq, bk] : {std::pair{16, 16}, std::pair{64, 64}, std::pair{48, 112}}) {
        Problem pr = none;
        pr.block_q = bq;
        pr.block_k = bk;
        pr.block_density = 1.0;
        check_same_as(pr, none, ++seed);
      }
    }
  }
}

// Rows whose blocks are all off (and, with causal, rows whose on blocks lie after the causal
// limit): out = 0, lse = -inf; every other row finite. Layout: 4 x 4 blocks of 32 over Sq = Sk =
// 128; row block 1 all off, row block 2 only key block 3 (after the causal limit of its rows).
TEST(CpuAttentionBlockSparse, RowsWithoutKeysGetZeroAndMinusInf) {
  const std::vector<std::uint8_t> blocks = {1, 0, 0, 1,   // rows 0..31
                                            0, 0, 0, 0,   // rows 32..63: nothing
                                            0, 0, 0, 1,   // rows 64..95: key block 3 only
                                            1, 1, 0, 1};  // rows 96..127
  std::uint64_t seed = 38000;
  for (DType t : kDtypes) {
    for (bool causal : {false, true}) {
      Problem pr;
      pr.dtype = t;
      pr.sq = pr.sk = 128;
      pr.causal = causal;
      pr.block_q = pr.block_k = 32;
      pr.blocks = blocks;
      SCOPED_TRACE(pr.str());
      Case s(pr, ++seed);
      attention_forward(s.args);
      ASSERT_NO_FATAL_FAILURE(expect_rows_without_keys(
          s, [&](int i) { return (i >= 32 && i < 64) || (causal && i >= 64 && i < 96); }));
      check(pr, seed);
    }
  }
  // Every block off: the whole output is 0, every lse -inf.
  Problem pr = block_problem(DType::bf16, 100, 64, 64, 0.0, 1);
  Case s(pr, ++seed);
  attention_forward(s.args);
  for (std::int64_t i = 0; i < s.out.numel(); ++i) ASSERT_EQ(s.out.get(i), 0.f);
  for (std::int64_t i = 0; i < s.lse.numel(); ++i) {
    ASSERT_TRUE(std::isinf(s.lse.get(i)) && s.lse.get(i) < 0);
  }
}

// Off blocks are skipped, not masked: a long sequence at 90% sparsity costs a tenth of dense.
// Sampled rows against the reference.
TEST(CpuAttentionBlockSparse, LongSequenceNinetyPercentSparse) {
  Problem pr = block_problem(DType::bf16, 16384, 128, 128, 0.1, 1);
  pr.hq = pr.hkv = 1;
  check(pr, 39000);
  pr.causal = true;
  pr.mask = make_mask(4096, 0, 64);
  check(pr, 39001);
}

TEST(CpuAttentionBlockSparse, ThreadCountDoesNotChangeResults) {
  Problem pr = block_problem(DType::f16, 0, 32, 64, 0.5, 4);
  pr.causal = true;
  pr.lens_q = {1, 17, 300, 70};
  pr.lens_k = {3, 17, 300, 150};
  check_thread_counts_agree(pr, 40000);
}

TEST(CpuAttentionBlockSparse, CompensatedPrecision) {
  std::uint64_t seed = 41000;
  for (DType t : kDtypes) {
    Problem pr = block_problem(t, 0, 16, 64, 0.5, 4);
    pr.precision = Precision::compensated;
    pr.causal = true;
    pr.sq = 77;
    pr.sk = 250;
    pr.mask = make_mask(70, 0, 5);
    check(pr, ++seed);
  }
}

}  // namespace
}  // namespace gpuattn
