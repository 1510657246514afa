// A quantized KV cache (int8 / FP8 E4M3 with per-head scales, AttentionArgs::k_scale) on the CPU:
// the 8-bit conversions (every E4M3 code, ties to even, saturation, NaN), the CPU backend against
// the fp64 reference (which reads x * scale) in every layout (dense, seqused_k, paged, varlen),
// with masks and both precisions; append_kv quantizing new rows; and every bad input named with
// out and the caches untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "common/expect_error.h"
#include "common/test_util.h"
#include "gpuattn/attention.h"
#include "gpuattn/kv_cache.h"
#include "gpuattn/numeric.h"
#include "gpuattn/reference.h"

namespace gpuattn::testing {
namespace {

TEST(QuantizedKvNumeric, E4m3RoundTripsEveryCodeAndRoundsToNearestEven) {
  for (int code = 0; code < 256; ++code) {
    const float f = e4m3_to_float(static_cast<std::uint8_t>(code));
    if ((code & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(f)) << code;
      continue;
    }
    // -0 encodes as 0x80 and +0 as 0x00; everything else round-trips to its own code.
    EXPECT_EQ(float_to_e4m3(f), code) << "code " << code << " value " << f;
  }
  EXPECT_EQ(e4m3_to_float(0x7e), 448.f);
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.f, -9));  // smallest subnormal
  EXPECT_EQ(e4m3_to_float(0x08), std::ldexp(1.f, -6));  // smallest normal
  // Ties to even: 1 + 1/16 lies between 1 (mantissa 0) and 1.125 (mantissa 1): to 1.
  EXPECT_EQ(e4m3_to_float(float_to_e4m3(1.0625f)), 1.f);
  EXPECT_EQ(e4m3_to_float(float_to_e4m3(1.1875f)), 1.25f);  // between 1.125 and 1.25: to 1.25
  EXPECT_EQ(e4m3_to_float(float_to_e4m3(3 * std::ldexp(1.f, -10))), std::ldexp(1.f, -8));
  // Saturation (satfinite) and NaN.
  EXPECT_EQ(float_to_e4m3(1e9f), 0x7e);
  EXPECT_EQ(float_to_e4m3(-500.f), 0xfe);
  EXPECT_EQ(float_to_e4m3(std::numeric_limits<float>::infinity()), 0x7e);
  EXPECT_EQ(float_to_e4m3(std::nanf("")), 0x7f);
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.f, -11)), 0x00);  // under half the smallest subnormal
}

TEST(QuantizedKvNumeric, Int8RoundsToNearestEvenAndSaturatesSymmetrically) {
  EXPECT_EQ(float_to_i8(2.5f), 2);
  EXPECT_EQ(float_to_i8(3.5f), 4);
  EXPECT_EQ(float_to_i8(-2.5f), -2);
  EXPECT_EQ(float_to_i8(200.f), 127);
  EXPECT_EQ(float_to_i8(-200.f), -127);
  EXPECT_EQ(float_to_i8(std::nanf("")), 0);
}

// A cache of Hkv heads in `kv` with stored values of about N(0, 1) / scale, and scales around
// `unit` per head (one scale when !per_head).
struct QuantCache {
  HostTensor k, v, ks, vs;
};
QuantCache quant_cache(DType kv, std::vector<std::int64_t> shape, int hkv, bool per_head,
                       std::uint64_t seed) {
  const float unit = kv == DType::i8 ? 40.f : 16.f;
  QuantCache c{HostTensor(kv, shape), HostTensor(kv, shape),
               HostTensor(DType::f32, {per_head ? hkv : 1}),
               HostTensor(DType::f32, {per_head ? hkv : 1})};
  c.k.randomize(seed, unit);
  c.v.randomize(seed + 1, unit);
  for (std::int64_t h = 0; h < c.ks.numel(); ++h) {
    c.ks.set(h, (0.5f + 0.25f * static_cast<float>(h % 5)) / unit);
    c.vs.set(h, (1.5f - 0.2f * static_cast<float>(h % 4)) / unit);
  }
  return c;
}

struct CpuCase {
  std::string name;
  DType t, kv;
  int B, Hq, Hkv, Sq, Sk, D;
  bool causal = false;
  std::vector<int> used;
  int page = 0;
  MaskSpec mask = {};
  Precision precision = Precision::standard;
  bool per_head = true;
};

