// AttentionArgs::seqused_k on the CPU backend: sequence b of a dense call attends to its first
// seqused_k[b] keys only, exactly as a call on a cache cut to that length would (causal
// bottom-right aligned to them; 0 keys: out 0, lse -inf), and every bad seqused_k is an
// invalid_argument that names it, with out untouched. leftpad_k likewise: keys leftpad_k[b] ..
// seqused_k[b] - 1, as a call on the cache cut to them, on the backend and in the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "common/expect_error.h"
#include "common/test_util.h"
#include "gpuattn/attention.h"
#include "gpuattn/reference.h"

namespace gpuattn::testing {
namespace {

// Batch entry b of a contiguous [B, S, H, D] tensor as a [1, rows, H, D] view of its rows from
// `first` (first + rows <= S).
TensorView batch_view(const HostTensor& t, int b, std::int64_t rows, std::int64_t first = 0) {
  TensorView v = t.view();
  v.data = static_cast<char*>(v.data) +
           (b * v.stride[0] + first * v.stride[1]) * element_size(t.dtype);
  v.shape[0] = 1;
  v.shape[1] = rows;
  return v;
}

// The call of batch entry b alone on its keys first .. first + keys - 1 (a view of the cut cache),
// into want / want_lse ([1, Sq, Hq, D] / [1, Hq, Sq]); no key: out 0, lse -inf.
void cut_cache_call(const HostTensor& q, const HostTensor& k, const HostTensor& v, int b, int sq,
                    int first, int keys, bool causal, HostTensor& want, HostTensor& want_lse) {
  if (keys > 0) {
    AttentionArgs c;
    c.q = batch_view(q, b, sq);
    c.k = batch_view(k, b, keys, first);
    c.v = batch_view(v, b, keys, first);
    c.out = want.view();
    c.lse = want_lse.view();
    c.causal = causal;
    c.backend = Backend::cpu;
    attention_forward(c);
    return;
  }
  for (std::int64_t i = 0; i < want.numel(); ++i) want.set(i, 0.f);
  for (std::int64_t i = 0; i < want_lse.numel(); ++i) want_lse.set(i, -INFINITY);
}

// Batch entry b of the whole call's out / lse against cut_cache_call's, within out_tol / lse_tol
// (-inf exact).
void expect_entry_matches(const HostTensor& out, const HostTensor& lse, const HostTensor& want,
                          const HostTensor& want_lse, int b, double out_tol, double lse_tol) {
  const std::int64_t n = want.numel(), m = want_lse.numel();
  for (std::int64_t i = 0; i < n; ++i) {
    ASSERT_NEAR(out.get(b * n + i), want.get(i), out_tol) << "element " << i;
  }
  for (std::int64_t i = 0; i < m; ++i) {
    const float got = lse.get(b * m + i), w = want_lse.get(i);
    if (std::isinf(w)) {
      EXPECT_EQ(got, w) << "lse " << i;
    } else {
      ASSERT_NEAR(got, w, lse_tol) << "lse " << i;
    }
  }
}

TEST(SeqUsedK, EachSequenceAttendsToItsFirstKeys) {
  const int B = 3, Hq = 8, Hkv = 2, Sk = 50, D = 64;
  const std::vector<int> used = {50, 17, 0};
  for (int Sq : {1, 3}) {
    for (bool causal : {false, true}) {
      SCOPED_TRACE("Sq " + std::to_string(Sq) + " causal " + std::to_string(causal));
      HostTensor q(DType::f32, {B, Sq, Hq, D}), k(DType::f32, {B, Sk, Hkv, D}),
          v(DType::f32, {B, Sk, Hkv, D}), out(DType::f32, {B, Sq, Hq, D}),
          lse(DType::f32, {B, Hq, Sq});
      q.randomize(11 + Sq);
      k.randomize(12 + Sq);
      v.randomize(13 + Sq);
      out.poison();
      lse.poison();
      const HostTensor seq = int32s(used);
      AttentionArgs a = tensor_args(q, k, v, out, &lse);
      a.seqused_k = seq.view();
      a.causal = causal;
      a.backend = Backend::cpu;
      attention_forward(a);
      for (int b = 0; b < B; ++b) {
        SCOPED_TRACE("batch " + std::to_string(b));
        HostTensor want(DType::f32, {1, Sq, Hq, D}), want_lse(DType::f32, {1, Hq, Sq});
        cut_cache_call(q, k, v, b, Sq, 0, used[b], causal, want, want_lse);
        expect_entry_matches(out, lse, want, want_lse, b, 1e-6, 1e-6);
      }
    }
  }
}

TEST(LeftpadK, EachSequenceAttendsToItsKeysFromThePad) {
  const int B = 4, Hq = 8, Hkv = 2, Sk = 50, D = 64;
  const std::vector<int> used = {50, 17, 9, 30}, pad = {3, 16, 9, 0};  // 47, 1, 0, 30 keys
  for (int Sq : {1, 3}) {
    for (bool causal : {false, true}) {
      for (bool with_used : {true, false}) {
        SCOPED_TRACE("Sq " + std::to_string(Sq) + " causal " + std::to_string(causal) +
                     " seqused_k " + std::to_string(with_used));
        HostTensor q(DType::f32, {B, Sq, Hq, D}), k(DType::f32, {B, Sk, Hkv, D}),
            v(DType::f32, {B, Sk, Hkv, D}), out(DType::f32, {B, Sq, Hq, D}),
            lse(DType::f32, {B, Hq, Sq});
        q.randomize(21 + Sq);
        k.randomize(22 + Sq);
        v.randomize(23 + Sq);
        out.poison();
        lse.poison();
        const HostTensor seq = int32s(used), starts = int32s(pad);
        AttentionArgs a = tensor_args(q, k, v, out, &lse);
        if (with_used) a.seqused_k = seq.view();
        a.leftpad_k = starts.view();
        a.causal = causal;
        a.backend = Backend::cpu;
        attention_forward(a);
        const ReferenceResult ref = reference_attention(a);
        for (int b = 0; b < B; ++b) {
          SCOPED_TRACE("batch " + std::to_string(b));
          const int end = with_used ? used[b] : Sk, keys = end - pad[b];
          HostTensor want(DType::f32, {1, Sq, Hq, D}), want_lse(DType::f32, {1, Hq, Sq});
          cut_cache_call(q, k, v, b, Sq, pad[b], keys, causal, want, want_lse);
          expect_entry_matches(out, lse, want, want_lse, b, 1e-6, 1e-5);
          const std::int64_t n = want.numel();
          for (std::int64_t i = 0; i < n; ++i) {
            ASSERT_NEAR(ref.out[b * n + i], want.get(i), 1e-5) << "reference element " << i;
          }
        }
      }
    }
  }
}

TEST(LeftpadK, BadValuesAreNamedAndOutIsUntouched) {
  const int B = 2, Sq = 1, H = 4, Sk = 30, D = 64;
  HostTensor q(DType::f32, {B, Sq, H, D}), k(DType::f32, {B, Sk, H, D}),
      v(DType::f32, {B, Sk, H, D}), out(DType::f32, {B, Sq, H, D});
  q.randomize(4);
  k.randomize(5);
  v.randomize(6);
  auto expect_invalid = [&](const AttentionArgs& a, const std::string& words) {
    out.poison();
    expect_invalid_argument([&] { attention_forward(a); }, words);
    for (std::int64_t i = 0; i < out.numel(); ++i) ASSERT_TRUE(std::isnan(out.get(i)));
  };
  AttentionArgs a = tensor_args(q, k, v, out);
  a.backend = Backend::cpu;
  const HostTensor past = int32s({30, 31}), negative = int32s({-1, 3}), used = int32s({5, 7});
  a.leftpad_k = past.view();
  expect_invalid(a, "leftpad_k[1] is 31, must be in [0, Sk = 30]");
  a.leftpad_k = negative.view();
  expect_invalid(a, "leftpad_k[0] is -1");
  const HostTensor eight = int32s({2, 8});
  a.seqused_k = used.view();
  a.leftpad_k = eight.view();
  expect_invalid(a, "leftpad_k[1] is 8, must be in [0, seqused_k[1] = 7]");
  const HostTensor three = int32s({1, 2, 3});
  a.leftpad_k = three.view();
  expect_invalid(a, "leftpad_k has shape [3], expected [batch = 2]");
  HostTensor floats(DType::f32, {2});
  a.leftpad_k = floats.view();
  expect_invalid(a, "leftpad_k has dtype float32, expected int32");
}

TEST(SeqUsedK, BadValuesAreNamedAndOutIsUntouched) {
  const int B = 2, Sq = 1, H = 4, Sk = 30, D = 64;
  HostTensor q(DType::f32, {B, Sq, H, D}), k(DType::f32, {B, Sk, H, D}),
      v(DType::f32, {B, Sk, H, D}), out(DType::f32, {B, Sq, H, D});
  q.randomize(1);
  k.randomize(2);
  v.randomize(3);
  auto expect_invalid = [&](const AttentionArgs& a, const std::string& words) {
    out.poison();
    expect_invalid_argument([&] { attention_forward(a); }, words);
    for (std::int64_t i = 0; i < out.numel(); ++i) ASSERT_TRUE(std::isnan(out.get(i)));
  };
  AttentionArgs a = tensor_args(q, k, v, out);
  a.backend = Backend::cpu;
  const HostTensor past = int32s({30, 31}), negative = int32s({-1, 3});
  a.seqused_k = past.view();
  expect_invalid(a, "seqused_k[1] is 31, must be in [0, Sk = 30]");
  a.seqused_k = negative.view();
  expect_invalid(a, "seqused_k[0] is -1");
  const HostTensor three = int32s({1, 2, 3});
  a.seqused_k = three.view();
  expect_invalid(a, "seqused_k has shape [3], expected [batch = 2]");
  HostTensor floats(DType::f32, {2});
  a.seqused_k = floats.view();
  expect_invalid(a, "seqused_k has dtype float32, expected int32");
  // Varlen calls give their key lengths in cu_seqlens_k.
  HostTensor vq(DType::f32, {2, H, D}), vk(DType::f32, {60, H, D}), vv(DType::f32, {60, H, D}),
      vout(DType::f32, {2, H, D});
  const HostTensor cq = make_cu_seqlens({1, 1}), ck = make_cu_seqlens({30, 30});
  AttentionArgs w = tensor_args(vq, vk, vv, vout);
  w.cu_seqlens_q = cq.view();
  w.cu_seqlens_k = ck.view();
  w.max_seqlen_q = 1;
  w.max_seqlen_k = 30;
  w.backend = Backend::cpu;
  const HostTensor ok = int32s({3, 4});
  w.seqused_k = ok.view();
  try {
    attention_forward(w);
    ADD_FAILURE() << "varlen + seqused_k accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("seqused_k is for dense calls"), std::string::npos)
        << e.what();
  }
  w.seqused_k = TensorView{};
  w.leftpad_k = ok.view();
  try {
    attention_forward(w);
    ADD_FAILURE() << "varlen + leftpad_k accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("leftpad_k is for dense calls"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace gpuattn::testing
