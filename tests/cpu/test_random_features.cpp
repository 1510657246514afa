// The CPU backend on random calls that cross the optional features of AttentionArgs: 16- and
// 32-bit or FP8 q (q_scale), k/v in q's dtype or an 8-bit cache (int8 / E4M3 with per-head or
// single scales), dense or varlen batches, seqused_k, a paged cache (any page size, -1 past the
// used pages), causal, windows, global tokens, block layouts, both precisions and 1-3 threads.
// Each against the fp64 reference of the same call over the dense cache (the pages are cut from
// it, so the reference never reads the table), outputs poisoned first. GPUATTN_FUZZ_SEED /
// GPUATTN_FUZZ_CASES pick another set (tests/common/random_cases.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "common/random_cases.h"
#include "common/test_util.h"
#include "gpuattn/attention.h"
#include "gpuattn/reference.h"

namespace gpuattn::testing {
namespace {

struct Mix {
  DType q = DType::f16, out = DType::f16, kv = DType::f16;
  bool per_head_scales = true;
  int B = 1, Hq = 1, Hkv = 1, Sq = 1, Sk = 1, D = 64;
  std::vector<int> lens_q, lens_k;  // varlen when not empty
  std::vector<int> used;            // seqused_k when not empty (dense)
  int page = 0;                     // paged cache of `page` keys a page (dense)
  bool causal = false;
  MaskSpec mask;
  int block_q = 0, block_k = 0, layout_heads = 1;  // block layout when block_q > 0
  double density = 1.0;
  Precision precision = Precision::standard;
  int threads = 1;