// The CPU backend's out and lse against the reference of the same (quantized) call.
void expect_cpu_matches_reference(const CpuCase& c) {
  SCOPED_TRACE(c.name);
  HostTensor q(c.t, {c.B, c.Sq, c.Hq, c.D}), out(c.t, {c.B, c.Sq, c.Hq, c.D}),
      lse(DType::f32, {c.B, c.Hq, c.Sq});
  q.randomize(std::hash<std::string>{}(c.name));
  QuantCache qc = quant_cache(c.kv, {c.B, c.Sk, c.Hkv, c.D}, c.Hkv, c.per_head, 7);
  HostTensor used = int32s(c.used.empty() ? std::vector<int>(c.B, c.Sk) : c.used);
  PagedCache pc;
  AttentionArgs a = tensor_args(q, qc.k, qc.v, out, &lse);
  if (c.page > 0) {
    pc = page_cache(qc.k, qc.v, c.page, c.used, 3, 11);
    a.k = pc.k.view();
    a.v = pc.v.view();
    a.block_table = pc.table.view();
  }
  if (!c.used.empty()) a.seqused_k = used.view();
  a.k_scale = qc.ks.view();
  a.v_scale = qc.vs.view();
  a.causal = c.causal;
  a.mask = c.mask;
  a.precision = c.precision;
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
  EXPECT_LT(cmp.rel_err, c.t == DType::bf16 ? 1e-2 : 2e-3);
  EXPECT_LT(cmp.lse_rel, 1e-4);
  // The scales matter: the same call read as if every scale were 1 is far off.
  HostTensor ones(DType::f32, {qc.ks.numel()});
  for (std::int64_t h = 0; h < ones.numel(); ++h) ones.set(h, 1.f);
  AttentionArgs unscaled = a;
  unscaled.k_scale = ones.view();
  unscaled.v_scale = ones.view();
  const ReferenceResult wrong = reference_attention(unscaled);
  double diff = 0;
  for (std::size_t i = 0; i < wrong.out.size(); ++i) {
    diff = std::max(diff, std::fabs(wrong.out[i] - ref.out[i]));
  }
  EXPECT_GT(diff, 1.0);
}

TEST(QuantizedKvCpu, EveryLayoutMaskAndPrecisionMatchesTheReference) {
  const std::vector<CpuCase> cases = {
      {"f16_e4m3_decode_gqa", DType::f16, DType::e4m3, 2, 8, 2, 1, 130, 64},
      {"bf16_i8_causal_prefill", DType::bf16, DType::i8, 2, 4, 2, 37, 70, 128, true},
      {"f32_e4m3_seqused", DType::f32, DType::e4m3, 3, 4, 1, 2, 90, 64, true, {90, 1, 0}},
      {"f16_i8_paged", DType::f16, DType::i8, 2, 4, 2, 3, 100, 64, true, {100, 33}, 16},
      {"bf16_e4m3_window_global",
       DType::bf16,
       DType::e4m3,
       1,
       2,
       2,
       50,
       120,
       256,
       false,
       {},
       0,
       make_mask(10, 3, 2)},
      {"f16_e4m3_compensated_one_scale",
       DType::f16,
       DType::e4m3,
       1,
       4,
       2,
       20,
       64,
       128,
       true,
       {},
       0,
       {},
       Precision::compensated,
       false},
  };
  for (const CpuCase& c : cases) expect_cpu_matches_reference(c);
}

TEST(QuantizedKvCpu, VarlenMatchesTheReference) {
  const std::vector<int> lq = {1, 30, 0, 7}, lk = {5, 64, 3, 100};
  int tq = 0, tk = 0;
  for (std::size_t i = 0; i < lq.size(); ++i) {
    tq += lq[i];
    tk += lk[i];
  }
  HostTensor q(DType::bf16, {tq, 6, 64}), out(DType::bf16, {tq, 6, 64});
  q.randomize(3);
  QuantCache qc = quant_cache(DType::i8, {tk, 2, 64}, 2, true, 5);
  HostTensor cq = make_cu_seqlens(lq), ck = make_cu_seqlens(lk);
  AttentionArgs a = tensor_args(q, qc.k, qc.v, out);
  a.cu_seqlens_q = cq.view();
  a.cu_seqlens_k = ck.view();
  a.max_seqlen_q = 30;
  a.max_seqlen_k = 100;
  a.k_scale = qc.ks.view();
  a.v_scale = qc.vs.view();
  a.causal = true;
  out.poison();
  attention_forward(a);
  const ReferenceResult ref = reference_attention(a);
  const Comparison cmp = compare(ref, out, 6, 64, nullptr, [](std::int64_t, int) { return 0; });
  EXPECT_EQ(cmp.nonfinite, 0);
  EXPECT_LT(cmp.rel_err, 1e-2);
}

