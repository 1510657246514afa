// AttentionArgs::block_table (a paged KV cache) on the CPU backend and the reference: a call over
// pages in a shuffled pool equals the call over the dense cache they were cut from, bit for bit
// (the same keys in the same order), for page sizes from 1 to past the cache, with and without
// seqused_k, causal or not, GQA, a window and compensated precision; and every bad table is an
// invalid_argument that names the offending value, with out untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/expect_error.h"
#include "common/test_util.h"
#include "gpuattn/attention.h"

namespace gpuattn::testing {
namespace {

struct PagedCase {
  int B, Hq, Hkv, Sq, Sk, D, page;
  std::vector<int> used;  // empty: no seqused_k
  bool causal;
  MaskSpec mask;
  Precision precision;
};

std::string name_of(const PagedCase& c) {
  return "B" + std::to_string(c.B) + " H" + std::to_string(c.Hq) + "/" + std::to_string(c.Hkv) +
         " Sq" + std::to_string(c.Sq) + " Sk" + std::to_string(c.Sk) + " D" + std::to_string(c.D) +
         " page " + std::to_string(c.page) + (c.used.empty() ? "" : " seqused") +
         (c.causal ? " causal" : "");
}

TEST(PagedKv, EqualsTheDenseCacheOnBothCpuPaths) {
  const MaskSpec none;
  const MaskSpec window = make_mask(5, 0);
  const std::vector<PagedCase> cases = {
      {2, 4, 4, 1, 64, 64, 16, {}, false, none, Precision::standard},
      {3, 8, 2, 1, 50, 64, 1, {50, 17, 0}, false, none, Precision::standard},
      {3, 8, 2, 3, 50, 64, 3, {50, 17, 0}, true, none, Precision::standard},
      {2, 4, 1, 5, 100, 128, 64, {100, 37}, true, none, Precision::standard},
      {2, 4, 2, 1, 40, 64, 256, {40, 40}, false, none, Precision::standard},  // a page > Sk
      {2, 4, 2, 7, 80, 64, 16, {}, true, window, Precision::standard},
      {2, 4, 2, 2, 33, 256, 7, {33, 8}, false, none, Precision::compensated},
  };
  for (const PagedCase& c : cases) {
    SCOPED_TRACE(name_of(c));
    HostTensor q(DType::f32, {c.B, c.Sq, c.Hq, c.D}), k(DType::f32, {c.B, c.Sk, c.Hkv, c.D}),
        v(DType::f32, {c.B, c.Sk, c.Hkv, c.D});
    const std::uint64_t seed = std::hash<std::string>{}(name_of(c));
    q.randomize(seed);
    k.randomize(seed + 1);
    v.randomize(seed + 2);
    const PagedCache pc = page_cache(k, v, c.page, c.used, 3, seed + 3);
    const HostTensor used = int32s(c.used);
    for (bool reference : {false, true}) {
      SCOPED_TRACE(reference ? "reference" : "cpu backend");
      HostTensor want(DType::f32, {c.B, c.Sq, c.Hq, c.D}), got(DType::f32, {c.B, c.Sq, c.Hq, c.D}),
          want_lse(DType::f32, {c.B, c.Hq, c.Sq}), got_lse(DType::f32, {c.B, c.Hq, c.Sq});
      got.poison();
      got_lse.poison();
      AttentionArgs dense = tensor_args(q, k, v, want, &want_lse);
      AttentionArgs paged = tensor_args(q, pc.k, pc.v, got, &got_lse);
      paged.block_table = pc.table.view();
      for (AttentionArgs* a : {&dense, &paged}) {
        if (!c.used.empty()) a->seqused_k = used.view();
        a->causal = c.causal;
        a->mask = c.mask;
        a->precision = c.precision;
        a->backend = Backend::cpu;
      }
      if (reference) {
        const ReferenceResult r_dense = reference_attention(dense);
        const ReferenceResult r_paged = reference_attention(paged);
        ASSERT_EQ(r_dense.rows, r_paged.rows);
        ASSERT_EQ(r_dense.out.size(), r_paged.out.size());
        for (std::size_t i = 0; i < r_dense.out.size(); ++i) {
          ASSERT_EQ(r_paged.out[i], r_dense.out[i]) << "out " << i;
        }
        for (std::size_t i = 0; i < r_dense.lse.size(); ++i) {
          if (std::isnan(r_dense.lse[i])) continue;
          ASSERT_EQ(r_paged.lse[i], r_dense.lse[i]) << "lse " << i;
        }
        continue;
      }
      attention_forward(dense);
      attention_forward(paged);
      for (std::int64_t i = 0; i < want.numel(); ++i) {
        ASSERT_EQ(got.get(i), want.get(i)) << "out element " << i;
      }
      for (std::int64_t i = 0; i < want_lse.numel(); ++i) {
        ASSERT_EQ(got_lse.get(i), want_lse.get(i)) << "lse element " << i;
      }
    }
  }
}

TEST(PagedKv, BadTablesAreNamedAndOutIsUntouched) {
  const int B = 2, Sq = 1, H = 4, D = 64, page = 16, pages = 6;
  HostTensor q(DType::f32, {B, Sq, H, D}), k(DType::f32, {pages, page, H, D}),
      v(DType::f32, {pages, page, H, D}), out(DType::f32, {B, Sq, H, D});
  q.randomize(1);
  k.randomize(2);
  v.randomize(3);
  auto expect_invalid = [&](const AttentionArgs& a, const std::string& words) {
    out.poison();
    expect_invalid_argument([&] { attention_forward(a); }, words);
    for (std::int64_t i = 0; i < out.numel(); ++i) ASSERT_TRUE(std::isnan(out.get(i)));
  };
  auto table_of = [](int rows, int cols, const std::vector<int>& e) {
    HostTensor t(DType::i32, {rows, cols});
    for (std::size_t i = 0; i < e.size(); ++i) static_cast<std::int32_t*>(t.data())[i] = e[i];
    return t;
  };
  AttentionArgs a = tensor_args(q, k, v, out);
  a.backend = Backend::cpu;
  const HostTensor past = table_of(B, 3, {0, 1, 2, 3, 4, 6});
  a.block_table = past.view();
  expect_invalid(a, "block_table[1][2] is 6, must be a page in [0, 6)");
  const HostTensor negative = table_of(B, 3, {0, -1, 2, 3, 4, 5});
  a.block_table = negative.view();
  expect_invalid(a, "block_table[0][1] is -1");
  // Entries past the keys a sequence uses are never read: any value passes, and the call runs.
  const HostTensor used = int32s({16, 33});
  const HostTensor padded = table_of(B, 3, {5, -7, 99, 0, 1, 2});
  a.block_table = padded.view();
  a.seqused_k = used.view();
  out.poison();
  attention_forward(a);
  for (std::int64_t i = 0; i < out.numel(); ++i) ASSERT_TRUE(std::isfinite(out.get(i)));
  // ... but a used key's page is: sequence 1 uses 33 keys, 3 pages.
  const HostTensor short_pages = table_of(B, 3, {5, 0, 0, 0, 1, 9});
  a.block_table = short_pages.view();
  expect_invalid(a, "block_table[1][2] is 9");
  a.check_indices = false;  // CUDA only: the CPU backend checks whatever it says
  expect_invalid(a, "block_table[1][2] is 9");
  a.check_indices = true;
  a.seqused_k = TensorView{};
  const HostTensor three = table_of(3, 3, {0, 1, 2, 3, 4, 5, 0, 1, 2});
  a.block_table = three.view();
  expect_invalid(a, "block_table has shape [3, 3], expected [batch = 2, max_pages]");
  // max_pages x page_size past int64 (a stride-0 table): named, not wrapped to 0 keys.
  TensorView huge = three.view();
  huge.shape[0] = B;
  huge.shape[1] = std::int64_t{1} << 62;
  huge.stride[0] = 0;
  a.block_table = huge;
  expect_invalid(a, "block_table max_pages 4611686018427387904 x page_size 16");
  HostTensor floats(DType::f32, {B, 3});
  a.block_table = floats.view();
  expect_invalid(a, "block_table has dtype float32, expected int32");
  HostTensor transposed = table_of(B, 3, {0, 1, 2, 3, 4, 5});
  TensorView t = transposed.view();
  t.shape[0] = 3;
  t.shape[1] = 2;
  t.stride[0] = 1;
  t.stride[1] = 3;
  a.block_table = t;
  expect_invalid(a, "block_table has shape [3, 2]");
  t.shape[0] = 2;
  t.shape[1] = 3;
  a.block_table = t;
  expect_invalid(a, "block_table last-dimension stride is 3, must be 1");
  // Varlen calls cannot take a table.
  HostTensor vq(DType::f32, {2, H, D}), vk(DType::f32, {32, H, D}), vv(DType::f32, {32, H, D}),
      vout(DType::f32, {2, H, D});
  const HostTensor cq = make_cu_seqlens({1, 1}), ck = make_cu_seqlens({16, 16});
  AttentionArgs va = tensor_args(vq, vk, vv, vout);
  va.cu_seqlens_q = cq.view();
  va.cu_seqlens_k = ck.view();
  va.max_seqlen_q = 1;
  va.max_seqlen_k = 16;
  va.block_table = past.view();
  va.backend = Backend::cpu;
  try {
    attention_forward(va);
    ADD_FAILURE() << "varlen with block_table ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("block_table is for dense calls"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace gpuattn::testing