  bool varlen() const { return !lens_q.empty(); }
  bool quantized_kv() const { return kv == DType::i8 || kv == DType::e4m3; }
  std::string str() const {
    std::ostringstream s;
    s << "q " << to_string(q) << " out " << to_string(out) << " kv " << to_string(kv)
      << (quantized_kv() && !per_head_scales ? " (one scale)" : "") << " D" << D << " Hq" << Hq
      << " Hkv" << Hkv;
    auto list = [&](const char* name, const std::vector<int>& v) {
      s << ' ' << name << '{';
      for (std::size_t i = 0; i < v.size(); ++i) s << (i ? " " : "") << v[i];
      s << '}';
    };
    if (varlen()) {
      list("lens_q", lens_q);
      list("lens_k", lens_k);
    } else {
      s << " B" << B << " Sq" << Sq << " Sk" << Sk;
    }
    if (!used.empty()) list("seqused_k", used);
    if (page > 0) s << " page " << page;
    if (causal) s << " causal";
    if (mask.window_left >= 0 || mask.window_right >= 0) {
      s << " window(" << mask.window_left << ", " << mask.window_right << ")";
    }
    if (mask.global_tokens > 0) s << " G" << mask.global_tokens;
    if (mask.global_stride > 0) s << " stride " << mask.global_stride;
    if (block_q > 0) {
      s << " blocks " << block_q << "x" << block_k << " heads " << layout_heads << " density "
        << density;
    }
    s << ' ' << to_string(precision) << " threads " << threads;
    return s.str();
  }
};

Mix draw(Dice& d) {
  Mix m;
  const bool fp8_q = d.chance(0.2);
  m.out = d.one_of({DType::f32, DType::f16, DType::bf16});
  m.q = fp8_q ? DType::e4m3 : m.out;
  m.kv = fp8_q ? DType::e4m3 : d.chance(0.4) ? d.one_of({DType::i8, DType::e4m3}) : m.q;
  m.per_head_scales = d.chance(0.7);
  m.D = d.one_of({64, 128, 256});
  m.Hkv = d.one_of({1, 2, 3});
  m.Hq = m.Hkv * d.one_of({1, 2, 4});
  if (d.chance(0.25)) {
    m.B = d.between(1, 4);
    for (int b = 0; b < m.B; ++b) {
      m.lens_q.push_back(d.chance(0.15) ? 0 : d.length(1, 150));
      m.lens_k.push_back(d.chance(0.15) ? 0 : d.length(1, 250));
    }
    m.Sq = std::max(1, *std::max_element(m.lens_q.begin(), m.lens_q.end()));
    m.Sk = std::max(1, *std::max_element(m.lens_k.begin(), m.lens_k.end()));
  } else {
    m.B = d.between(1, 3);
    m.Sq = d.chance(0.3) ? d.between(1, 4) : d.length(1, 150);
    m.Sk = d.length(1, 250);
    if (d.chance(0.4)) m.page = d.one_of({1, 3, 8, 16, 50, 64});
    if (d.chance(0.5)) {
      for (int b = 0; b < m.B; ++b) {
        m.used.push_back(d.chance(0.15) ? 0 : d.chance(0.2) ? m.Sk : d.between(1, m.Sk));
      }
    } else if (m.page > 0) {
      m.Sk = (m.Sk + m.page - 1) / m.page * m.page;  // without seqused_k every paged key counts
    }
  }
  m.causal = d.chance(0.5);
  if (d.chance(0.25)) {
    const auto side = [&] { return d.chance(0.3) ? -1 : d.between(0, 80); };
    m.mask.window_left = side();
    m.mask.window_right = side();
    if (d.chance(0.4)) {
      m.mask.global_tokens = d.between(0, 10);
      m.mask.global_stride = d.chance(0.5) ? d.between(2, 60) : 0;
    }
  }
  if (d.chance(0.15)) {
    m.block_q = 16 * d.between(1, 6);
    m.block_k = 16 * d.between(1, 6);
    m.layout_heads = d.chance(0.5) ? 1 : m.Hq;
    m.density = d.one_of({0.2, 0.6, 0.9});
  }
  if (d.chance(0.2)) m.precision = Precision::compensated;
  m.threads = d.between(1, 3);
  return m;
}

// Scales of an 8-bit tensor whose stored values are about N(0, 1) * unit: about 1 / unit, a
// different one per head.
HostTensor scales(int heads, bool per_head, float unit, float base) {
  HostTensor s(DType::f32, {per_head ? heads : 1});
  for (std::int64_t h = 0; h < s.numel(); ++h) {
    s.set(h, (base + 0.2f * static_cast<float>(h % 4)) / unit);
  }
  return s;
}

void check_mix(const Mix& m, std::uint64_t seed) {
  SCOPED_TRACE(m.str());
  const bool vl = m.varlen();
  std::int64_t tq = 0, tk = 0;
  for (int b = 0; b < m.B; ++b) {
    tq += vl ? m.lens_q[static_cast<std::size_t>(b)] : m.Sq;
    tk += vl ? m.lens_k[static_cast<std::size_t>(b)] : m.Sk;
  }
  using Shape = std::vector<std::int64_t>;
  const Shape qs = vl ? Shape{tq, m.Hq, m.D} : Shape{m.B, m.Sq, m.Hq, m.D};
  const Shape ks = vl ? Shape{tk, m.Hkv, m.D} : Shape{m.B, m.Sk, m.Hkv, m.D};
  HostTensor q(m.q, qs), k(m.kv, ks), v(m.kv, ks), out(m.out, qs),
      lse(DType::f32, vl ? Shape{m.Hq, tq} : Shape{m.B, m.Hq, m.Sq});
  const float q_unit = m.q == DType::e4m3 ? 16.f : 1.f;
  const float kv_unit = m.kv == DType::i8 ? 40.f : m.kv == DType::e4m3 ? 16.f : 1.f;
  q.randomize(seed, q_unit);
  k.randomize(seed + 1, kv_unit);
  v.randomize(seed + 2, kv_unit);
  const HostTensor q_scale = scales(m.Hq, m.per_head_scales, q_unit, 0.9f);
  const HostTensor k_scale = scales(m.Hkv, m.per_head_scales, kv_unit, 0.7f);
  const HostTensor v_scale = scales(m.Hkv, m.per_head_scales, kv_unit, 1.1f);
  const HostTensor used = int32s(m.used);
  const HostTensor cu_q = vl ? make_cu_seqlens(m.lens_q) : HostTensor();
  const HostTensor cu_k = vl ? make_cu_seqlens(m.lens_k) : HostTensor();

  // The reference's call: the dense cache.
  AttentionArgs ref_args = tensor_args(q, k, v, out, &lse);
  if (m.q == DType::e4m3) ref_args.q_scale = q_scale.view();
  if (m.quantized_kv()) {
    ref_args.k_scale = k_scale.view();
    ref_args.v_scale = v_scale.view();
  }
  if (vl) {
    ref_args.cu_seqlens_q = cu_q.view();
    ref_args.cu_seqlens_k = cu_k.view();
    ref_args.max_seqlen_q = m.Sq;
    ref_args.max_seqlen_k = m.Sk;
  }
  if (!m.used.empty()) ref_args.seqused_k = used.view();
  ref_args.causal = m.causal;
  ref_args.mask = m.mask;
  // A block layout covers the call's keys: with pages, all the table holds (its width times the
  // page size), of which the dense cache's Sk are the reference's.
  HostTensor layout;
  TensorView call_layout;
  if (m.block_q > 0) {
    const std::int64_t held = m.page > 0 ? (m.Sk + m.page - 1) / m.page * m.page : m.Sk;
    const std::int64_t nq = (m.Sq + m.block_q - 1) / m.block_q,
                       nk = (held + m.block_k - 1) / m.block_k;
    layout = HostTensor(DType::u8, {m.layout_heads, nq, nk});
    Dice bits(seed + 3);
    for (std::int64_t i = 0; i < layout.numel(); ++i) layout.set(i, bits.chance(m.density));
    call_layout = layout.view();
    TensorView dense_layout = call_layout;
    dense_layout.shape[2] = (m.Sk + m.block_k - 1) / m.block_k;
    ref_args.mask.block_sparse = {dense_layout, m.block_q, m.block_k};
  }
  ref_args.precision = m.precision;

  // The call: the same, over the pages where the case has them.
  AttentionArgs a = ref_args;
  PagedCache pc;
  if (m.page > 0) {
    pc = page_cache(k, v, m.page, m.used, 3, seed + 4);
    a.k = pc.k.view();
    a.v = pc.v.view();
    a.block_table = pc.table.view();
    if (m.block_q > 0) a.mask.block_sparse.layout = call_layout;
  }
  a.backend = Backend::cpu;
  a.num_threads = m.threads;
  out.poison();
  lse.poison();
  attention_forward(a);

  const ReferenceResult ref = reference_attention(ref_args);
  std::vector<float> l(static_cast<std::size_t>(lse.numel()));
  for (std::size_t i = 0; i < l.size(); ++i) l[i] = lse.get(static_cast<std::int64_t>(i));
  const Comparison c = compare(ref, out, m.Hq, m.D, &l, [&](std::int64_t row, int h) {
    if (vl) return h * tq + row;
    return (row / m.Sq * m.Hq + h) * m.Sq + row % m.Sq;
  });
  EXPECT_EQ(c.nonfinite, 0) << "NaN/inf in out: an element left unwritten";
  // The CPU backend computes in fp32 from the stored values times their scales, as the reference
  // does in fp64: its own rounding of P and out (16-bit) or of the fp32 sums (f32) is all there is.
  const double out_tol = m.out == DType::bf16 ? 1e-2 : m.out == DType::f16 ? 5e-3 : 1e-5;
  EXPECT_LE(c.rel_err, out_tol);
  EXPECT_LE(c.lse_rel, m.out == DType::f32 ? 1e-5 : 1e-3);
}

TEST(CpuAttention, RandomFeatureMixesMatchReference) {
  const FuzzRun run = FuzzRun::from_env(kDefaultFuzzSeed, 150);
  Dice dice(run.seed);
  for (int i = 0; i < run.cases; ++i) {
    const Mix m = draw(dice);
    SCOPED_TRACE(run.where(i));
    check_mix(m, run.case_seed(i));
  }
}

}  // namespace
}  // namespace gpuattn::testing