TEST(QuantizedKvCpu, AppendQuantizesNewRowsWithTheHeadsScales) {
  const int B = 2, Sk = 12, Hkv = 2, D = 64, Sn = 3;
  for (DType kv : {DType::i8, DType::e4m3}) {
    for (DType t : {DType::f16, DType::bf16, DType::f32}) {
      SCOPED_TRACE(std::string(to_string(kv)) + " from " + to_string(t));
      QuantCache qc = quant_cache(kv, {B, Sk, Hkv, D}, Hkv, true, 9);
      HostTensor kn(t, {B, Sn, Hkv, D}), vn(t, {B, Sn, Hkv, D});
      kn.randomize(21, 3.f);
      vn.randomize(22, 3.f);
      kn.set(0, 1e6f);   // saturates
      vn.set(1, -1e6f);  // saturates
      const HostTensor lens = int32s({4, 9});
      HostTensor k = qc.k, v = qc.v;
      AppendKvArgs a;
      a.k_cache = k.view();
      a.v_cache = v.view();
      a.k_new = kn.view();
      a.v_new = vn.view();
      a.cache_seqlens = lens.view();
      a.k_scale = qc.ks.view();
      a.v_scale = qc.vs.view();
      append_kv(a);
      const auto* used = static_cast<const std::int32_t*>(lens.data());
      for (int b = 0; b < B; ++b) {
        for (int j = 0; j < Sk; ++j) {
          for (int h = 0; h < Hkv; ++h) {
            for (int d = 0; d < D; ++d) {
              const std::int64_t at = ((b * Sk + j) * Hkv + h) * D + d;
              const int i = j - used[b];
              float wk = qc.k.get(at), wv = qc.v.get(at);
              if (i >= 0 && i < Sn) {  // a new row: x / scale, rounded as the cache's dtype
                const std::int64_t src = ((b * Sn + i) * Hkv + h) * D + d;
                HostTensor one(kv, {2});
                one.set(0, kn.get(src) / qc.ks.get(h));
                one.set(1, vn.get(src) / qc.vs.get(h));
                wk = one.get(0);
                wv = one.get(1);
              }
              ASSERT_EQ(k.get(at), wk) << "k at b " << b << " j " << j << " h " << h << " d " << d;
              ASSERT_EQ(v.get(at), wv) << "v at b " << b << " j " << j << " h " << h << " d " << d;
            }
          }
        }
      }
      EXPECT_EQ(k.get(((0 * Sk + 4) * Hkv + 0) * D + 0), kv == DType::i8 ? 127.f : 448.f);
    }
  }
}

