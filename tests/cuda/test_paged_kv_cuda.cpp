// AttentionArgs::block_table (a paged KV cache) on CUDA, against the fp64 reference of the dense
// cache the pages were cut from, on fresh random inputs with outputs poisoned first: decode calls
// read the pages in place (decode_16x64, whatever GPUATTN_KERNEL names) at page sizes from 1 key
// to 256, powers of two or not, with and without seqused_k (lengths 0 to the whole cache, causal
// rows without keys, 70000-key splits) and leftpad_k; every other call (more rows, a window,
// compensated precision, a cache without seqused_k on Hopper's wgmma kernel) runs on a gathered
// contiguous copy. Unused table entries are -1, so a kernel that reads past a sequence's pages (or
// before its leftpad_k) fails. A bad table is an error that names the entry, with out untouched;
// with check_indices off the calls match too and can be captured into a CUDA graph.
// (tests/cpu/test_paged_kv.cpp shows the reference reads the pages as the dense cache.)
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "common/random_cases.h"
#include "common/test_util.h"
#include "core/fwd_params.h"
#include "core/tile_config.h"
#include "cuda/cuda_attention.h"
#include "cuda/cuda_test_util.h"
#include "gpuattn/attention.h"
#include "gpuattn/reference.h"

namespace gpuattn::testing {
namespace {

struct PagedCase {
  int B, Hq, Hkv, Sq, Sk, D, page;
  DType t;
  bool causal;
  std::vector<int> used;  // empty: no seqused_k (Sk is then a multiple of page)
  MaskSpec mask = {};
  Precision precision = Precision::standard;
  // V's pool with 8 more elements a head than K's: K and V laid out differently (the decode
  // kernel's 64-bit addressing, not the shared 32-bit offsets).
  bool v_padded = false;
  float softcap = 0.f;  // AttentionArgs::softcap
  std::vector<int> pad = {};  // empty: no leftpad_k
  bool alibi = false;         // AttentionArgs::alibi_slopes, [B, Hq]

  std::string name() const {
    return "B" + std::to_string(B) + "_H" + std::to_string(Hq) + "kv" + std::to_string(Hkv) +
           "_Sq" + std::to_string(Sq) + "_Sk" + std::to_string(Sk) + "_D" + std::to_string(D) +
           "_page" + std::to_string(page) + (used.empty() ? "" : "_used") +
           (causal ? "_causal" : "") + (v_padded ? "_vpad" : "") +
           (softcap != 0.f ? "_cap" + number_name(softcap) : "") + (pad.empty() ? "" : "_pad") +
           (alibi ? "_alibi" : "");
  }
};

// Host dense tensors (the reference's), their paged copy, and device copies of what the call
// reads and writes.
struct PagedProblem {
  HostTensor q, k, v, out, lse, used, pad;
  PagedCache pc;
  HostTensor vpad;  // v_padded: pc.v with a head stride of D + 8
  HostTensor alibi;
  DeviceBuffer dq, dk, dv, dtable, dused, dpad, dout, dlse, dalibi;

