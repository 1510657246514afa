// The fp64 reference itself, against cases computed by hand and against itself under relayouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "gpuattn/attention.h"
#include "gpuattn/reference.h"

namespace gpuattn {
namespace {

using testing::HostTensor;
using testing::make_cu_seqlens;
using testing::make_mask;
using testing::tensor_args;

constexpr double kTol = 1e-12;

// Dense f32 problem q [B, Sq, Hq, D], k/v [B, Sk, Hkv, D] with random contents.
struct Dense {
  int B, Sq, Sk, Hq, Hkv, D;
  HostTensor q, k, v, out;
  Dense(int b, int sq, int sk, int hq, int hkv, int d, std::uint64_t seed, DType t = DType::f32)
      : B(b), Sq(sq), Sk(sk), Hq(hq), Hkv(hkv), D(d) {
    q = HostTensor(t, {B, Sq, Hq, D});
    k = HostTensor(t, {B, Sk, Hkv, D});
    v = HostTensor(t, {B, Sk, Hkv, D});
    out = HostTensor(t, {B, Sq, Hq, D});
    q.randomize(seed);
    k.randomize(seed + 1);
    v.randomize(seed + 2);
  }
  AttentionArgs args(bool causal = false) const {
    AttentionArgs a = tensor_args(q, k, v, out);
    a.causal = causal;
    return a;
  }
  double qd(int b, int i, int h, int d) const { return q.get(((b * Sq + i) * Hq + h) * D + d); }
  double kd(int b, int j, int h, int d) const { return k.get(((b * Sk + j) * Hkv + h) * D + d); }
  double vd(int b, int j, int h, int d) const { return v.get(((b * Sk + j) * Hkv + h) * D + d); }
  // Reference result index helpers (all rows computed: row = b * Sq + i).
  std::size_t out_index(int b, int i, int h, int d) const {
    return static_cast<std::size_t>(((b * Sq + i) * Hq + h) * D + d);
  }
  std::size_t lse_index(int b, int i, int h) const {
    return static_cast<std::size_t>((b * Sq + i) * Hq + h);
  }
};

TEST(Reference, SingleKeyGivesItsValueRow) {
  const Dense p(2, 5, 1, 4, 2, 64, 100);
  const ReferenceResult r = reference_attention(p.args());
  ASSERT_EQ(r.rows.size(), 10u);
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < 5; ++i) {
      for (int h = 0; h < 4; ++h) {
        const int hk = h / 2;
        double dot = 0;
        for (int d = 0; d < 64; ++d) dot += p.qd(b, i, h, d) * p.kd(b, 0, hk, d);
        EXPECT_NEAR(r.lse[p.lse_index(b, i, h)], dot / 8.0, kTol);  // default scale 1/sqrt(64)
        for (int d = 0; d < 64; ++d) {
          ASSERT_EQ(r.out[p.out_index(b, i, h, d)], p.vd(b, 0, hk, d));
        }
      }
    }
  }
}

TEST(Reference, EqualKeysGiveMeanOfValues) {
  Dense p(1, 3, 37, 2, 2, 128, 200);
  for (int j = 1; j < p.Sk; ++j) {  // every key row equal to key row 0
    std::memcpy(static_cast<float*>(p.k.data()) + j * 2 * 128, p.k.data(), 2 * 128 * sizeof(float));
  }
  AttentionArgs a = p.args();
  a.softmax_scale = 0.3f;
  const ReferenceResult r = reference_attention(a);
  for (int i = 0; i < 3; ++i) {
    for (int h = 0; h < 2; ++h) {
      double dot = 0;
      for (int d = 0; d < 128; ++d) dot += p.qd(0, i, h, d) * p.kd(0, 0, h, d);
      const double s = dot * static_cast<double>(0.3f);
      EXPECT_NEAR(r.lse[p.lse_index(0, i, h)], s + std::log(37.0), kTol);
      for (int d = 0; d < 128; ++d) {
        double mean = 0;
        for (int j = 0; j < p.Sk; ++j) mean += p.vd(0, j, h, d);
        EXPECT_NEAR(r.out[p.out_index(0, i, h, d)], mean / p.Sk, kTol);
      }
    }
  }
}