TEST(QuantizedKvCpu, BadScalesAndDtypesAreNamedAndOutIsUntouched) {
  HostTensor q(DType::f16, {1, 1, 4, 64}), out(DType::f16, {1, 1, 4, 64});
  q.randomize(1);
  QuantCache qc = quant_cache(DType::e4m3, {1, 20, 2, 64}, 2, true, 2);
  out.poison();
  const HostTensor before = out;
  auto args = [&] {
    AttentionArgs a = tensor_args(q, qc.k, qc.v, out);
    a.k_scale = qc.ks.view();
    a.v_scale = qc.vs.view();
    return a;
  };
  auto untouched = [&] {
    EXPECT_EQ(std::memcmp(out.data(), before.data(), out.bytes()), 0) << "out was written";
  };
  {
    AttentionArgs a = args();
    a.v_scale = {};
    expect_invalid_argument([&] { attention_forward(a); }, "v_scale is missing");
  }
  {
    AttentionArgs a = args();
    HostTensor three(DType::f32, {3});
    a.k_scale = three.view();
    expect_invalid_argument([&] { attention_forward(a); }, "k_scale has shape [3]");
  }
  {
    AttentionArgs a = args();
    HostTensor bad = qc.vs;
    bad.set(1, -0.5f);
    a.v_scale = bad.view();
    expect_invalid_argument([&] { attention_forward(a); }, "v_scale[1] is -0.5");
  }
  {
    AttentionArgs a = args();
    HostTensor nan = qc.ks;
    nan.set(0, std::nanf(""));
    a.k_scale = nan.view();
    expect_invalid_argument([&] { attention_forward(a); }, "k_scale[0] is nan");
  }
  {  // 127 x 1e37 is past float: the key became inf and the row NaN
    AttentionArgs a = args();
    HostTensor big = qc.ks;
    big.set(0, 1e37f);
    a.k_scale = big.view();
    expect_invalid_argument(
        [&] { attention_forward(a); },
        "k_scale[0] is 9.99999993e+36, must be positive, finite and at most 7.6e35");
  }
  {
    AttentionArgs a = args();
    HostTensor f16s(DType::f16, {2});
    a.k_scale = f16s.view();
    expect_invalid_argument([&] { attention_forward(a); }, "k_scale has dtype float16");
  }
  {
    AttentionArgs a = args();
    HostTensor vi8(DType::i8, {1, 20, 2, 64});
    a.v = vi8.view();
    expect_invalid_argument([&] { attention_forward(a); }, "v dtype int8 differs from k dtype");
  }
  {
    HostTensor k16(DType::f16, {1, 20, 2, 64}), v16(DType::f16, {1, 20, 2, 64});
    AttentionArgs a = tensor_args(q, k16, v16, out);
    a.k_scale = qc.ks.view();
    a.v_scale = qc.vs.view();
    expect_invalid_argument([&] { attention_forward(a); },
                            "k_scale is given but the cache dtype is float16");
  }
  {
    // (Hkv - 1) x stride past int32 floats: the kernels index hk * stride in int. Only the
    // address arithmetic matters, nothing is read (the check comes first).
    AttentionArgs a = args();
    a.k_scale.stride[0] = a.v_scale.stride[0] = std::int64_t{1} << 31;
    expect_invalid_argument([&] { attention_forward(a); },
                            "k_scale stride 2147483648: (Hkv - 1) x stride exceeds 2^31 - 1");
  }
  {
    // Three KV heads at stride 2^62 + 1: (Hkv - 1) x stride wrapped int64 negative, passed, and
    // the int cast read the scales at stride 1.
    QuantCache three = quant_cache(DType::e4m3, {1, 20, 3, 64}, 3, true, 5);
    HostTensor q3(DType::f16, {1, 5, 3, 64}), out3(DType::f16, {1, 5, 3, 64});
    AttentionArgs a = tensor_args(q3, three.k, three.v, out3);
    a.k_scale = three.ks.view();
    a.v_scale = three.vs.view();
    a.k_scale.stride[0] = a.v_scale.stride[0] = (std::int64_t{1} << 62) + 1;
    expect_invalid_argument([&] { attention_forward(a); },
                            "k_scale stride 4611686018427387905: (Hkv - 1) x stride exceeds");
  }
  untouched();
  {
    // A [1] scale's stride is never stepped over: k_scale stride 1 beside v_scale stride 0
    // (torch.tensor(.5).expand(1)), or a huge one, is the same scale and runs.
    QuantCache one = quant_cache(DType::e4m3, {1, 20, 2, 64}, 2, false, 3);
    AttentionArgs a = tensor_args(q, one.k, one.v, out);
    a.k_scale = one.ks.view();
    a.v_scale = one.vs.view();
    a.v_scale.stride[0] = 0;
    a.k_scale.stride[0] = std::int64_t{1} << 40;
    HostTensor want = out;
    AttentionArgs plain = tensor_args(q, one.k, one.v, want);
    plain.k_scale = one.ks.view();
    plain.v_scale = one.vs.view();
    attention_forward(plain);
    attention_forward(a);
    EXPECT_EQ(std::memcmp(out.data(), want.data(), out.bytes()), 0);
    out = before;
  }
  // append_kv: 16-bit rows of another width into an 8-bit cache, scales missing.
  HostTensor kn(DType::f16, {1, 1, 2, 64}), vn(DType::f16, {1, 1, 2, 64});
  const HostTensor lens = int32s({3});
  HostTensor k = qc.k;
  AppendKvArgs ap;
  ap.k_cache = k.view();
  ap.v_cache = qc.v.view();
  ap.k_new = kn.view();
  ap.v_new = vn.view();
  ap.cache_seqlens = lens.view();
  expect_invalid_argument([&] { append_kv(ap); }, "k_scale is missing");
  ap.k_scale = qc.ks.view();
  ap.v_scale = qc.vs.view();
  HostTensor vn8(DType::e4m3, {1, 1, 2, 64});
  ap.v_new = vn8.view();
  expect_invalid_argument([&] { append_kv(ap); }, "v_new dtype float8_e4m3fn differs");
  EXPECT_EQ(std::memcmp(k.data(), qc.k.data(), k.bytes()), 0) << "the cache was written";
}

}  // namespace
}  // namespace gpuattn::testing
