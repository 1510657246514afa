// A quantized KV cache (int8 / FP8 E4M3, a scale per KV head or one for all) on CUDA, against the
// fp64 reference of the same call (which reads x * scale), on fresh random inputs with outputs
// poisoned first. Decode calls read the 8-bit cache in place (the 8-bit decode kernel: dense and
// paged at pages of 1 to 256 keys, seqused_k with lengths 0 to 70000, GQA/MQA, causal rows, every
// head dim, a bf16 q row of 1e6 that overflows fp16 unless the kernel rescales it); every other
// call (prefill, varlen, windows, compensated precision) runs on a dequantized copy. append_kv
// quantizes new rows exactly as the CPU backend does, byte for byte. Bad scales are named with out
// untouched.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "core/fwd_params.h"
#include "core/tile_config.h"
#include "cuda/cuda_attention.h"
#include "cuda/cuda_test_util.h"
#include "cuda/fresh_process.h"
#include "gpuattn/attention.h"
#include "gpuattn/kv_cache.h"
#include "gpuattn/reference.h"

namespace gpuattn::testing {
namespace {

struct QCase {
  DType t, kv;
  int B, Hq, Hkv, Sq, Sk, D;
  bool causal = false;
  std::vector<int> used;  // empty: no seqused_k
  int page = 0;           // 0: a dense cache
  MaskSpec mask = {};
  Precision precision = Precision::standard;
  bool per_head = true;
  float big_q_row = 0.f;  // nonzero: q row 0 of every head times this
  float k_boost = 1.f;    // k_scale times this, q divided by it: the same scores, K past float16
  float k_shrink = 1.f;   // k_scale alone times this (q as it is): the scores shrink toward 0
  float softcap = 0.f;    // AttentionArgs::softcap
  std::vector<int> pad = {};  // empty: no leftpad_k
  // Paged: V's pool with 16 more bytes a head than K's, K and V laid out differently (V's own
  // strides in the 8-bit kernel's page addressing).
  bool v_padded = false;
  bool alibi = false;  // AttentionArgs::alibi_slopes, [B, Hq]
  float alibi_gain = 1.f;  // the slopes times this (negative: the bias grows toward near keys)