// Head dim 256, GQA, causal with Sq < Sk: against a direct softmax over the visible keys
// (bottom-right aligned: row i sees keys j <= i + Sk - Sq), default scale 1/sqrt(256).
TEST(Reference, HeadDim256MatchesDirectSoftmax) {
  const Dense p(2, 5, 9, 4, 2, 256, 250);
  const ReferenceResult r = reference_attention(p.args(/*causal=*/true));
  for (int b = 0; b < p.B; ++b) {
    for (int i = 0; i < p.Sq; ++i) {
      for (int h = 0; h < p.Hq; ++h) {
        const int hk = h / 2, visible = i + p.Sk - p.Sq + 1;
        std::vector<double> s(static_cast<std::size_t>(visible));
        double mx = -INFINITY;
        for (int j = 0; j < visible; ++j) {
          double dot = 0;
          for (int d = 0; d < 256; ++d) dot += p.qd(b, i, h, d) * p.kd(b, j, hk, d);
          s[static_cast<std::size_t>(j)] = dot / 16.0;
          mx = std::max(mx, dot / 16.0);
        }
        double l = 0;
        for (double& x : s) l += (x = std::exp(x - mx));
        EXPECT_NEAR(r.lse[p.lse_index(b, i, h)], mx + std::log(l), 1e-10);
        for (int d = 0; d < 256; ++d) {
          double o = 0;
          for (int j = 0; j < visible; ++j) o += s[static_cast<std::size_t>(j)] * p.vd(b, j, hk, d);
          EXPECT_NEAR(r.out[p.out_index(b, i, h, d)], o / l, 1e-10);
        }
      }
    }
  }
}

// q = e0, k_j = x_j e0, scale 1: the logits are x_j, so lse and out have closed forms.
TEST(Reference, ThreeKeysClosedForm) {
  Dense p(1, 1, 3, 1, 1, 64, 300);
  const double x[3] = {0.5, -1.0, 2.0};
  for (int d = 0; d < 64; ++d) {
    p.q.set(d, d == 0 ? 1.f : 0.f);
    for (int j = 0; j < 3; ++j) p.k.set(j * 64 + d, d == 0 ? static_cast<float>(x[j]) : 0.f);
  }
  AttentionArgs a = p.args();
  a.softmax_scale = 1.f;
  const ReferenceResult r = reference_attention(a);
  const double z = std::exp(0.5) + std::exp(-1.0) + std::exp(2.0);
  EXPECT_NEAR(r.lse[0], std::log(z), kTol);
  for (int d = 0; d < 64; ++d) {
    double o = 0;
    for (int j = 0; j < 3; ++j) o += std::exp(x[j]) / z * p.vd(0, j, 0, d);
    EXPECT_NEAR(r.out[static_cast<std::size_t>(d)], o, kTol);
  }
}

TEST(Reference, CausalFirstRowSeesOnlyFirstKey) {
  const Dense p(2, 9, 9, 2, 1, 64, 400);
  const ReferenceResult r = reference_attention(p.args(/*causal=*/true));
  for (int b = 0; b < 2; ++b) {
    for (int h = 0; h < 2; ++h) {
      double dot = 0;
      for (int d = 0; d < 64; ++d) dot += p.qd(b, 0, h, d) * p.kd(b, 0, 0, d);
      EXPECT_NEAR(r.lse[p.lse_index(b, 0, h)], dot / 8.0, kTol);
      for (int d = 0; d < 64; ++d) ASSERT_EQ(r.out[p.out_index(b, 0, h, d)], p.vd(b, 0, 0, d));
    }
  }
}

