// FP8 attention on the CPU (AttentionArgs::q_scale: q, k and v of E4M3 with their scales, out f32,
// f16 or bf16): the CPU backend against the fp64 reference (which reads x * scale) in dense,
// causal, GQA, varlen, paged and masked calls, each scale shown to matter; and every bad input
// named with out untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/expect_error.h"
#include "common/test_util.h"
#include "gpuattn/attention.h"
#include "gpuattn/numeric.h"
#include "gpuattn/reference.h"

namespace gpuattn::testing {
namespace {

// Values about N(0, 1) / scale stored as E4M3; scales about 1/16, per head (or one).
HostTensor e4m3_tensor(std::vector<std::int64_t> shape, std::uint64_t seed) {
  HostTensor t(DType::e4m3, std::move(shape));
  t.randomize(seed, 16.f);
  return t;
}
HostTensor scales(int n, float base) {
  HostTensor s(DType::f32, {n});
  for (int h = 0; h < n; ++h) s.set(h, (base + 0.25f * static_cast<float>(h % 3)) / 16.f);
  return s;
}

struct Fp8CpuCase {
  std::string name;
  DType out;
  int B, Hq, Hkv, Sq, Sk, D;
  bool causal = false;
  bool per_head = true;
  MaskSpec mask = {};
  int page = 0;
  bool strided_scale = false;  // q_scale a view of every other float of [2 Hq] (NaN between)
};

void expect_matches_reference(const Fp8CpuCase& c) {
  SCOPED_TRACE(c.name);
  HostTensor q = e4m3_tensor({c.B, c.Sq, c.Hq, c.D}, 1),
             k = e4m3_tensor({c.B, c.Sk, c.Hkv, c.D}, 2),
             v = e4m3_tensor({c.B, c.Sk, c.Hkv, c.D}, 3);
  HostTensor out(c.out, {c.B, c.Sq, c.Hq, c.D}), lse(DType::f32, {c.B, c.Hq, c.Sq});
  HostTensor qs = scales(c.per_head ? c.Hq : 1, 0.8f), ks = scales(c.per_head ? c.Hkv : 1, 0.6f),
             vs = scales(c.per_head ? c.Hkv : 1, 1.2f);
  if (c.strided_scale) {
    const HostTensor packed = scales(c.Hq, 0.8f);
    qs = HostTensor(DType::f32, {2 * c.Hq});
    for (int h = 0; h < c.Hq; ++h) {
      qs.set(2 * h, packed.get(h));
      qs.set(2 * h + 1, std::nanf(""));
    }
  }
  AttentionArgs a = tensor_args(q, k, v, out, &lse);
  PagedCache pc;
  if (c.page > 0) {
    pc = page_cache(k, v, c.page, {}, 2, 9);
    a.k = pc.k.view();
    a.v = pc.v.view();
    a.block_table = pc.table.view();
  }
  a.q_scale = qs.view();
  if (c.strided_scale) {
    a.q_scale.shape[0] = c.Hq;
    a.q_scale.stride[0] = 2;
  }
  a.k_scale = ks.view();
  a.v_scale = vs.view();
  a.causal = c.causal;
  a.mask = c.mask;
  a.backend = Backend::cpu;
  out.poison();
  lse.poison();
  attention_forward(a);
  const ReferenceResult ref = reference_attention(a);
  std::vector<float> l(static_cast<std::size_t>(lse.numel()));
  for (std::size_t i = 0; i < l.size(); ++i) l[i] = lse.get(static_cast<std::int64_t>(i));
  const Comparison cmp = compare(ref, out, c.Hq, c.D, &l, [&](std::int64_t row, int h) {
    return (row / c.Sq * c.Hq + h) * c.Sq + row % c.Sq;
  });
  EXPECT_EQ(cmp.nonfinite, 0);
  EXPECT_LT(cmp.rel_err, c.out == DType::bf16 ? 1e-2 : c.out == DType::f16 ? 2e-3 : 1e-5);
  EXPECT_LT(cmp.lse_rel, 1e-4);
  // The reference reads q as x * q_scale[h]: the same call with q dequantized here by hand (an f32
  // q, so out f32) has the same reference. And the scale matters: read at 1 it is far off.
  HostTensor qd(DType::f32, {c.B, c.Sq, c.Hq, c.D}), out32(DType::f32, {c.B, c.Sq, c.Hq, c.D});
  for (std::int64_t i = 0; i < q.numel(); ++i) {
    const int h = static_cast<int>((i / c.D) % c.Hq);
    const float scale = c.per_head ? qs.get(c.strided_scale ? 2 * h : h) : qs.get(0);
    qd.set(i, e4m3_to_float(static_cast<const std::uint8_t*>(q.data())[i]) * scale);
  }
  AttentionArgs by_hand = a;
  by_hand.q = qd.view();
  by_hand.out = out32.view();
  by_hand.lse = {};
  by_hand.q_scale = {};
  const ReferenceResult want = reference_attention(by_hand);
  double diff = 0, scale_diff = 0;
  for (std::size_t i = 0; i < want.out.size(); ++i) {
    diff =
        std::max(diff, std::fabs(want.out[i] - ref.out[i]) / std::max(1.0, std::fabs(want.out[i])));
  }
  EXPECT_LT(diff, 1e-6);
  HostTensor ones(DType::f32, {qs.numel()});
  for (std::int64_t h = 0; h < ones.numel(); ++h) ones.set(h, 1.f);
  AttentionArgs unscaled = a;
  unscaled.q_scale = ones.view();
  if (c.strided_scale) {
    unscaled.q_scale.shape[0] = c.Hq;
    unscaled.q_scale.stride[0] = 2;
  }
  const ReferenceResult wrong = reference_attention(unscaled);
  for (std::size_t i = 0; i < wrong.lse.size(); ++i) {
    if (std::isfinite(ref.lse[i])) {
      scale_diff = std::max(scale_diff, std::fabs(wrong.lse[i] - ref.lse[i]));
    }
  }
  EXPECT_GT(scale_diff, 1.0);
}

TEST(Fp8Cpu, EveryLayoutAndMaskMatchesTheReference) {
  const DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16;
  const std::vector<Fp8CpuCase> cases = {
      {"f32_dense", f32, 1, 2, 2, 33, 70, 128},
      {"bf16_causal_gqa", bf16, 2, 8, 2, 100, 77, 128, true},
      {"f16_one_scale_d64", f16, 2, 4, 4, 65, 130, 64, false, false},
      {"f32_d256_causal", f32, 1, 2, 1, 20, 40, 256, true},
      {"bf16_window", bf16, 1, 4, 2, 90, 90, 64, false, true, make_mask(7, 2, 1)},
      {"f16_paged", f16, 2, 4, 2, 9, 50, 128, true, true, {}, 16},
      {"f32_decode", f32, 3, 8, 2, 1, 200, 64, true},
      {"bf16_strided_q_scale", bf16, 2, 4, 2, 40, 50, 128, true, true, {}, 0, true},
  };
  for (const Fp8CpuCase& c : cases) expect_matches_reference(c);
}

TEST(Fp8Cpu, VarlenMatchesTheReference) {
  const std::vector<int> lq = {1, 40, 0, 9}, lk = {5, 64, 3, 100};
  int tq = 0, tk = 0;
  for (std::size_t i = 0; i < lq.size(); ++i) {
    tq += lq[i];
    tk += lk[i];
  }
  HostTensor q = e4m3_tensor({tq, 4, 128}, 4), k = e4m3_tensor({tk, 2, 128}, 5),
             v = e4m3_tensor({tk, 2, 128}, 6), out(DType::f32, {tq, 4, 128});
  HostTensor qs = scales(4, 1.f), ks = scales(2, 0.5f), vs = scales(1, 1.f);
  HostTensor cq = make_cu_seqlens(lq), ck = make_cu_seqlens(lk);
  AttentionArgs a = tensor_args(q, k, v, out);
  a.cu_seqlens_q = cq.view();
  a.cu_seqlens_k = ck.view();
  a.max_seqlen_q = 40;
  a.max_seqlen_k = 100;
  a.q_scale = qs.view();
  a.k_scale = ks.view();
  HostTensor vs2 = scales(2, 1.f);
  a.v_scale = vs2.view();
  a.causal = true;
  out.poison();
  attention_forward(a);
  const ReferenceResult ref = reference_attention(a);
  const Comparison cmp = compare(ref, out, 4, 128, nullptr, [](std::int64_t, int) { return 0; });
  EXPECT_EQ(cmp.nonfinite, 0);
  EXPECT_LT(cmp.rel_err, 1e-5);
}

// A valid FP8 call on the CPU, for the error tests to break one field of.
struct Fp8Call {
  HostTensor q = e4m3_tensor({1, 8, 2, 64}, 1), k = e4m3_tensor({1, 8, 2, 64}, 2),
             v = e4m3_tensor({1, 8, 2, 64}, 3), out{DType::f16, {1, 8, 2, 64}}, qs = scales(2, 1.f),
             ks = scales(1, 1.f), vs = scales(1, 1.f);
  AttentionArgs args() {
    AttentionArgs a = tensor_args(q, k, v, out);
    a.q_scale = qs.view();
    a.k_scale = ks.view();
    a.v_scale = vs.view();
    return a;
  }
};

// f breaks one field of a valid call; the error names `words` and out stays poisoned.
void expect_rejected(const std::function<void(Fp8Call&, AttentionArgs&)>& f,
                     const std::string& words, ErrorCode code = ErrorCode::invalid_argument) {
  SCOPED_TRACE(words);
  Fp8Call call;
  call.out.poison();
  AttentionArgs a = call.args();
  f(call, a);
  try {
    attention_forward(a);
    ADD_FAILURE() << "no error; expected one naming '" << words << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
  for (std::int64_t i = 0; i < call.out.numel(); ++i) {
    ASSERT_TRUE(std::isnan(call.out.get(i))) << "out element " << i << " was written";
  }
}

TEST(Fp8Cpu, BadInputsAreNamed) {
  expect_rejected([](Fp8Call&, AttentionArgs& a) { a.q_scale = {}; },
                  "q dtype is float8_e4m3fn but q_scale is missing");
  static HostTensor q16(DType::f16, {1, 8, 2, 64}), k16(DType::f16, {1, 8, 2, 64}),
      k8(DType::i8, {1, 8, 2, 64}), out8(DType::e4m3, {1, 8, 2, 64}), s3(DType::f32, {3}),
      s_i32(DType::i32, {2}), bad(DType::f32, {2});
  expect_rejected(
      [](Fp8Call&, AttentionArgs& a) {
        a.q = q16.view();
        a.k_scale = {};
        a.v_scale = {};
        a.k = k16.view();
        a.v = k16.view();
      },
      "q_scale is given but q dtype is float16");
  expect_rejected(
      [](Fp8Call&, AttentionArgs& a) {
        a.k = k8.view();
        a.v = k8.view();
      },
      "q dtype float8_e4m3fn needs k/v of float8_e4m3fn");
  expect_rejected([](Fp8Call&, AttentionArgs& a) { a.out = out8.view(); },
                  "out dtype float8_e4m3fn is not supported with float8_e4m3fn q",
                  ErrorCode::not_supported);
  expect_rejected([](Fp8Call&, AttentionArgs& a) { a.q_scale = s3.view(); },
                  "q_scale has shape [3], expected [Hq = 2] or [1]");
  expect_rejected([](Fp8Call&, AttentionArgs& a) { a.q_scale = s_i32.view(); },
                  "q_scale has dtype int32, expected float32");
  bad.set(0, 0.5f);
  bad.set(1, std::nanf(""));
  expect_rejected([](Fp8Call&, AttentionArgs& a) { a.q_scale = bad.view(); },
                  "q_scale[1] is nan, must be positive, finite and at most 7.6e35");
  bad.set(1, 1e36f);  // 448 x q_scale would overflow
  expect_rejected([](Fp8Call&, AttentionArgs& a) { a.q_scale = bad.view(); },
                  "q_scale[1] is 9.99999962e+35, must be positive, finite and at most 7.6e35");
}

}  // namespace
}  // namespace gpuattn::testing