  PagedProblem(const PagedCase& c, std::uint64_t seed)
      : q(c.t, {c.B, c.Sq, c.Hq, c.D}),
        k(c.t, {c.B, c.Sk, c.Hkv, c.D}),
        v(c.t, {c.B, c.Sk, c.Hkv, c.D}),
        out(c.t, {c.B, c.Sq, c.Hq, c.D}),
        lse(DType::f32, {c.B, c.Hq, c.Sq}),
        used(DType::i32, {c.B}),
        pad(DType::i32, {c.B}) {
    q.randomize(seed);
    k.randomize(seed + 1);
    v.randomize(seed + 2);
    for (std::size_t b = 0; b < c.used.size(); ++b) {
      static_cast<std::int32_t*>(used.data())[b] = c.used[b];
    }
    for (std::size_t b = 0; b < c.pad.size(); ++b) {
      static_cast<std::int32_t*>(pad.data())[b] = c.pad[b];
    }
    pc = page_cache(k, v, c.page, c.used, 5, seed + 3, c.pad);
    const HostTensor* vsrc = &pc.v;
    if (c.v_padded) {
      const std::int64_t rows = pc.v.numel() / c.D;
      vpad = HostTensor(c.t, {pc.v.shape[0], pc.v.shape[1], pc.v.shape[2], c.D + 8});
      vpad.randomize(seed + 4);
      const std::size_t es = element_size(c.t);
      for (std::int64_t r = 0; r < rows; ++r) {
        std::memcpy(static_cast<char*>(vpad.data()) + r * (c.D + 8) * es,
                    static_cast<const char*>(pc.v.data()) + r * c.D * es, c.D * es);
      }
      vsrc = &vpad;
    }
    dq = DeviceBuffer(q.bytes());
    dk = DeviceBuffer(pc.k.bytes());
    dv = DeviceBuffer(vsrc->bytes());
    dtable = DeviceBuffer(pc.table.bytes());
    dused = DeviceBuffer(used.bytes());
    dpad = DeviceBuffer(pad.bytes());
    dout = DeviceBuffer(out.bytes());
    dlse = DeviceBuffer(lse.bytes());
    if (c.alibi) {
      alibi = alibi_slopes_for(c.B, c.Hq, seed + 5);
      dalibi = DeviceBuffer(alibi.bytes());
      dalibi.upload(alibi.data());
    }
    dq.upload(q.data());
    dk.upload(pc.k.data());
    dv.upload(vsrc->data());
    dtable.upload(pc.table.data());
    dused.upload(used.data());
    dpad.upload(pad.data());
  }
  void poison() {
    out.poison();
    lse.poison();
    dout.upload(out.data());
    dlse.upload(lse.data());
  }
  AttentionArgs device_args(const PagedCase& c) const {
    AttentionArgs a;
    a.q = q.view(Device::cuda, dq.get());
    a.k = pc.k.view(Device::cuda, dk.get());
    a.v = pc.v.view(Device::cuda, dv.get());
    if (!vpad.shape.empty()) {  // [pages, page, Hkv, D] over rows of D + 8
      a.v.stride[2] = a.v.shape[3] + 8;
      a.v.stride[1] = a.v.shape[2] * a.v.stride[2];
      a.v.stride[0] = a.v.shape[1] * a.v.stride[1];
    }
    a.out = out.view(Device::cuda, dout.get());
    a.lse = lse.view(Device::cuda, dlse.get());
    a.block_table = pc.table.view(Device::cuda, dtable.get());
    if (!c.used.empty()) a.seqused_k = used.view(Device::cuda, dused.get());
    if (!c.pad.empty()) a.leftpad_k = pad.view(Device::cuda, dpad.get());
    a.causal = c.causal;
    a.mask = c.mask;
    a.precision = c.precision;
    a.softcap = c.softcap;
    if (c.alibi) a.alibi_slopes = alibi.view(Device::cuda, dalibi.get());
    a.backend = Backend::cuda;
    return a;
  }
  AttentionArgs host_args(const PagedCase& c) const {  // the dense cache
    AttentionArgs a = tensor_args(q, k, v, out, &lse);
    if (!c.used.empty()) a.seqused_k = used.view();
    if (!c.pad.empty()) a.leftpad_k = pad.view();
    a.causal = c.causal;
    a.mask = c.mask;
    a.precision = c.precision;
    a.softcap = c.softcap;
    if (c.alibi) a.alibi_slopes = alibi.view();
    return a;
  }
};

// Runs the paged call on poisoned outputs; out elementwise within the dtype's bound of the fp64
// reference, lse within 1e-3 relative (-inf exact), nothing left unwritten.
void expect_matches_reference(PagedProblem& p, const PagedCase& c, bool check_indices = true,
                              std::int64_t table_stride = -1, bool pdl_cache_ready = false) {
  p.poison();
  AttentionArgs a = p.device_args(c);
  a.check_indices = check_indices;
  a.pdl = a.pdl_cache_ready = pdl_cache_ready;
  if (table_stride >= 0) a.block_table.stride[0] = table_stride;
  attention_forward(a);
  TEST_CUDA_CHECK(cudaDeviceSynchronize());
  p.dout.download(p.out.data());
  p.dlse.download(p.lse.data());
  std::vector<std::int64_t> rows(static_cast<std::size_t>(c.B) * c.Sq);
  for (std::size_t r = 0; r < rows.size(); ++r) rows[r] = static_cast<std::int64_t>(r);
  const ReferenceResult ref = parallel_reference(p.host_args(c), rows);
  std::vector<float> lse(static_cast<std::size_t>(p.lse.numel()));
  for (std::size_t i = 0; i < lse.size(); ++i) lse[i] = p.lse.get(static_cast<std::int64_t>(i));
  const Comparison cmp = compare(ref, p.out, c.Hq, c.D, &lse, [&](std::int64_t row, int h) {
    return (row / c.Sq * c.Hq + h) * c.Sq + row % c.Sq;
  });
  EXPECT_EQ(cmp.nonfinite, 0) << "elements of out left unwritten or not finite";
  EXPECT_LE(cmp.lse_rel, 1e-3);
  expect_out_within_max_abs(ref, p.out, c.Hq, c.D, max_abs_tol(c.t), c.B, c.Sq, nullptr);
}

class PagedKvCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(PagedKvCuda, DecodeReadsThePagesInPlace) {
  std::vector<PagedCase> cases = {
      {3, 32, 8, 1, 4096, 128, 16, DType::bf16, false, {4096, 1, 0}},
      {2, 16, 16, 4, 777, 64, 1, DType::f16, true, {777, 3}},  // 3 keys, 4 causal rows: row 0 none
      {2, 8, 2, 2, 3000, 256, 48, DType::f16, false, {2999, 1500}},
      {4, 8, 8, 1, 70000, 64, 256, DType::bf16, false, {70000, 65, 64, 100}},
      {2, 64, 1, 1, 5000, 128, 32, DType::f16, true, {4097, 2}},  // 4 row blocks
      {2, 16, 4, 1, 4096, 128, 64, DType::bf16, false, {}},       // the whole cache
      {2, 8, 8, 3, 1000, 64, 7, DType::f16, true, {1000, 999}},
      // Pages of 16 keys or more, not a multiple of 16: a warp's rows in two pages.
      {2, 8, 2, 1, 2000, 64, 24, DType::bf16, false, {2000, 333}},
      {2, 8, 4, 2, 1500, 256, 100, DType::f16, true, {1500, 101}},
      {3, 16, 4, 1, 900, 128, 17, DType::bf16, true, {900, 16, 17}},
  };
  PagedCase vpad64 = {2, 16, 4, 1, 3000, 64, 16, DType::bf16, false, {3000, 77}};
  PagedCase vpad128 = {2, 32, 8, 2, 2000, 128, 5, DType::f16, true, {1999, 640}};
  vpad64.v_padded = vpad128.v_padded = true;
  cases.push_back(vpad64);
  cases.push_back(vpad128);
  for (const PagedCase& c : cases) {
    SCOPED_TRACE(c.name());
    PagedProblem p(c, seed_of("PagedKvCuda/" + c.name()));
    EXPECT_EQ(cuda_forward_kernel(make_fwd_params(p.device_args(c))), FwdKernel::decode_16x64);
    expect_matches_reference(p, c);
  }
}

// leftpad_k over a paged cache (beyond flash-attn, which refuses the pair; Python's
// cache_batch_idx with cache_leftpad runs as one): decode calls read the pages in place from
// logical key leftpad_k[b] on, the pages wholly before it unset (-1) in the table. Starts on a
// multiple of a warp's 16 keys (one table entry a warp and tile) and off it, pages of 1 to 256
// keys, powers of two or not (16 keys or more: a warp's rows in at most two pages), every head
// dim, causal rows, GQA and MQA, a 70000-key split, a sequence of no keys, V laid out apart from
// K, checked, unchecked and with pdl_cache_ready (the early start's ranged loads); captured
// unchecked, the call is one kernel (no gather before the decode kernel).
TEST_F(PagedKvCuda, LeftpadDecodeReadsThePagesInPlace) {
  const DType f16 = DType::f16, bf16 = DType::bf16;
  const std::vector<std::pair<PagedCase, std::vector<int>>> with_pads = {
      {{3, 32, 8, 1, 4096, 128, 16, bf16, false, {4096, 40, 300}}, {32, 7, 300}},  // b2: no key
      {{2, 16, 16, 4, 777, 64, 1, f16, true, {777, 9}}, {700, 6}},  // 3 keys, 4 causal rows
      {{2, 8, 2, 2, 3000, 256, 48, f16, false, {2999, 1500}}, {1, 1499}},
      {{2, 8, 2, 2, 3000, 256, 32, bf16, true, {3000, 1000}}, {64, 480}},
      {{4, 8, 8, 1, 70000, 64, 256, bf16, false, {70000, 65, 64, 100}}, {5, 0, 63, 99}},
      {{2, 64, 1, 1, 5024, 128, 32, f16, true, {}}, {5000, 123}},  // no seqused_k: to Sk
      {{2, 8, 8, 3, 1000, 64, 7, f16, true, {1000, 999}}, {3, 500}},
      {{2, 32, 8, 2, 2000, 128, 5, f16, true, {1999, 640}, {}, Precision::standard, true},
       {17, 639}},
      {{2, 16, 4, 1, 3000, 64, 16, bf16, false, {3000, 77}, {}, Precision::standard, true},
       {48, 13}},
      {{2, 8, 2, 1, 2000, 256, 100, f16, false, {2000, 333}}, {150, 7}},
      {{3, 16, 4, 2, 900, 128, 24, bf16, true, {900, 40, 17}}, {23, 24, 0}},
      {{2, 16, 4, 1, 3000, 128, 40, bf16, false, {3000, 77}, {}, Precision::standard, true},
       {5, 13}},
  };
  for (const auto& [base, pad] : with_pads) {
    PagedCase c = base;
    c.pad = pad;
    SCOPED_TRACE(c.name());
    PagedProblem p(c, seed_of("PagedKvCuda/" + c.name()));
    EXPECT_EQ(cuda_forward_kernel(make_fwd_params(p.device_args(c))), FwdKernel::decode_16x64);
    expect_matches_reference(p, c);
    expect_matches_reference(p, c, false);
    // pdl_cache_ready: the first tiles' older keys issued before the wait, the newest after (the
    // ranged loads of every page path).
    expect_matches_reference(p, c, true, -1, true);
    EXPECT_EQ(unchecked_kernels(p.device_args(c),
                                [](const AttentionArgs& u) { attention_forward(u); }, "call"),
              1);
  }
}

// Soft-capped decode calls read the pages in place as well (caps that bend scores of about
// N(0, 1)), and a soft-capped prefill runs on the gathered copy.
TEST_F(PagedKvCuda, SoftcappedCallsMatchTheReference) {
  std::vector<PagedCase> cases = {
      {3, 32, 8, 1, 4096, 128, 16, DType::bf16, false, {4096, 1, 0}},
      {2, 16, 16, 4, 777, 64, 1, DType::f16, true, {777, 3}},
      {2, 8, 2, 2, 3000, 256, 48, DType::f16, false, {2999, 1500}},
      {2, 8, 8, 300, 512, 128, 64, DType::bf16, true, {}},  // prefill: the gathered copy
      {2, 16, 4, 1, 2000, 64, 16, DType::f16, false, {2000, 999}},  // the exact tanh
  };
  const float caps[] = {1.f, 0.75f, 4.f, 2.f, 1e5f};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    PagedCase& c = cases[i];
    c.softcap = caps[i];
    SCOPED_TRACE(c.name());
    PagedProblem p(c, seed_of("PagedKvCuda/" + c.name()));
    const FwdKernel k = cuda_forward_kernel(make_fwd_params(p.device_args(c)));
    EXPECT_EQ(k == FwdKernel::decode_16x64, c.Sq < 100) << tile_config(k).name;
    expect_matches_reference(p, c);
  }
}

// ALiBi calls on a paged cache: decode shapes read the pages in place (the decode kernel adds the
// bias, each packed GQA row its own head's slope), prefill runs on the gathered copy; seqused_k
// and leftpad_k (distances counted from the first key used), checked and unchecked, slopes a
// sequence and head.
TEST_F(PagedKvCuda, AlibiCallsMatchTheReference) {
  const DType f16 = DType::f16, bf16 = DType::bf16;
  const std::vector<std::pair<PagedCase, std::vector<int>>> cases = {
      {{3, 32, 8, 1, 4096, 128, 16, bf16, false, {4096, 40, 300}}, {32, 7, 300}},
      {{2, 16, 16, 4, 777, 64, 1, f16, true, {777, 9}}, {700, 6}},
      {{2, 8, 2, 2, 3000, 256, 48, f16, false, {2999, 1500}}, {}},
      {{2, 8, 8, 300, 512, 128, 64, bf16, true, {}}, {}},
      {{2, 4, 2, 130, 300, 128, 16, f16, true, {300, 129}}, {3, 100}},
  };
  for (const auto& [base, pad] : cases) {
    PagedCase c = base;
    c.pad = pad;
    c.alibi = true;
    SCOPED_TRACE(c.name());
    PagedProblem p(c, seed_of("PagedKvCuda/" + c.name()));
    const FwdKernel k = cuda_forward_kernel(make_fwd_params(p.device_args(c)));
    EXPECT_EQ(k == FwdKernel::decode_16x64, c.Sq < 100) << tile_config(k).name;
    expect_matches_reference(p, c);
    expect_matches_reference(p, c, false);
  }
}

// Calls the decode kernel does not take run on a gathered contiguous copy of their pages.
TEST_F(PagedKvCuda, OtherCallsRunOnAGatheredCopy) {
  PagedCase window = {2, 8, 2, 1, 500, 64, 16, DType::bf16, false, {500, 77}};
  window.mask = make_mask(63, 0);
  PagedCase compensated = {2, 8, 8, 1, 256, 256, 64, DType::f16, false, {}};
  compensated.precision = Precision::compensated;
  const std::vector<PagedCase> cases = {
      {2, 4, 2, 130, 300, 128, 16, DType::f16, true, {300, 129}},
      {2, 8, 8, 256, 512, 64, 128, DType::f16, false, {}},  // no seqused_k: wgmma on Hopper
      {1, 4, 4, 70, 96, 128, 5, DType::bf16, true, {0}},    // no key used at all
      window,
      compensated,
  };
  for (const PagedCase& c : cases) {
    SCOPED_TRACE(c.name());
    PagedProblem p(c, seed_of("PagedKvCuda/" + c.name()));
    EXPECT_NE(cuda_forward_kernel(make_fwd_params(p.device_args(c))), FwdKernel::decode_16x64);
    expect_matches_reference(p, c);
  }
}

// Tables whose rows overlap: a batch of one with an odd row stride (matches the reference), and
// every sequence on row 0 (stride 0) or on rows one entry apart (stride 1 < max_pages), checked
// against the same call without the host check. The check's copy took the stride as a pitch and
// the runtime refused it ("invalid pitch argument") for valid calls. Decode and gathered calls.
TEST_F(PagedKvCuda, TablesOfOverlappingRows) {
  for (const int sq : {1, 40}) {
    const PagedCase one = {1, 4, 2, sq, 256, 64, 16, DType::f16, false, {}};
    SCOPED_TRACE("Sq " + std::to_string(sq));
    {
      PagedProblem p(one, seed_of("PagedKvCuda/overlap1/" + std::to_string(sq)));
      expect_matches_reference(p, one, true, 1);  // one row: any stride
    }
    for (const std::int64_t stride : {0, 1}) {
      SCOPED_TRACE("stride " + std::to_string(stride));
      const PagedCase c = {3, 4, 2, sq, 256, 64, 16, DType::f16, false, {}};
      PagedProblem p(c, seed_of("PagedKvCuda/overlap/" + std::to_string(sq)));
      AttentionArgs a = p.device_args(c);
      a.block_table.stride[0] = stride;
      a.check_indices = false;
      p.poison();
      attention_forward(a);
      TEST_CUDA_CHECK(cudaDeviceSynchronize());
      HostTensor want = p.out;
      p.dout.download(want.data());
      a.check_indices = true;
      p.poison();
      EXPECT_NO_THROW(attention_forward(a));
      TEST_CUDA_CHECK(cudaDeviceSynchronize());
      p.dout.download(p.out.data());
      EXPECT_EQ(std::memcmp(p.out.data(), want.data(), want.bytes()), 0);
    }
  }
}

// A call that fails in the runtime (here out of memory: a gathered copy of 64 sequences of 2^29
// keys, 4 TiB) leaves no runtime error behind: the next valid call, a decode whose launch check
// read the stale error, threw after writing its output.
TEST_F(PagedKvCuda, AFailedCallLeavesNoPendingError) {
  const int B = 64, Sq = 65, D = 64, page = 1 << 20, pages_a_row = 1 << 9;
  DeviceBuffer q(std::size_t{2} * B * Sq * D), out(std::size_t{2} * B * Sq * D),
      pool(std::size_t{2} * page * D), table(std::size_t{4} * B * pages_a_row);
  TEST_CUDA_CHECK(cudaMemset(pool.get(), 0, pool.bytes()));
  TEST_CUDA_CHECK(cudaMemset(table.get(), 0, table.bytes()));  // every entry page 0
  AttentionArgs big;
  big.q = TensorView::contiguous(q.get(), DType::f16, Device::cuda, {B, Sq, 1, D});
  big.out = TensorView::contiguous(out.get(), DType::f16, Device::cuda, {B, Sq, 1, D});
  big.k = TensorView::contiguous(pool.get(), DType::f16, Device::cuda, {1, page, 1, D});
  big.v = big.k;
  big.block_table = TensorView::contiguous(table.get(), DType::i32, Device::cuda, {B, pages_a_row});
  try {
    attention_forward(big);
    ADD_FAILURE() << "a 4 TiB gathered copy was allocated";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::cuda_error) << e.what();
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the failed call left the runtime's error set";
  const PagedCase c = {2, 4, 2, 1, 256, 64, 16, DType::f16, false, {}};
  PagedProblem p(c, seed_of("PagedKvCuda/pending"));
  expect_matches_reference(p, c);
}

// GPUATTN_FUZZ_CASES random paged calls (default 40) drawn from GPUATTN_FUZZ_SEED (a fixed
// default; another seed explores; tests/common/random_cases.h): both 16-bit types, every head dim,
// GQA and MQA, mostly decode-like rows (1-4; then 5-200, gathered), 1-6000 keys, pages of 1-256
// keys (powers of two or not), seqused_k from 0 to the whole cache or none, leftpad_k (on a
// multiple of 16 or not, up to the sequence's end), causal, windows, compensated precision, V laid
// out apart from K.
PagedCase random_paged_case(Dice& d) {
  for (;;) {
    PagedCase c{};
    c.t = d.chance(0.5) ? DType::f16 : DType::bf16;
    c.D = d.one_of({64, 128, 256});
    c.Hkv = d.one_of({1, 2, 4, 8});
    c.Hq = c.Hkv * d.one_of({1, 2, 4, 8});
    c.B = d.between(1, 4);
    c.Sq = d.chance(0.75) ? d.between(1, 4) : d.length(5, 200);
    c.page = d.one_of({1, 2, 5, 7, 16, 32, 48, 64, 100, 128, 256});
    c.Sk = d.length(1, 6000);
    c.causal = d.chance(0.5);
    if (d.chance(0.7)) {
      for (int b = 0; b < c.B; ++b) {
        c.used.push_back(d.chance(0.15) ? 0 : d.chance(0.2) ? c.Sk : d.between(1, c.Sk));
      }
    } else {
      c.Sk = (c.Sk + c.page - 1) / c.page * c.page;  // without seqused_k: whole pages
    }
    if (d.chance(0.1)) {  // right side drawn first (the order GCC gave the arguments)
      const int right = d.chance(0.5) ? 0 : -1;
      c.mask = make_mask(d.between(0, 500), right);
    }
    if (d.chance(0.1)) c.precision = Precision::compensated;
    c.v_padded = d.chance(0.15);
    if (d.chance(0.2)) {  // leftpad_k (drawn last: the other draws stay those of earlier seeds)
      for (int b = 0; b < c.B; ++b) {
        const int end = c.used.empty() ? c.Sk : c.used[b];
        c.pad.push_back(d.chance(0.15) ? end : d.chance(0.3) ? 16 * d.between(0, end / 16)
                                                             : d.between(0, end));
      }
    }
    if (double(c.B) * c.Sq * c.Sk * c.Hq * c.D <= 2e8) return c;
  }
}

TEST_F(PagedKvCuda, RandomCallsMatchReference) {
  const FuzzRun run = FuzzRun::from_env(kDefaultFuzzSeed, 40);
  Dice dice(run.seed);
  for (int i = 0; i < run.cases; ++i) {
    const PagedCase c = random_paged_case(dice);
    std::string used, pad;
    for (const int u : c.used) used += " " + std::to_string(u);
    for (const int u : c.pad) pad += " " + std::to_string(u);
    SCOPED_TRACE(run.where(i) + ": " + c.name() + (c.t == DType::bf16 ? " bf16" : " f16") +
                 (c.mask.window_left >= 0 ? " window " + std::to_string(c.mask.window_left) + "," +
                                                std::to_string(c.mask.window_right)
                                          : "") +
                 (c.precision == Precision::compensated ? " compensated" : "") +
                 (used.empty() ? "" : " used" + used) + (pad.empty() ? "" : " leftpad" + pad));
    PagedProblem p(c, run.case_seed(i));
    expect_matches_reference(p, c);
  }
}

// check_indices = false: no host copies; the same results, and the call can be captured into a
// CUDA graph (a synchronization inside a capture fails it) and replayed, bit for bit.
TEST_F(PagedKvCuda, UncheckedCallsMatchAndCanBeCaptured) {
  const std::vector<PagedCase> cases = {
      {3, 32, 8, 1, 4096, 128, 16, DType::bf16, false, {4096, 1, 0}},  // decode, split
      {2, 4, 2, 130, 300, 128, 16, DType::f16, true, {300, 129}},      // gathered, sm_80 kernel
      {2, 8, 8, 256, 512, 64, 128, DType::f16, false, {}},             // gathered, wgmma on Hopper
  };
  cudaStream_t stream = nullptr;
  TEST_CUDA_CHECK(cudaStreamCreate(&stream));
  for (const PagedCase& c : cases) {
    SCOPED_TRACE(c.name());
    PagedProblem p(c, seed_of("PagedKvCuda/unchecked/" + c.name()));
    expect_matches_reference(p, c, false);
    const HostTensor eager = p.out;
    p.poison();
    AttentionArgs a = p.device_args(c);
    a.check_indices = false;
    a.stream = stream;
    if (!run_captured(stream, [&] { attention_forward(a); }, 2, "call")) continue;
    p.dout.download(p.out.data());
    for (std::int64_t i = 0; i < p.out.numel(); ++i) {
      ASSERT_EQ(p.out.get(i), eager.get(i)) << "out element " << i << " after the replays";
    }
  }
  TEST_CUDA_CHECK(cudaStreamDestroy(stream));
}

// check_indices on a stream that is capturing a CUDA graph: the host copies would need a
// synchronization the capture cannot make (it would invalidate the capture). The call refuses
// before it queues anything, naming check_indices and the first array it would copy; the capture
// then ends cleanly with an empty graph, and the same call outside it runs and matches.
TEST_F(PagedKvCuda, CheckedCallsRefuseACapturingStream) {
  const std::vector<PagedCase> cases = {
      {2, 8, 2, 1, 64, 64, 16, DType::f16, false, {64, 20}},  // decode: seqused_k first
      {2, 4, 2, 130, 320, 128, 16, DType::f16, true, {}},     // gathered: block_table first
  };
  cudaStream_t stream = nullptr;
  TEST_CUDA_CHECK(cudaStreamCreate(&stream));
  for (const PagedCase& c : cases) {
    SCOPED_TRACE(c.name());
    PagedProblem p(c, seed_of("PagedKvCuda/capture/" + c.name()));
    p.poison();
    AttentionArgs a = p.device_args(c);
    a.stream = stream;
    TEST_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    std::string error;
    try {
      attention_forward(a);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
      error = e.what();
    }
    cudaGraph_t graph = nullptr;
    TEST_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    std::size_t nodes = 0;
    TEST_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
    TEST_CUDA_CHECK(cudaGraphDestroy(graph));
    EXPECT_EQ(nodes, 0u) << "the refused call queued work into the capture";
    const std::string first = c.used.empty() ? "block_table" : "seqused_k";
    EXPECT_NE(error.find("check_indices reads " + first + " on a host copy"), std::string::npos)
        << (error.empty() ? "no error" : error);
    EXPECT_NE(error.find("check_indices = false"), std::string::npos) << error;
    expect_matches_reference(p, c);
  }
  TEST_CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST_F(PagedKvCuda, BadTableEntriesAreNamedAndOutIsUntouched) {
  const PagedCase c = {2, 8, 2, 1, 64, 64, 16, DType::f16, false, {64, 20}};
  PagedProblem p(c, 7);
  for (int entry : {-1, 1 << 20}) {
    // Sequence 1 uses 20 keys: pages 0 and 1 of its row.
    HostTensor table = p.pc.table;
    static_cast<std::int32_t*>(table.data())[4 + 1] = entry;
    p.dtable.upload(table.data());
    p.poison();
    try {
      attention_forward(p.device_args(c));
      ADD_FAILURE() << "no error for entry " << entry;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find("block_table[1][1] is " + std::to_string(entry)),
                std::string::npos)
          << e.what();
    }
    TEST_CUDA_CHECK(cudaDeviceSynchronize());
    p.dout.download(p.out.data());
    for (std::int64_t i = 0; i < p.out.numel(); ++i) ASSERT_TRUE(std::isnan(p.out.get(i)));
  }
}

}  // namespace
}  // namespace gpuattn::testing