// Bottom-right alignment: causal row i equals the non-causal result over keys [0, i + Sk - Sq].
TEST(Reference, CausalRowsEqualTruncatedNonCausal) {
  for (auto [sq, sk] : {std::pair{6, 6}, std::pair{4, 10}, std::pair{10, 4}}) {
    const Dense p(1, sq, sk, 2, 2, 64, 500 + sq);
    const ReferenceResult causal = reference_attention(p.args(true));
    for (int i = 0; i < sq; ++i) {
      const int n = i + sk - sq + 1;
      if (n <= 0) continue;  // covered by CausalRowsBeforeTheDiagonalSeeNothing
      AttentionArgs a = p.args(false);
      a.k.shape[1] = a.v.shape[1] = n;
      const ReferenceResult full = reference_attention(a, {i});
      for (int h = 0; h < 2; ++h) {
        EXPECT_EQ(causal.lse[p.lse_index(0, i, h)], full.lse[static_cast<std::size_t>(h)]);
        for (int d = 0; d < 64; ++d) {
          ASSERT_EQ(causal.out[p.out_index(0, i, h, d)],
                    full.out[static_cast<std::size_t>(h * 64 + d)])
              << "Sq " << sq << " Sk " << sk << " row " << i;
        }
      }
    }
  }
}

TEST(Reference, CausalRowsBeforeTheDiagonalSeeNothing) {
  const Dense p(1, 7, 3, 2, 2, 64, 600);  // rows 0..3 see no key, row 4 sees key 0
  const ReferenceResult r = reference_attention(p.args(true));
  for (int h = 0; h < 2; ++h) {
    for (int i = 0; i < 4; ++i) {
      const double l = r.lse[p.lse_index(0, i, h)];
      EXPECT_TRUE(std::isinf(l) && l < 0) << "row " << i;
      for (int d = 0; d < 64; ++d) ASSERT_EQ(r.out[p.out_index(0, i, h, d)], 0.0);
    }
    for (int d = 0; d < 64; ++d) ASSERT_EQ(r.out[p.out_index(0, 4, h, d)], p.vd(0, 0, h, d));
    EXPECT_TRUE(std::isfinite(r.lse[p.lse_index(0, 6, h)]));
  }
}

TEST(Reference, RowSubsetEqualsFullCall) {
  const Dense p(3, 11, 13, 4, 2, 128, 700);
  const AttentionArgs a = p.args(true);
  const ReferenceResult full = reference_attention(a);
  const std::vector<std::int64_t> rows = {32, 0, 5, 17, 5};
  const ReferenceResult sub = reference_attention(a, rows);
  ASSERT_EQ(sub.rows, rows);
  ASSERT_EQ(sub.out.size(), rows.size() * 4 * 128);
  for (std::size_t ri = 0; ri < rows.size(); ++ri) {
    const auto row = static_cast<std::size_t>(rows[ri]);
    for (std::size_t x = 0; x < 4 * 128; ++x)
      ASSERT_EQ(sub.out[ri * 512 + x], full.out[row * 512 + x]);
    for (std::size_t h = 0; h < 4; ++h) EXPECT_EQ(sub.lse[ri * 4 + h], full.lse[row * 4 + h]);
  }
  EXPECT_THROW(reference_attention(a, {33}), Error);
  EXPECT_THROW(reference_attention(a, {-1}), Error);
}

// GQA: query head h reads kv head h / (Hq / Hkv); same result as K/V with the heads repeated.
TEST(Reference, GqaEqualsRepeatedKvHeads) {
  const Dense gqa(2, 5, 8, 6, 2, 64, 800);
  Dense mha(2, 5, 8, 6, 6, 64, 800);
  for (int b = 0; b < 2; ++b) {
    for (int j = 0; j < 8; ++j) {
      for (int h = 0; h < 6; ++h) {
        for (int d = 0; d < 64; ++d) {
          const std::int64_t idx = ((b * 8 + j) * 6 + h) * 64 + d;
          mha.k.set(idx, static_cast<float>(gqa.kd(b, j, h / 3, d)));
          mha.v.set(idx, static_cast<float>(gqa.vd(b, j, h / 3, d)));
        }
      }
    }
  }
  for (bool causal : {false, true}) {
    const ReferenceResult a = reference_attention(gqa.args(causal));
    const ReferenceResult b = reference_attention(mha.args(causal));
    EXPECT_EQ(a.out, b.out);
    EXPECT_EQ(a.lse, b.lse);
  }
}

