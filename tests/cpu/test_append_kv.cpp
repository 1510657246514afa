// gpuattn::append_kv on the CPU backend: the new rows land at cache_seqlens[b].. of each sequence,
// in a dense cache and through a block table (shuffled pages, pages of 1 key to past the cache),
// and nothing else of either cache changes; with rotary tables the append equals apply_rotary
// then a plain append, byte for byte (q's rotation too); every bad input is an invalid_argument
// naming it, with both caches untouched.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/expect_error.h"
#include "common/rotary_append.h"
#include "common/test_util.h"
#include "gpuattn/kv_cache.h"
#include "gpuattn/rotary.h"

namespace gpuattn::testing {
namespace {

bool same_bytes(const HostTensor& a, const HostTensor& b) {
  return a.bytes() == b.bytes() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

// The dense cache after the append: rows used[b] + i of sequence b replaced by new row i.
HostTensor appended(const HostTensor& cache, const HostTensor& fresh,
                    const std::vector<int>& used) {
  HostTensor want = cache;
  const std::int64_t sk = cache.shape[1], sn = fresh.shape[1],
                     row = cache.shape[2] * cache.shape[3];
  const std::size_t es = element_size(cache.dtype);
  for (std::int64_t b = 0; b < cache.shape[0]; ++b) {
    for (std::int64_t i = 0; i < sn; ++i) {
      std::memcpy(static_cast<char*>(want.data()) + ((b * sk + used[b] + i) * row) * es,
                  static_cast<const char*>(fresh.data()) + ((b * sn + i) * row) * es, row * es);
    }
  }
  return want;
}

TEST(AppendKv, NewRowsLandAtEachSequencesEnd) {
  const int B = 3, Sk = 40, Hkv = 2, D = 64;
  const std::vector<int> used = {0, 17, 37};
  for (int sn : {1, 3}) {
    SCOPED_TRACE("Snew " + std::to_string(sn));
    HostTensor k(DType::f16, {B, Sk, Hkv, D}), v(DType::f16, {B, Sk, Hkv, D}),
        kn(DType::f16, {B, sn, Hkv, D}), vn(DType::f16, {B, sn, Hkv, D});
    k.randomize(1);
    v.randomize(2);
    kn.randomize(3 + sn);
    vn.randomize(4 + sn);
    const HostTensor lens = int32s(used);
    const HostTensor want_k = appended(k, kn, used), want_v = appended(v, vn, used);
    // Dense.
    {
      HostTensor kc = k, vc = v;
      AppendKvArgs a;
      a.k_cache = kc.view();
      a.v_cache = vc.view();
      a.k_new = kn.view();
      a.v_new = vn.view();
      a.cache_seqlens = lens.view();
      append_kv(a);
      EXPECT_TRUE(same_bytes(kc, want_k));
      EXPECT_TRUE(same_bytes(vc, want_v));
    }
    // Paged: the pool after the append holds, page by page, the appended dense cache.
    for (int page : {1, 5, 16, 64}) {
      SCOPED_TRACE("page " + std::to_string(page));
      const PagedCache pc = page_cache(k, v, page, {}, 2, 77 + page);
      const PagedCache want = page_cache(want_k, want_v, page, {}, 2, 77 + page);
      HostTensor kp = pc.k, vp = pc.v;
      AppendKvArgs a;
      a.k_cache = kp.view();
      a.v_cache = vp.view();
      a.k_new = kn.view();
      a.v_new = vn.view();
      a.cache_seqlens = lens.view();
      a.block_table = pc.table.view();
      append_kv(a);
      // Slots past Sk in the last page and the spare pages hold the same random values in both.
      EXPECT_TRUE(same_bytes(kp, want.k));
      EXPECT_TRUE(same_bytes(vp, want.v));
    }
  }
}

// A rotary append (k rotated on the way, q into q_out) equals apply_rotary at cache_seqlens
// followed by a plain append (common/rotary_append.h): dense and paged, 16-bit and quantized
// caches, both pair layouts, partial rotary dims, float32 tables, Sq != Snew, q at one position or
// per row.
TEST(AppendKv, RotaryEqualsRotatingFirst) {
  std::uint64_t st = 4242;
  for (int n = 0; n < 40; ++n) {
    const RotaryAppendCase c = RotaryAppendCase::random(st, 48, {64, 128});
    SCOPED_TRACE("case " + std::to_string(n) + ": " + c.name());
    RotaryAppendData d(c, 900 + n);
    AppendKvArgs a;
    a.k_cache = d.k.view();
    a.v_cache = d.v.view();
    a.k_new = d.kn.view();
    a.v_new = d.vn.view();
    a.cache_seqlens = d.lens.view();
    if (c.page > 0) a.block_table = d.table.view();
    if (c.quantized()) {
      a.k_scale = d.ks.view();
      a.v_scale = d.vs.view();
    }
    a.rotary_cos = d.cos.view();
    a.rotary_sin = d.sin.view();
    a.rotary_interleaved = c.interleaved;
    a.q = d.q.view();
    a.q_out = c.q_in_place ? a.q : d.q_out.view();
    a.q_same_position = c.same_position;
    append_kv(a);
    EXPECT_TRUE(same_bytes(d.k, d.want_k)) << "k_cache";
    EXPECT_TRUE(same_bytes(d.v, d.want_v)) << "v_cache";
    EXPECT_TRUE(same_bytes(c.q_in_place ? d.q : d.q_out, d.q_want)) << "q_out";
  }
}

TEST(AppendKv, RotaryBadInputsAreNamedAndNothingWritten) {
  const int B = 2, Sk = 16, Hkv = 2, D = 64;
  HostTensor k(DType::f16, {B, Sk, Hkv, D}), v(DType::f16, {B, Sk, Hkv, D}),
      kn(DType::f16, {B, 1, Hkv, D}), vn(DType::f16, {B, 1, Hkv, D}),
      q(DType::f16, {B, 3, 4, D}), q_out(DType::f16, {B, 3, 4, D});
  HostTensor cos(DType::f16, {12, 16}), sin(DType::f16, {12, 16});
  for (HostTensor* x : {&k, &v, &kn, &vn, &q, &q_out, &cos, &sin}) x->randomize(x->bytes());
  const HostTensor k0 = k, v0 = v, q_out0 = q_out;
  auto expect_invalid = [&](const AppendKvArgs& a, const std::string& words) {
    expect_invalid_argument([&] { append_kv(a); }, words);
    EXPECT_TRUE(same_bytes(k, k0)) << words;
    EXPECT_TRUE(same_bytes(v, v0)) << words;
    EXPECT_TRUE(same_bytes(q_out, q_out0)) << words;
  };
  const HostTensor lens = int32s({3, 11}), late = int32s({3, 12}), q_late = int32s({3, 10});
  AppendKvArgs a;
  a.k_cache = k.view();
  a.v_cache = v.view();
  a.k_new = kn.view();
  a.v_new = vn.view();
  a.cache_seqlens = late.view();
  a.rotary_cos = cos.view();
  a.rotary_sin = sin.view();
  expect_invalid(a, "cache_seqlens[1] is 12: new key row 0 of sequence 1 takes rotary position "
                    "12, past the 12 positions of rotary_cos/rotary_sin");
  a.q = q.view();
  a.q_out = q_out.view();
  a.cache_seqlens = q_late.view();
  expect_invalid(a, "cache_seqlens[1] is 10: query rows 0..2 of sequence 1 take rotary positions "
                    "10..12, past the 12 positions of rotary_cos/rotary_sin");
  a.cache_seqlens = late.view();
  a.q_same_position = true;
  expect_invalid(a, "cache_seqlens[1] is 12: new key row 0");  // the keys are checked first
  a.cache_seqlens = lens.view();
  a.rotary_sin = TensorView{};
  expect_invalid(a, "rotary_cos is given without rotary_sin: the two go together");
  HostTensor wide(DType::f16, {12, 33});
  a.rotary_cos = wide.view();
  a.rotary_sin = wide.view();
  expect_invalid(a, "rotary_cos shape [12, 33] rotates 66 features, more than k_new's head dim 64");
  HostTensor bf(DType::bf16, {12, 16});
  a.rotary_cos = bf.view();
  a.rotary_sin = bf.view();
  expect_invalid(a, "rotary_cos dtype bfloat16 is neither k_new's (float16) nor float32");
  TensorView in_cache = k.view();  // the table inside k_cache, which the append writes
  in_cache.rank = 2;
  in_cache.shape = {12, 16, 0, 0};
  in_cache.stride = {16, 1, 0, 0};
  a.rotary_cos = in_cache;
  a.rotary_sin = sin.view();
  expect_invalid(a, "rotary_cos's memory overlaps k_cache's, which the append writes");
  a.rotary_cos = cos.view();
  a.q_out = TensorView{};
  expect_invalid(a, "q is given without q_out: the two go together");
  a.q_out = q_out.view();
  HostTensor q32(DType::f32, {B, 3, 4, D});
  a.q_out = q32.view();
  expect_invalid(a, "gpuattn::append_kv: q_out dtype float32 differs from q dtype float16");
  a.q_out = q_out.view();
  HostTensor q_bf(DType::bf16, {B, 3, 4, D}), q_bf_out(DType::bf16, {B, 3, 4, D});
  a.q = q_bf.view();
  a.q_out = q_bf_out.view();
  expect_invalid(a, "q dtype bfloat16 differs from k_new dtype float16");
  a.q = q.view();
  a.q_out = kn.view();
  expect_invalid(a, "q_out shape [2, 1, 2, 64] differs from q shape [2, 3, 4, 64]");
  TensorView q_in_cache = k.view();  // q_out over v's rows
  q_in_cache.data = v.data();
  q_in_cache.shape = {B, 3, 4, D};
  q_in_cache.stride = {Sk * Hkv * D, 4 * D, D, 1};
  a.q_out = q_in_cache;
  expect_invalid(a, "q_out's memory overlaps v_cache's");
  a.q_out = q_out.view();
  a.rotary_cos = TensorView{};
  a.rotary_sin = TensorView{};
  expect_invalid(a, "q and q_out are given without rotary_cos/rotary_sin");
  HostTensor q_cpu_on_cuda = q;
  TensorView q_elsewhere = q_cpu_on_cuda.view(Device::cuda, q_cpu_on_cuda.data());
  a.q = q_elsewhere;
  a.rotary_cos = cos.view();
  a.rotary_sin = sin.view();
  expect_invalid(a, "q is on cuda:0 but k_cache is on cpu:0");
  a.q = q.view();
  // And a good call after all of them writes the caches and q_out.
  append_kv(a);
  EXPECT_FALSE(same_bytes(k, k0));
  EXPECT_FALSE(same_bytes(q_out, q_out0));
}

// q may lie in a cache the append writes (a query that is a view of cached rows): it is read
// first, and the call equals the same one with a copy of q.
TEST(AppendKv, RotaryQInACacheIsReadBeforeTheAppend) {
  const int B = 2, Sk = 16, Hkv = 2, D = 64;
  HostTensor k(DType::f16, {B, Sk, Hkv, D}), v(DType::f16, {B, Sk, Hkv, D}),
      kn(DType::f16, {B, 1, Hkv, D}), vn(DType::f16, {B, 1, Hkv, D}), cos(DType::f32, {16, 32}),
      sin(DType::f32, {16, 32});
  for (HostTensor* x : {&k, &v, &kn, &vn, &cos, &sin}) x->randomize(x->bytes() + 7);
  const HostTensor lens = int32s({3, 3});  // the new rows land on row 3, q is row 3 of k_cache
  TensorView q_view = k.view();
  q_view.data = static_cast<std::uint16_t*>(k.data()) + 3 * Hkv * D;
  q_view.shape = {B, 1, Hkv, D};
  HostTensor q_copy(DType::f16, {B, 1, Hkv, D});
  for (int b = 0; b < B; ++b) {
    std::memcpy(static_cast<std::uint16_t*>(q_copy.data()) + b * Hkv * D,
                static_cast<const std::uint16_t*>(q_view.data) + b * Sk * Hkv * D, Hkv * D * 2);
  }
  HostTensor k2 = k, v2 = v, out(DType::f16, {B, 1, Hkv, D}), out2(DType::f16, {B, 1, Hkv, D});
  AppendKvArgs a;
  a.k_cache = k.view();
  a.v_cache = v.view();
  a.k_new = kn.view();
  a.v_new = vn.view();
  a.cache_seqlens = lens.view();
  a.rotary_cos = cos.view();
  a.rotary_sin = sin.view();
  a.q = q_view;
  a.q_out = out.view();
  append_kv(a);
  a.k_cache = k2.view();
  a.v_cache = v2.view();
  a.q = q_copy.view();
  a.q_out = out2.view();
  append_kv(a);
  EXPECT_TRUE(same_bytes(out, out2)) << "q in the cache was read after the append wrote it";
  EXPECT_TRUE(same_bytes(k, k2));
}

TEST(AppendKv, BadInputsAreNamedAndTheCachesUntouched) {
  const int B = 2, Sk = 32, Hkv = 2, D = 64, sn = 4;
  HostTensor k(DType::f16, {B, Sk, Hkv, D}), v(DType::f16, {B, Sk, Hkv, D}),
      kn(DType::f16, {B, sn, Hkv, D}), vn(DType::f16, {B, sn, Hkv, D});
  k.randomize(1);
  v.randomize(2);
  kn.randomize(3);
  vn.randomize(4);
  const HostTensor k0 = k, v0 = v;
  auto expect_invalid = [&](const AppendKvArgs& a, const std::string& words) {
    expect_invalid_argument([&] { append_kv(a); }, words);
    EXPECT_TRUE(same_bytes(k, k0));
    EXPECT_TRUE(same_bytes(v, v0));
  };
  AppendKvArgs a;
  a.k_cache = k.view();
  a.v_cache = v.view();
  a.k_new = kn.view();
  a.v_new = vn.view();
  const HostTensor full = int32s({28, 29}), negative = int32s({-1, 0}), three = int32s({0, 0, 0});
  a.cache_seqlens = full.view();
  expect_invalid(a, "cache_seqlens[1] is 29: with 4 new keys it must be in [0, 28]");
  a.cache_seqlens = negative.view();
  expect_invalid(a, "cache_seqlens[0] is -1");
  a.cache_seqlens = three.view();
  expect_invalid(a, "cache_seqlens has shape [3], expected [batch = 2]");
  a.cache_seqlens = TensorView{};
  expect_invalid(a, "cache_seqlens is a null pointer");
  const HostTensor ok = int32s({0, 28});
  a.cache_seqlens = ok.view();
  HostTensor wide(DType::f16, {B, sn, Hkv, 128});
  a.k_new = wide.view();
  a.v_new = wide.view();
  expect_invalid(a, "does not match the cache's heads and head dim");
  HostTensor f32(DType::f32, {B, sn, Hkv, D});
  a.k_new = f32.view();
  a.v_new = f32.view();
  expect_invalid(a, "k_new dtype float32 differs from k_cache dtype float16");
  // New rows that lie in a cache (a view of its own rows) would be overwritten while read.
  TensorView inside = k.view();
  inside.shape[1] = sn;  // rows 0..3 of sequence 0 and 1
  a.k_new = inside;
  a.v_new = vn.view();
  expect_invalid(a, "k_new's memory overlaps k_cache's");
  a.k_new = kn.view();
  TensorView in_v = v.view();
  in_v.shape[1] = sn;
  a.v_new = in_v;
  expect_invalid(a, "v_new's memory overlaps v_cache's");
  a.v_new = vn.view();
  // More new keys than a sequence has slots: k_new is named, not cache_seqlens.
  HostTensor many(DType::f16, {B, Sk + 1, Hkv, D});
  const HostTensor zeros2 = int32s({0, 0});
  a.cache_seqlens = zeros2.view();
  a.k_new = many.view();
  a.v_new = many.view();
  expect_invalid(a,
                 "k_new shape [2, 33, 2, 64] holds 33 new keys a sequence, more than the "
                 "cache's 32 slots a sequence (k_cache shape [2, 32, 2, 64])");
  a.cache_seqlens = ok.view();
  a.k_new = kn.view();
  a.v_new = vn.view();
  // Enum values cast from wrong integers.
  a.backend = static_cast<Backend>(5);
  expect_invalid(a, "backend is 5, not a gpuattn::Backend");
  a.backend = Backend::automatic;
  TensorView odd = vn.view();
  odd.device = static_cast<Device>(3);
  a.v_new = odd;
  expect_invalid(a, "v_new has device value 3, not a gpuattn::Device");
  odd = vn.view();
  odd.dtype = static_cast<DType>(12);
  a.v_new = odd;
  expect_invalid(a, "v_new has dtype value 12, not a gpuattn::DType");
  a.v_new = vn.view();
  // Paged: sequence 1's new keys (28..31) land in page 3 of its row, which is out of range.
  HostTensor table(DType::i32, {B, 4});
  const std::vector<int> entries = {0, 1, 2, 3, 4, 5, 6, 99};
  for (int i = 0; i < 8; ++i) static_cast<std::int32_t*>(table.data())[i] = entries[i];
  HostTensor pool_k(DType::f16, {8, 8, Hkv, D}), pool_v(DType::f16, {8, 8, Hkv, D});
  pool_k.randomize(5);
  pool_v.randomize(6);
  const HostTensor pk0 = pool_k;
  a.k_cache = pool_k.view();
  a.v_cache = pool_v.view();
  a.block_table = table.view();
  try {
    append_kv(a);
    ADD_FAILURE() << "no error for a page out of range";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("block_table[1][3] is 99"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(same_bytes(pool_k, pk0));
  // Paged, more new keys than the table's pages hold (4 pages of 8 keys).
  a.cache_seqlens = zeros2.view();
  a.k_new = many.view();
  a.v_new = many.view();
  try {
    append_kv(a);
    ADD_FAILURE() << "no error for 33 new keys in 32 slots";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("holds 33 new keys a sequence, more than the cache's 32 "
                                   "slots a sequence (block_table [2, 4] of pages of 8 keys)"),
        std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(same_bytes(pool_k, pk0));
}

}  // namespace
}  // namespace gpuattn::testing