  std::string name() const {
    return std::string(to_string(t)) + "_" + to_string(kv) + "_B" + std::to_string(B) + "_H" +
           std::to_string(Hq) + "kv" + std::to_string(Hkv) + "_Sq" + std::to_string(Sq) + "_Sk" +
           std::to_string(Sk) + "_D" + std::to_string(D) + (used.empty() ? "" : "_used") +
           (page ? "_page" + std::to_string(page) : "") + (causal ? "_causal" : "") +
           (per_head ? "" : "_one_scale") + (big_q_row != 0.f ? "_big_q" : "") +
           (k_boost != 1.f ? "_k_boost" : "") +
           (k_shrink != 1.f ? "_k_shrink" + number_name(k_shrink) : "") + (softcap != 0.f ? "_cap" + number_name(softcap) : "") +
           (pad.empty() ? "" : "_pad") + (v_padded ? "_vpad" : "") + (alibi ? "_alibi" : "") +
           (alibi_gain != 1.f ? "x" + number_name(alibi_gain) : "");
  }
};

// Stored values about N(0, 1) / scale; scales about 1/16 (e4m3) or 1/40 (int8), per head.
void fill_cache(HostTensor& k, HostTensor& v, HostTensor& ks, HostTensor& vs, std::uint64_t seed) {
  const float unit = k.dtype == DType::i8 ? 40.f : 16.f;
  k.randomize(seed, unit);
  v.randomize(seed + 1, unit);
  for (std::int64_t h = 0; h < ks.numel(); ++h) {
    ks.set(h, (0.5f + 0.25f * static_cast<float>(h % 5)) / unit);
    vs.set(h, (1.5f - 0.2f * static_cast<float>(h % 4)) / unit);
  }
}

// Which kernel a case should run (cuda_forward_kernel, what --show-config reports): the 8-bit
// decode kernel on the cache in place, or a 16-bit kernel on the dequantized copy.
// in_place: the 8-bit decode kernel; on_copy: a prefill kernel on the dequantized copy.
enum class Runs { in_place, on_copy, unchecked };

void expect_matches_reference(const QCase& c, bool check_indices = true,
                              Runs runs = Runs::unchecked) {
  SCOPED_TRACE(c.name());
  HostTensor q(c.t, {c.B, c.Sq, c.Hq, c.D}), out(c.t, {c.B, c.Sq, c.Hq, c.D}),
      lse(DType::f32, {c.B, c.Hq, c.Sq}), k(c.kv, {c.B, c.Sk, c.Hkv, c.D}),
      v(c.kv, {c.B, c.Sk, c.Hkv, c.D}), ks(DType::f32, {c.per_head ? c.Hkv : 1}),
      vs(DType::f32, {c.per_head ? c.Hkv : 1});
  const std::uint64_t seed = seed_of(c.name());
  q.randomize(seed);
  if (c.big_q_row != 0.f) {
    for (std::int64_t e = 0; e < static_cast<std::int64_t>(c.Hq) * c.D; ++e) {
      q.set(e, q.get(e) * c.big_q_row);
    }
  }
  fill_cache(k, v, ks, vs, seed + 1);
  if (c.k_boost != 1.f) {
    for (std::int64_t e = 0; e < q.numel(); ++e) q.set(e, q.get(e) / c.k_boost);
    for (std::int64_t h = 0; h < ks.numel(); ++h) ks.set(h, ks.get(h) * c.k_boost);
  }
  for (std::int64_t h = 0; c.k_shrink != 1.f && h < ks.numel(); ++h) {
    ks.set(h, ks.get(h) * c.k_shrink);
  }
  const HostTensor used = int32s(c.used.empty() ? std::vector<int>(c.B, c.Sk) : c.used);
  const HostTensor pad = int32s(c.pad.empty() ? std::vector<int>(c.B, 0) : c.pad);
  PagedCache pc;
  if (c.page > 0) pc = page_cache(k, v, c.page, c.used, 3, seed + 2, c.pad);
  const HostTensor& kc = c.page > 0 ? pc.k : k;
  HostTensor vpad;  // v_padded: pc.v's rows of D bytes at a pitch of D + 16
  if (c.v_padded) {
    vpad = HostTensor(c.kv, {pc.v.shape[0], pc.v.shape[1], pc.v.shape[2], c.D + 16});
    vpad.randomize(seed + 3);
    for (std::int64_t r = 0; r < pc.v.numel() / c.D; ++r) {
      std::memcpy(static_cast<char*>(vpad.data()) + r * (c.D + 16),
                  static_cast<const char*>(pc.v.data()) + r * c.D, c.D);
    }
  }
  const HostTensor& vc = c.v_padded ? vpad : c.page > 0 ? pc.v : v;
  out.poison();
  lse.poison();
  HostTensor slopes = c.alibi ? alibi_slopes_for(c.B, c.Hq, seed + 4) : HostTensor();
  for (std::int64_t i = 0; c.alibi && i < slopes.numel(); ++i) {
    slopes.set(i, slopes.get(i) * c.alibi_gain);
  }
  const OnDevice dq(q), dk(kc), dv(vc), dks(ks), dvs(vs), dused(used), dpad(pad), dout(out),
      dlse(lse), dtable(pc.table), dslopes(slopes);

  AttentionArgs a = quantized_args(dq, dk, dv, dks, dvs, dout);
  if (c.v_padded) {  // [pages, page, Hkv, D] over rows of D + 16
    a.v = pc.v.view(Device::cuda, dv.buf.get());
    a.v.stride[2] = c.D + 16;
    a.v.stride[1] = a.v.shape[2] * a.v.stride[2];
    a.v.stride[0] = a.v.shape[1] * a.v.stride[1];
  }
  a.lse = dlse.view();
  if (!c.used.empty()) a.seqused_k = dused.view();
  if (!c.pad.empty()) a.leftpad_k = dpad.view();
  if (c.page > 0) a.block_table = dtable.view();
  a.causal = c.causal;
  a.mask = c.mask;
  a.precision = c.precision;
  a.softcap = c.softcap;
  if (c.alibi) a.alibi_slopes = dslopes.view();
  a.check_indices = check_indices;
  if (runs != Runs::unchecked) {
    const FwdKernel kernel = cuda_forward_kernel(make_fwd_params(a));
    const bool decode = kernel == FwdKernel::decode_q8_16x64 || kernel == FwdKernel::decode_16x64;
    if (runs == Runs::in_place) {
      EXPECT_EQ(kernel, FwdKernel::decode_q8_16x64) << tile_config(kernel).name;
      // Captured unchecked (not run), the call is the one decode kernel: nothing dequantized or
      // gathered before it.
      EXPECT_EQ(unchecked_kernels(
                    a, [](const AttentionArgs& u) { attention_forward(u); }, "decode call"),
                1);
    } else {
      EXPECT_FALSE(decode) << tile_config(kernel).name;
    }
  }
  attention_forward(a);
  TEST_CUDA_CHECK(cudaDeviceSynchronize());
  dout.buf.download(out.data());
  dlse.buf.download(lse.data());

  AttentionArgs h = tensor_args(q, k, v, out, &lse);
  h.k_scale = ks.view();
  h.v_scale = vs.view();
  if (!c.used.empty()) h.seqused_k = used.view();
  if (!c.pad.empty()) h.leftpad_k = pad.view();
  h.causal = c.causal;
  h.mask = c.mask;
  h.precision = c.precision;
  h.softcap = c.softcap;
  if (c.alibi) h.alibi_slopes = slopes.view();
  std::vector<std::int64_t> rows(static_cast<std::size_t>(c.B) * c.Sq);
  for (std::size_t r = 0; r < rows.size(); ++r) rows[r] = static_cast<std::int64_t>(r);
  const ReferenceResult ref = parallel_reference(h, rows);
  std::vector<float> l(static_cast<std::size_t>(lse.numel()));
  for (std::size_t i = 0; i < l.size(); ++i) l[i] = lse.get(static_cast<std::int64_t>(i));
  const Comparison cmp = compare(ref, out, c.Hq, c.D, &l, [&](std::int64_t row, int hh) {
    return (row / c.Sq * c.Hq + hh) * c.Sq + row % c.Sq;
  });
  EXPECT_EQ(cmp.nonfinite, 0) << "elements of out left unwritten or not finite";
  EXPECT_LE(cmp.lse_rel, 1e-3);
  expect_out_within_max_abs(ref, out, c.Hq, c.D, max_abs_tol(c.t), c.B, c.Sq, nullptr);
}

class QuantizedKvCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(QuantizedKvCuda, DecodeReadsTheEightBitCacheInPlace) {
  const DType f16 = DType::f16, bf16 = DType::bf16, i8 = DType::i8, e4m3 = DType::e4m3;
  std::vector<QCase> cases = {
      {f16, e4m3, 3, 8, 2, 1, 1000, 128, false, {1000, 1, 517}},
      {bf16, i8, 3, 8, 2, 1, 1000, 128, true, {0, 999, 64}},
      {bf16, e4m3, 2, 32, 8, 2, 4100, 128, true},
      {f16, i8, 2, 16, 1, 4, 300, 64, true},
      {bf16, e4m3, 2, 4, 4, 1, 700, 256},
      {f16, i8, 1, 8, 8, 1, 333, 256, true},
      {bf16, i8, 1, 8, 2, 1, 70000, 64, false, {70000}},
      {f16, e4m3, 2, 6, 2, 3, 129, 64, true, {}, 0, {}, Precision::standard, false},
      {bf16, e4m3, 2, 8, 2, 1, 900, 128, false, {}, 0, {}, Precision::standard, true, 1e6f},
      {bf16, i8, 2, 8, 2, 2, 900, 64, true, {}, 0, {}, Precision::standard, true, 1e6f},
      // Paged, pages of 1 to 256 keys.
      {bf16, e4m3, 3, 8, 2, 1, 1000, 128, false, {1000, 1, 517}, 16},
      {f16, i8, 3, 8, 2, 1, 1000, 128, true, {999, 0, 64}, 64},
      {f16, e4m3, 2, 4, 2, 1, 90, 64, false, {90, 37}, 1},
      {bf16, i8, 2, 4, 4, 1, 1024, 256, false, {}, 256},
      // 48: whole warps' rows a page (a multiple of 16) found by a division, not a shift.
      {f16, e4m3, 2, 8, 4, 1, 700, 64, false, {700, 21}, 48},
      // 20 and 100: a warp's rows in up to two pages.
      {bf16, i8, 2, 8, 2, 1, 700, 64, true, {700, 41}, 20},
      {f16, e4m3, 2, 8, 2, 2, 900, 256, false, {900, 201}, 100},
  };
  for (const QCase& c : cases) expect_matches_reference(c, true, Runs::in_place);
}

// Scores that vanish: a tiny k_scale with a tiny bf16 q row. The kernel's log2-domain factor of
// a row (scale x log2(e) x k_scale x 2^shift, the shift from the q row's largest magnitude) then
// underflows float; at 0 a masked key's -inf score times it was NaN, and with it the row. The
// softmax of such a row is uniform over its keys (keys not a multiple of the 32-key tile, so the
// last tile has masked keys; seqused_k and paged too, plain, soft-capped and with ALiBi).
TEST_F(QuantizedKvCuda, ScoresThatVanishGiveUniformWeights) {
  const DType f16 = DType::f16, bf16 = DType::bf16, i8 = DType::i8, e4m3 = DType::e4m3;
  std::vector<QCase> cases = {
      {bf16, i8, 2, 8, 2, 1, 900, 64, false, {}, 0, {}, Precision::standard, true, 1e-30f},
      {bf16, e4m3, 2, 8, 4, 2, 1000, 128, true, {1000, 77}, 0, {}, Precision::standard, true,
       1e-30f},
      {bf16, i8, 2, 4, 2, 1, 700, 256, false, {700, 41}, 20, {}, Precision::standard, false,
       1e-36f},
      {f16, e4m3, 2, 8, 2, 1, 333, 128, false, {333, 5}, 16},
  };
  cases[0].k_shrink = 1e-30f;
  cases[1].k_shrink = 1e-25f;
  cases[2].k_shrink = 1e-12f;
  // A float16 q (no shift) and a denormal k_scale: the factor a denormal, not 0 (no -ftz), so
  // this one passed before the fix too; it keeps a denormal scale covered.
  cases[3].k_shrink = 1e-42f;
  const std::size_t plain = cases.size();
  for (std::size_t i = 0; i < plain; ++i) {
    QCase capped = cases[i];
    capped.softcap = 5.f;
    cases.push_back(capped);
    QCase biased = cases[i];
    biased.alibi = true;
    cases.push_back(biased);
  }
  for (const QCase& c : cases) expect_matches_reference(c, true, Runs::in_place);
}

// The test above as a fresh process's only test: its kernel count (unchecked_kernels) captures
// the process's first decode call, whose workspace comes from the library's memory pool, made
// then, inside the capture (before relaxed capture mode made that allowed, this failed).
TEST_F(QuantizedKvCuda, FirstDecodeCallOfAProcessMayBeCaptured) {
  const FreshRun r = run_in_fresh_process("QuantizedKvCuda.DecodeReadsTheEightBitCacheInPlace", {});
  EXPECT_TRUE(r.passed_one()) << "the test in a fresh process did not pass; its output:\n"
                              << r.output;
}

// leftpad_k: decode calls read the 8-bit cache in place from each sequence's first key, dense or
// paged (pages wholly before it unset in the table; starts on a multiple of 16 and off it, pages
// of 1 to 256 keys, every head dim, causal rows, a sequence of no keys).
TEST_F(QuantizedKvCuda, LeftpadDecodeReadsTheEightBitCacheInPlace) {
  const DType f16 = DType::f16, bf16 = DType::bf16, i8 = DType::i8, e4m3 = DType::e4m3;
  const std::vector<std::pair<QCase, std::vector<int>>> with_pads = {
      {{f16, e4m3, 3, 8, 2, 1, 1000, 128, false, {1000, 1, 517}}, {100, 0, 517}},  // dense
      {{bf16, e4m3, 3, 8, 2, 1, 1000, 128, false, {1000, 40, 517}, 16}, {32, 7, 517}},
      {{f16, i8, 3, 8, 2, 2, 1000, 128, true, {999, 0, 64}, 64}, {998, 0, 1}},
      {{f16, e4m3, 2, 4, 2, 1, 90, 64, false, {90, 37}, 1}, {45, 36}},
      {{bf16, i8, 2, 4, 4, 1, 1024, 256, true, {}, 256}, {300, 512}},
      {{f16, e4m3, 2, 8, 4, 1, 700, 64, false, {700, 21}, 48}, {96, 20}},
      {{bf16, i8, 2, 16, 2, 4, 500, 64, true, {500, 260}, 7}, {13, 250}},
      {{f16, e4m3, 2, 8, 2, 1, 800, 128, false, {800, 333}, 20}, {0, 9}},  // 20: two pages a warp
      {{bf16, i8, 2, 8, 4, 1, 600, 256, true, {600, 100}, 16}, {5, 99}},
  };
  for (const auto& [base, pad] : with_pads) {
    QCase c = base;
    c.pad = pad;
    expect_matches_reference(c, true, Runs::in_place);
    expect_matches_reference(c, false);
  }
  // V laid out apart from K on the two-page path (pages of 20 and 16, pads off 16).
  for (QCase c : {QCase{f16, e4m3, 2, 8, 2, 1, 800, 128, false, {800, 333}, 20},
                  QCase{bf16, i8, 2, 8, 4, 2, 600, 64, true, {600, 100}, 16}}) {
    c.pad = {5, 37};
    c.v_padded = true;
    expect_matches_reference(c, true, Runs::in_place);
    expect_matches_reference(c, false);
  }
}

// Soft-capped decode calls read the cache in place too: the cap's factor takes k_scale and a bf16
// q row's power of two (big_q_row, k_boost), dense, seqused_k and paged, causal rows, every head
// dim; and a soft-capped prefill on the dequantized copy. Caps of 0.5 to 8 bend scores of about
// N(0, 1) (q row 0 of the big_q cases: scores of 1e6 sigma, all at the cap).
TEST_F(QuantizedKvCuda, SoftcappedCallsMatchTheReference) {
  const DType f16 = DType::f16, bf16 = DType::bf16, i8 = DType::i8, e4m3 = DType::e4m3;
  std::vector<QCase> in_place = {
      {f16, e4m3, 3, 8, 2, 1, 1000, 128, false, {1000, 1, 517}},
      {bf16, i8, 2, 16, 1, 4, 300, 64, true},
      {bf16, e4m3, 2, 4, 4, 1, 700, 256},
      {bf16, e4m3, 2, 8, 2, 1, 900, 128, false, {}, 0, {}, Precision::standard, true, 1e6f},
      {f16, i8, 3, 8, 2, 1, 1000, 128, true, {999, 0, 64}, 64},
  };
  in_place[0].softcap = 2.f;
  in_place[1].softcap = 0.5f;
  in_place[2].softcap = 8.f;
  in_place[3].softcap = 3.f;
  in_place[4].softcap = 1.5f;
  QCase boosted = {bf16, i8, 2, 8, 2, 2, 900, 64, true};
  boosted.k_boost = 1e4f;
  boosted.softcap = 1.f;
  in_place.push_back(boosted);
  QCase huge_cap = {f16, e4m3, 2, 8, 2, 1, 700, 128, true, {700, 300}};
  huge_cap.softcap = 1e5f;  // the exact tanh (above FwdParams::kFastTanhMaxCap)
  in_place.push_back(huge_cap);
  for (const QCase& c : in_place) expect_matches_reference(c, true, Runs::in_place);
  QCase prefill = {bf16, e4m3, 1, 8, 2, 300, 300, 128, true};
  prefill.softcap = 2.f;
  expect_matches_reference(prefill, true, Runs::on_copy);
}

// ALiBi decode calls read the 8-bit cache in place: the bias goes on after each row's scores are
// brought to the log2 domain (their k_scale and a bf16 q row's power of two folded in), so it must
// hold with those far from 1 (big_q rows of 1e6 and 1e-25, k_boost 1e4 and 1e-4), soft-capped,
// dense and paged (pages of 1, 20 and 64 keys: whole warps, two pages a warp, a row a page),
// seqused_k and leftpad_k, GQA groups of 1 to 16 with several query rows (causal), every head
// dim, int8 and E4M3, slopes negative and steep too; checked and unchecked. A prefill with ALiBi
// runs on the dequantized copy.
TEST_F(QuantizedKvCuda, AlibiDecodeCallsReadTheEightBitCacheInPlace) {
  const DType f16 = DType::f16, bf16 = DType::bf16, i8 = DType::i8, e4m3 = DType::e4m3;
  std::vector<QCase> decode = {
      {f16, e4m3, 3, 8, 2, 1, 1000, 128, false, {1000, 1, 517}},
      {bf16, i8, 2, 16, 1, 4, 300, 64, true},
      {f16, i8, 3, 8, 2, 1, 1000, 128, true, {999, 0, 64}, 64},
      {bf16, e4m3, 2, 4, 4, 1, 700, 256},
      {f16, e4m3, 2, 6, 2, 3, 129, 64, true, {}, 0, {}, Precision::standard, false},
      {bf16, e4m3, 2, 8, 2, 1, 900, 128, false, {}, 0, {}, Precision::standard, true, 1e6f},
      {bf16, i8, 2, 8, 2, 2, 900, 64, true, {}, 0, {}, Precision::standard, true, 1e-25f},
      {f16, e4m3, 2, 4, 2, 1, 90, 64, false, {90, 37}, 1},
      {bf16, i8, 2, 8, 2, 1, 700, 256, true, {700, 41}, 20},
      {bf16, i8, 1, 8, 8, 1, 20000, 128, false, {20000}},
  };
  decode[2].pad = {5, 0, 63};
  decode[7].pad = {45, 36};
  QCase boosted = {bf16, i8, 2, 8, 2, 2, 900, 64, true};
  boosted.k_boost = 1e4f;
  decode.push_back(boosted);
  QCase shrunk = {bf16, e4m3, 2, 8, 4, 1, 500, 128, false, {500, 77}};
  shrunk.k_boost = 1e-4f;
  decode.push_back(shrunk);
  QCase capped = {f16, i8, 3, 8, 2, 1, 1000, 128, true, {999, 0, 64}, 64};
  capped.softcap = 2.f;
  decode.push_back(capped);
  QCase capped_big = {bf16, e4m3, 2, 8, 2, 1, 900, 128, false, {}, 0, {}, Precision::standard,
                      true, 1e6f};
  capped_big.softcap = 3.f;
  decode.push_back(capped_big);
  // Negative and steep slopes where a row's units are far from 1.
  QCase flipped = shrunk;
  flipped.alibi_gain = -20.f;
  decode.push_back(flipped);
  QCase steep = {bf16, i8, 2, 8, 2, 2, 900, 64, true, {}, 0, {}, Precision::standard, true, 1e-25f};
  steep.alibi_gain = 50.f;
  decode.push_back(steep);
  for (QCase& c : decode) {
    c.alibi = true;
    expect_matches_reference(c, true, Runs::in_place);
  }
  expect_matches_reference(decode[0], false);
  expect_matches_reference(decode[2], false);
  QCase prefill = {bf16, e4m3, 1, 8, 2, 300, 300, 128, true};
  prefill.alibi = true;
  expect_matches_reference(prefill, true, Runs::on_copy);
}

TEST_F(QuantizedKvCuda, OtherCallsRunOnADequantizedCopy) {
  const DType f16 = DType::f16, bf16 = DType::bf16, i8 = DType::i8, e4m3 = DType::e4m3;
  std::vector<QCase> cases = {
      {bf16, e4m3, 2, 8, 2, 100, 333, 128, true},                         // prefill
      {f16, i8, 2, 4, 2, 70, 250, 64, true, {250, 97}, 16},               // paged prefill
      {bf16, i8, 2, 8, 2, 1, 400, 128, false, {}, 0, make_mask(100, 0)},  // a window
      {f16, e4m3, 2, 8, 2, 1, 400, 256, true, {}, 0, {}, Precision::compensated},
  };
  for (const QCase& c : cases) expect_matches_reference(c, true, Runs::on_copy);
}

// Keys past float16 (int8 k_scales of 1250 to 2500: 40 x 1250 is 50000, 127 x 2500 is 317500), q
// scaled down as much (the scores as fill_cache's): a float16 decode call
// reads the cache in place with the scales on fp32 scores and matches; a bfloat16 prefill runs on
// a bfloat16 copy and matches; a float16 prefill would run on a float16 copy where they overflow,
// and is refused naming the scale, out untouched.
TEST_F(QuantizedKvCuda, Float16CopiesRefuseScalesThatOverflowThem) {
  const DType f16 = DType::f16, bf16 = DType::bf16, i8 = DType::i8;
  QCase decode{f16, i8, 2, 8, 2, 1, 300, 128};
  decode.k_boost = 1e5f;
  expect_matches_reference(decode, true, Runs::in_place);
  QCase prefill{bf16, i8, 1, 4, 2, 40, 300, 128, true};
  prefill.k_boost = 1e5f;
  expect_matches_reference(prefill, true, Runs::on_copy);

  HostTensor q(f16, {1, 40, 4, 128}), out(f16, {1, 40, 4, 128}), k(i8, {1, 300, 2, 128}),
      v(i8, {1, 300, 2, 128}), ks(DType::f32, {2}), vs(DType::f32, {2});
  q.randomize(3);
  fill_cache(k, v, ks, vs, 4);
  ks.set(1, 600.f);  // 600 x 127 = 76200 > 65504
  out.poison();
  const OnDevice dq(q), dk(k), dv(v), dks(ks), dvs(vs), dout(out);
  const std::vector<unsigned char> before = dout.buf.snapshot();
  AttentionArgs a = quantized_args(dq, dk, dv, dks, dvs, dout);
  const std::string msg = error_of([&] { attention_forward(a); });
  EXPECT_NE(msg.find("k_scale[1] is 600, above 515.78 (65504 / 127)"), std::string::npos) << msg;
  EXPECT_EQ(dout.buf.snapshot(), before) << "out was written";
  ks.set(1, 515.f);  // 515 x 127 = 65405: finite
  const OnDevice dks2(ks);
  a.k_scale = dks2.view();
  EXPECT_NO_THROW(attention_forward(a));
  TEST_CUDA_CHECK(cudaDeviceSynchronize());
}

TEST_F(QuantizedKvCuda, UncheckedCallsMatch) {
  expect_matches_reference(
      {DType::bf16, DType::e4m3, 3, 8, 2, 1, 1000, 128, false, {1000, 1, 517}, 16}, false);
  expect_matches_reference({DType::f16, DType::i8, 2, 8, 2, 30, 200, 64, true}, false);
}

TEST_F(QuantizedKvCuda, VarlenMatchesTheReference) {
  const std::vector<int> lq = {1, 30, 0, 7}, lk = {5, 64, 3, 100};
  int tq = 0, tk = 0;
  for (std::size_t i = 0; i < lq.size(); ++i) {
    tq += lq[i];
    tk += lk[i];
  }
  for (DType kv : {DType::i8, DType::e4m3}) {
    SCOPED_TRACE(to_string(kv));
    HostTensor q(DType::f16, {tq, 6, 64}), out(DType::f16, {tq, 6, 64}), k(kv, {tk, 2, 64}),
        v(kv, {tk, 2, 64}), ks(DType::f32, {2}), vs(DType::f32, {2});
    q.randomize(3);
    fill_cache(k, v, ks, vs, 5);
    const HostTensor cq = make_cu_seqlens(lq), ck = make_cu_seqlens(lk);
    out.poison();
    const OnDevice dq(q), dk(k), dv(v), dks(ks), dvs(vs), dcq(cq), dck(ck), dout(out);
    AttentionArgs a = quantized_args(dq, dk, dv, dks, dvs, dout);
    a.cu_seqlens_q = dcq.view();
    a.cu_seqlens_k = dck.view();
    a.max_seqlen_q = 30;
    a.max_seqlen_k = 100;
    a.causal = true;
    attention_forward(a);
    TEST_CUDA_CHECK(cudaDeviceSynchronize());
    dout.buf.download(out.data());
    AttentionArgs h = tensor_args(q, k, v, out);
    h.k_scale = ks.view();
    h.v_scale = vs.view();
    h.cu_seqlens_q = cq.view();
    h.cu_seqlens_k = ck.view();
    h.max_seqlen_q = 30;
    h.max_seqlen_k = 100;
    h.causal = true;
    const ReferenceResult ref = reference_attention(h);
    const Comparison cmp = compare(ref, out, 6, 64, nullptr, [](std::int64_t, int) { return 0; });
    EXPECT_EQ(cmp.nonfinite, 0);
    expect_out_within_max_abs(ref, out, 6, 64, max_abs_tol(DType::f16), 4, 30,
                              static_cast<const std::int32_t*>(cq.data()));
  }
}

TEST_F(QuantizedKvCuda, AppendQuantizesAsTheCpuBackendDoes) {
  const int B = 3, Sk = 50, Hkv = 2, D = 128, Sn = 4;
  for (DType kv : {DType::i8, DType::e4m3}) {
    for (DType t : {DType::f16, DType::bf16}) {
      for (int page : {0, 16}) {
        SCOPED_TRACE(std::string(to_string(kv)) + " from " + to_string(t) + " page " +
                     std::to_string(page));
        HostTensor k(kv, {B, Sk, Hkv, D}), v(kv, {B, Sk, Hkv, D}), ks(DType::f32, {Hkv}),
            vs(DType::f32, {Hkv}), kn(t, {B, Sn, Hkv, D}), vn(t, {B, Sn, Hkv, D});
        fill_cache(k, v, ks, vs, 31);
        kn.randomize(32, 3.f);
        vn.randomize(33, 3.f);
        kn.set(5, 1e6f);
        vn.set(7, -1e6f);
        kn.set(9, std::nanf(""));
        const HostTensor lens = int32s({0, 17, 46});
        PagedCache pc;
        if (page > 0) pc = page_cache(k, v, page, {}, 2, 34);
        HostTensor hk = page > 0 ? pc.k : k, hv = page > 0 ? pc.v : v;
        const OnDevice dk(hk), dv(hv), dks(ks), dvs(vs), dkn(kn), dvn(vn), dl(lens), dt(pc.table);
        AppendKvArgs a;
        a.k_cache = dk.view();
        a.v_cache = dv.view();
        a.k_new = dkn.view();
        a.v_new = dvn.view();
        a.cache_seqlens = dl.view();
        a.k_scale = dks.view();
        a.v_scale = dvs.view();
        if (page > 0) a.block_table = dt.view();
        append_kv(a);
        TEST_CUDA_CHECK(cudaDeviceSynchronize());
        AppendKvArgs h = a;  // the same append on the CPU
        h.k_cache = hk.view();
        h.v_cache = hv.view();
        h.k_new = kn.view();
        h.v_new = vn.view();
        h.cache_seqlens = lens.view();
        h.k_scale = ks.view();
        h.v_scale = vs.view();
        if (page > 0) h.block_table = pc.table.view();
        append_kv(h);
        EXPECT_EQ(dk.buf.snapshot(),
                  std::vector<unsigned char>(static_cast<unsigned char*>(hk.data()),
                                             static_cast<unsigned char*>(hk.data()) + hk.bytes()));
        EXPECT_EQ(dv.buf.snapshot(),
                  std::vector<unsigned char>(static_cast<unsigned char*>(hv.data()),
                                             static_cast<unsigned char*>(hv.data()) + hv.bytes()));
      }
    }
  }
}

TEST_F(QuantizedKvCuda, BadScalesAreNamedAndOutIsUntouched) {
  HostTensor q(DType::bf16, {2, 1, 8, 128}), out(DType::bf16, {2, 1, 8, 128}),
      k(DType::e4m3, {2, 300, 2, 128}), v(DType::e4m3, {2, 300, 2, 128}), ks(DType::f32, {2}),
      vs(DType::f32, {2});
  q.randomize(1);
  fill_cache(k, v, ks, vs, 2);
  vs.set(1, 0.f);
  out.poison();
  const OnDevice dq(q), dk(k), dv(v), dks(ks), dvs(vs), dout(out);
  const std::vector<unsigned char> before = dout.buf.snapshot();
  AttentionArgs a = quantized_args(dq, dk, dv, dks, dvs, dout);
  const std::string msg = error_of([&] { attention_forward(a); });
  EXPECT_NE(msg.find("v_scale[1] is 0"), std::string::npos) << msg;
  a.v_scale = vs.view();  // host scales with device tensors
  const std::string where = error_of([&] { attention_forward(a); });
  EXPECT_NE(where.find("v_scale is on cpu"), std::string::npos) << where;
  EXPECT_EQ(dout.buf.snapshot(), before) << "out was written";
}

}  // namespace
}  // namespace gpuattn::testing