// Varlen: each sequence equals a dense call on its slice of the packed tensors.
// A varlen call's max_seqlen_k is the caller's bound: the reference's scratch follows the keys the
// rows see (it was sized by max_seqlen_k: 2^31 - 1 asked for 25 GB and threw std::bad_alloc).
TEST(Reference, ScratchFollowsTheSequencesNotMaxSeqlen) {
  const std::vector<int> lq = {1, 1}, lk = {3, 2};
  HostTensor q(DType::f32, {2, 1, 64}), k(DType::f32, {5, 1, 64}), v(DType::f32, {5, 1, 64}),
      out(DType::f32, {2, 1, 64});
  q.randomize(910);
  k.randomize(911);
  v.randomize(912);
  const HostTensor cu_q = make_cu_seqlens(lq), cu_k = make_cu_seqlens(lk);
  AttentionArgs a = tensor_args(q, k, v, out);
  a.cu_seqlens_q = cu_q.view();
  a.cu_seqlens_k = cu_k.view();
  a.max_seqlen_q = 1;
  a.max_seqlen_k = 3;
  const ReferenceResult tight = reference_attention(a);
  a.max_seqlen_k = INT32_MAX;
  const ReferenceResult loose = reference_attention(a);
  EXPECT_EQ(loose.out, tight.out);
  EXPECT_EQ(loose.lse, tight.lse);
}

TEST(Reference, VarlenEqualsDensePerSequence) {
  const std::vector<int> lq = {3, 0, 7, 2}, lk = {5, 2, 7, 0};
  const int H = 2, D = 64;
  HostTensor q(DType::f32, {12, H, D}), k(DType::f32, {14, H, D}), v(DType::f32, {14, H, D}),
      out(DType::f32, {12, H, D});
  q.randomize(900);
  k.randomize(901);
  v.randomize(902);
  const HostTensor cu_q = make_cu_seqlens(lq), cu_k = make_cu_seqlens(lk);
  for (bool causal : {false, true}) {
    AttentionArgs a = tensor_args(q, k, v, out);
    a.cu_seqlens_q = cu_q.view();
    a.cu_seqlens_k = cu_k.view();
    a.max_seqlen_q = 7;
    a.max_seqlen_k = 7;
    a.causal = causal;
    const ReferenceResult packed = reference_attention(a);
    int row_q = 0, row_k = 0;
    for (std::size_t s = 0; s < lq.size(); ++s) {
      if (lq[s] > 0) {
        auto dense = [&](const HostTensor& t, int row0, int len) {
          TensorView tv = t.view();
          tv.data = static_cast<float*>(const_cast<void*>(t.data())) + row0 * H * D;
          tv.rank = 4;
          tv.shape = {1, len, H, D};
          tv.stride = {std::int64_t{len} * H * D, H * D, D, 1};
          return tv;
        };
        AttentionArgs d;
        d.q = dense(q, row_q, lq[s]);
        d.out = dense(out, row_q, lq[s]);
        d.causal = causal;
        if (lk[s] > 0) {
          d.k = dense(k, row_k, lk[s]);
          d.v = dense(v, row_k, lk[s]);
          const ReferenceResult one = reference_attention(d);
          for (std::size_t x = 0; x < one.out.size(); ++x) {
            ASSERT_EQ(one.out[x], packed.out[row_q * H * D + x]) << "sequence " << s;
          }
          for (std::size_t x = 0; x < one.lse.size(); ++x) {
            ASSERT_EQ(one.lse[x], packed.lse[row_q * H + x]) << "sequence " << s;
          }
        } else {  // no keys (not expressible densely): out 0, lse -inf
          for (int x = 0; x < lq[s] * H * D; ++x) ASSERT_EQ(packed.out[row_q * H * D + x], 0.0);
          for (int x = 0; x < lq[s] * H; ++x) ASSERT_TRUE(std::isinf(packed.lse[row_q * H + x]));
        }
      }
      row_q += lq[s];
      row_k += lk[s];
    }
  }
}

// f16/bf16 inputs are read exactly: same result as f32 inputs holding the converted values.
TEST(Reference, HalfInputsEqualTheirFloatValues) {
  for (DType t : {DType::f16, DType::bf16}) {
    const Dense h(1, 6, 9, 2, 1, 64, 1000, t);
    Dense f(1, 6, 9, 2, 1, 64, 1000);
    for (std::int64_t i = 0; i < h.q.numel(); ++i) f.q.set(i, h.q.get(i));
    for (std::int64_t i = 0; i < h.k.numel(); ++i) f.k.set(i, h.k.get(i));
    for (std::int64_t i = 0; i < h.v.numel(); ++i) f.v.set(i, h.v.get(i));
    const ReferenceResult a = reference_attention(h.args(true));
    const ReferenceResult b = reference_attention(f.args(true));
    EXPECT_EQ(a.out, b.out) << to_string(t);
    EXPECT_EQ(a.lse, b.lse) << to_string(t);
  }
}

// Strided views (q, k, v slices of one packed qkv tensor) read the same elements.
TEST(Reference, StridedViewsEqualContiguous) {
  const int B = 2, S = 5, H = 2, D = 64;
  HostTensor qkv(DType::bf16, {B, S, 3 * H, D});
  qkv.randomize(1100);
  Dense c(B, S, S, H, H, D, 1100, DType::bf16);
  for (int b = 0; b < B; ++b) {
    for (int s = 0; s < S; ++s) {
      for (int h = 0; h < H; ++h) {
        for (int d = 0; d < D; ++d) {
          const std::int64_t src = ((b * S + s) * 3 * H + h) * D + d;
          const std::int64_t dst = ((b * S + s) * H + h) * D + d;
          c.q.set(dst, qkv.get(src));
          c.k.set(dst, qkv.get(src + H * D));
          c.v.set(dst, qkv.get(src + 2 * H * D));
        }
      }
    }
  }
  AttentionArgs a = c.args();
  for (int which = 0; which < 3; ++which) {
    TensorView tv = qkv.view();
    tv.data = static_cast<std::uint16_t*>(qkv.data()) + which * H * D;
    tv.shape = {B, S, H, D};
    tv.stride = {std::int64_t{S} * 3 * H * D, 3 * H * D, D, 1};
    (which == 0 ? a.q : which == 1 ? a.k : a.v) = tv;
  }
  const ReferenceResult strided = reference_attention(a);
  const ReferenceResult contiguous = reference_attention(c.args());
  EXPECT_EQ(strided.out, contiguous.out);
  EXPECT_EQ(strided.lse, contiguous.lse);
}

// ---- masks: sliding window, global tokens -------------------------------------------------------

void expect_same(const ReferenceResult& a, const ReferenceResult& b, const std::string& what) {
  EXPECT_TRUE(a.out == b.out) << what;
  EXPECT_TRUE(a.lse == b.lse) << what;
}

// A window that covers every key, or global tokens that cover every key, is no mask at all.
TEST(ReferenceMask, CoveringMasksEqualNoMask) {
  for (auto [sq, sk] : {std::pair{13, 29}, std::pair{29, 13}, std::pair{20, 20}}) {
    const Dense p(2, sq, sk, 4, 2, 64, 1200 + sq);
    for (bool causal : {false, true}) {
      const ReferenceResult none = reference_attention(p.args(causal));
      const int cover = sq + sk;  // no window edge can bind
      for (const MaskSpec m : {make_mask(cover, cover), make_mask(1000, -1), make_mask(-1, 1000),
                               make_mask(INT_MAX, INT_MAX), make_mask(0, 0, sk),
                               make_mask(2, 1, 0, 1), make_mask(-1, -1, 3, 2)}) {
        AttentionArgs a = p.args(causal);
        a.mask = m;
        expect_same(reference_attention(a), none,
                    "Sq " + std::to_string(sq) + " Sk " + std::to_string(sk) +
                        (causal ? " causal" : "") + " window (" + std::to_string(m.window_left) +
                        ", " + std::to_string(m.window_right) + ") G " +
                        std::to_string(m.global_tokens) + " S " + std::to_string(m.global_stride));
      }
    }
  }
}

// flash-attn: causal is the window (-1, 0), and (L, 0) for any L >= Sk; causal + window (L, r) is
// the window (L, min(r, 0)).
TEST(ReferenceMask, LeftWindowEqualsCausal) {
  for (auto [sq, sk] : {std::pair{13, 29}, std::pair{29, 13}, std::pair{20, 20}}) {
    const Dense p(1, sq, sk, 2, 2, 64, 1300 + sq);
    const ReferenceResult causal = reference_attention(p.args(true));
    for (int left : {-1, sk, sk + 5, INT_MAX}) {
      AttentionArgs a = p.args(false);
      a.mask = make_mask(left, 0);
      expect_same(reference_attention(a), causal, "left " + std::to_string(left));
      a.causal = true;
      a.mask = make_mask(left, 7);
      expect_same(reference_attention(a), causal, "causal, left " + std::to_string(left));
    }
    AttentionArgs a = p.args(true);
    a.mask = make_mask(3, 5);
    AttentionArgs b = p.args(false);
    b.mask = make_mask(3, 0);
    expect_same(reference_attention(a), reference_attention(b), "causal + (3, 5) == (3, 0)");
  }
}

// Window (0, 0): each row sees only the key at its own position, so out is that value row.
TEST(ReferenceMask, WindowZeroSeesOwnPositionOnly) {
  for (auto [sq, sk] : {std::pair{9, 9}, std::pair{5, 9}, std::pair{9, 5}}) {
    const Dense p(1, sq, sk, 2, 1, 64, 1400 + sq);
    AttentionArgs a = p.args();
    a.mask = make_mask(0, 0);
    const ReferenceResult r = reference_attention(a);
    for (int i = 0; i < sq; ++i) {
      const int j = i + sk - sq;
      for (int h = 0; h < 2; ++h) {
        const double l = r.lse[p.lse_index(0, i, h)];
        if (j < 0) {
          EXPECT_TRUE(std::isinf(l) && l < 0) << "row " << i;
          for (int d = 0; d < 64; ++d) ASSERT_EQ(r.out[p.out_index(0, i, h, d)], 0.0);
          continue;
        }
        double dot = 0;
        for (int d = 0; d < 64; ++d) dot += p.qd(0, i, h, d) * p.kd(0, j, 0, d);
        EXPECT_NEAR(l, dot / 8.0, kTol);
        for (int d = 0; d < 64; ++d) ASSERT_EQ(r.out[p.out_index(0, i, h, d)], p.vd(0, j, 0, d));
      }
    }
  }
}

// Naive fp64 attention of row i, head h (kv head 0) of batch b over `keys`, against the reference.
void expect_naive_row(const Dense& p, const ReferenceResult& r, int b, int i, int h,
                      const std::vector<int>& keys, const std::string& where) {
  const double l = r.lse[p.lse_index(b, i, h)];
  if (keys.empty()) {
    EXPECT_TRUE(std::isinf(l) && l < 0) << where;
    for (int d = 0; d < p.D; ++d) ASSERT_EQ(r.out[p.out_index(b, i, h, d)], 0.0) << where;
    return;
  }
  const double scale = 1.0 / std::sqrt(double(p.D));
  std::vector<double> s;
  double mx = -INFINITY;
  for (int j : keys) {
    double dot = 0;
    for (int d = 0; d < p.D; ++d) dot += p.qd(b, i, h, d) * p.kd(b, j, 0, d);
    s.push_back(dot * scale);
    mx = std::max(mx, s.back());
  }
  double z = 0;
  for (double x : s) z += std::exp(x - mx);
  EXPECT_NEAR(l, mx + std::log(z), kTol) << where;
  for (int d = 0; d < p.D; ++d) {
    double o = 0;
    for (std::size_t t = 0; t < keys.size(); ++t) {
      o += std::exp(s[t] - mx) / z * p.vd(b, keys[t], 0, d);
    }
    ASSERT_NEAR(r.out[p.out_index(b, i, h, d)], o, kTol) << where;
  }
}

// Key j is visible to row i under the position rule of attention.h, written out here.
bool naive_visible(const MaskSpec& m, bool causal, int i, int j, int sq, int sk) {
  auto global = [&](int t) {
    return t >= 0 && (t < m.global_tokens || (m.global_stride > 0 && t % m.global_stride == 0));
  };
  const int pos = i + sk - sq;
  const bool lo = m.window_left < 0 || j >= pos - m.window_left;
  const bool hi = m.window_right < 0 || j <= pos + m.window_right;
  return (!causal || j <= pos) && ((lo && hi) || global(j) || global(pos));
}

// Against a naive fp64 attention over keys chosen by the rule of attention.h.
TEST(ReferenceMask, MatchesNaiveMaskedAttention) {
  std::uint64_t seed = 1500;
  for (auto [sq, sk] : {std::pair{12, 12}, std::pair{7, 19}, std::pair{19, 7}}) {
    for (bool causal : {false, true}) {
      for (const MaskSpec m : {make_mask(2, 1), make_mask(0, 3, 2), make_mask(3, 0, 0, 5),
                               make_mask(-1, 2, 1, 4), make_mask(1, -1, 0, 3)}) {
        const Dense p(2, sq, sk, 2, 1, 64, ++seed);
        AttentionArgs a = p.args(causal);
        a.mask = m;
        const ReferenceResult r = reference_attention(a);
        for (int b = 0; b < 2; ++b) {
          for (int i = 0; i < sq; ++i) {
            std::vector<int> keys;
            for (int j = 0; j < sk; ++j) {
              if (naive_visible(m, causal, i, j, sq, sk)) keys.push_back(j);
            }
            for (int h = 0; h < 2; ++h) {
              expect_naive_row(p, r, b, i, h, keys,
                               "Sq " + std::to_string(sq) + " Sk " + std::to_string(sk) + " row " +
                                   std::to_string(i));
            }
          }
        }
      }
    }
  }
}

// A block layout per head (and shared), ANDed with the position rule.
TEST(ReferenceMask, MatchesNaiveBlockSparseAttention) {
  std::uint64_t seed = 1600;
  for (auto [sq, sk] : {std::pair{40, 40}, std::pair{20, 70}, std::pair{70, 20}}) {
    for (bool causal : {false, true}) {
      for (const MaskSpec m : {make_mask(-1, -1), make_mask(9, 2), make_mask(5, 0, 3, 17)}) {
        for (int heads : {1, 2}) {
          const Dense p(2, sq, sk, 2, 1, 64, ++seed);
          const int bq = 16, bk = 32, nq = (sq + bq - 1) / bq, nk = (sk + bk - 1) / bk;
          HostTensor layout(DType::u8, {heads, nq, nk});
          auto* on = static_cast<std::uint8_t*>(layout.data());
          for (int x = 0; x < heads * nq * nk; ++x) on[x] = (x * 7 + seed) % 3 != 0;
          AttentionArgs a = p.args(causal);
          a.mask = m;
          a.mask.block_sparse = {layout.view(), bq, bk};
          const ReferenceResult r = reference_attention(a);
          for (int b = 0; b < 2; ++b) {
            for (int i = 0; i < sq; ++i) {
              for (int h = 0; h < 2; ++h) {
                const int lh = heads == 1 ? 0 : h;
                std::vector<int> keys;
                for (int j = 0; j < sk; ++j) {
                  if (on[(lh * nq + i / bq) * nk + j / bk] &&
                      naive_visible(m, causal, i, j, sq, sk)) {
                    keys.push_back(j);
                  }
                }
                expect_naive_row(p, r, b, i, h, keys,
                                 "Sq " + std::to_string(sq) + " Sk " + std::to_string(sk) +
                                     " layout heads " + std::to_string(heads) + " row " +
                                     std::to_string(i) + " head " + std::to_string(h));
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace gpuattn
