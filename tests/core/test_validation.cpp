// Validation at the public boundary: every bad input is a gpuattn::Error with the right code and a
// message naming the offending value, and `out` / `lse` are byte-identical afterwards.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/test_util.h"
#include "core/fwd_params.h"
#include "gpuattn/attention.h"
#include "gpuattn/reference.h"

namespace gpuattn {
namespace {

using testing::HostTensor;
using testing::make_cu_seqlens;
using testing::tensor_args;

// A valid dense problem: q/out [B, Sq, Hq, D], k/v [B, Sk, Hkv, D], lse [B, Hq, Sq].
struct Dense {
  HostTensor q, k, v, out, lse;
  Dense(DType t, int B, int Sq, int Sk, int Hq, int Hkv, int D, std::uint64_t seed)
      : q(t, {B, Sq, Hq, D}),
        k(t, {B, Sk, Hkv, D}),
        v(t, {B, Sk, Hkv, D}),
        out(t, {B, Sq, Hq, D}),
        lse(DType::f32, {B, Hq, Sq}) {
    const bool fp = t != DType::i32;
    q.randomize(seed, fp ? 1.f : 10.f);
    k.randomize(seed + 1, fp ? 1.f : 10.f);
    v.randomize(seed + 2, fp ? 1.f : 10.f);
    out.randomize(seed + 3, fp ? 1.f : 10.f);  // any contents: they must survive a failed call
    lse.randomize(seed + 4);
  }
  AttentionArgs args() const { return tensor_args(q, k, v, out, &lse); }
};

// The standard problem of these tests (Sq, Sk, Hq, Hkv all distinct so shape messages are clear).
Dense standard(std::uint64_t seed, DType t = DType::f16) {
  return Dense(t, 2, 6, 10, 4, 2, 64, seed);
}

// Calls attention_forward and expects an Error with `code` whose message contains every `needle`;
// the `untouched` tensors must be byte-identical afterwards. check_attention_args must refuse the
// call first with the same code and message.
void expect_rejected(const AttentionArgs& a, ErrorCode code,
                     std::initializer_list<std::string> needles,
                     std::initializer_list<const HostTensor*> untouched) {
  std::vector<std::vector<std::uint64_t>> before;
  for (const HostTensor* t : untouched) before.push_back(t->storage);
  std::string checked = "no error";
  try {
    check_attention_args(a);
  } catch (const Error& e) {
    checked = e.what();
    EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(code)) << checked;
  }
  try {
    attention_forward(a);
    ADD_FAILURE() << "no error; expected one naming '" << *needles.begin() << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(code)) << msg;
    EXPECT_EQ(checked, msg) << "check_attention_args and attention_forward differ";
    for (const std::string& n : needles) {
      EXPECT_NE(msg.find(n), std::string::npos) << "message '" << msg << "' lacks '" << n << "'";
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a gpuattn::Error: " << e.what();
  }
  std::size_t i = 0;
  for (const HostTensor* t : untouched) {
    EXPECT_TRUE(t->storage == before[i++]) << "a buffer was written by a failed call";
  }
}

void expect_invalid(const AttentionArgs& a, std::initializer_list<std::string> needles,
                    const Dense& d) {
  expect_rejected(a, ErrorCode::invalid_argument, needles, {&d.out, &d.lse});
}

TEST(Validation, StandardProblemIsValid) {
  Dense d = standard(1);
  d.out.poison();
  d.lse.poison();
  EXPECT_NO_THROW(attention_forward(d.args()));
  EXPECT_FALSE(std::isnan(d.out.get(0)));
  EXPECT_FALSE(std::isnan(d.lse.get(d.lse.numel() - 1)));
}

TEST(Validation, UnsupportedHeadDim) {
  for (int D : {96, 32, 0, 192, 512}) {
    const Dense d(DType::f16, 2, 6, 10, 4, 2, D, 10 + D);
    expect_rejected(d.args(), ErrorCode::not_supported,
                    {"head dim " + std::to_string(D), "(64, 128, 256)"}, {&d.out, &d.lse});
  }
}

// Every supported head dim passes validation (here on the CPU backend: every value written).
TEST(Validation, SupportedHeadDims) {
  for (int D : {64, 128, 256}) {
    SCOPED_TRACE("D = " + std::to_string(D));
    Dense d(DType::f16, 2, 6, 10, 4, 2, D, 20 + D);
    d.out.poison();
    d.lse.poison();
    EXPECT_NO_THROW(attention_forward(d.args()));
    for (std::int64_t i = 0; i < d.out.numel(); ++i) {
      ASSERT_FALSE(std::isnan(d.out.get(i))) << "out element " << i << " not written";
    }
    for (std::int64_t i = 0; i < d.lse.numel(); ++i) {
      ASSERT_FALSE(std::isnan(d.lse.get(i))) << "lse element " << i << " not written";
    }
  }
}

// AttentionArgs::counters is for CUDA calls: with host tensors it is an error naming it (the
// device-side checks, dtype, shape and the count a call needs, are in the CUDA suite).
TEST(Validation, CountersAreForCudaCalls) {
  const Dense d = standard(15);
  HostTensor counters(DType::i32, {8});
  AttentionArgs a = d.args();
  a.counters = counters.view();
  expect_invalid(a, {"counters", "CUDA"}, d);
}

// strides_fit_tma: contiguous, sliced and size-1-broadcast views fit the TMA kernels' maps; a zero
// stride over more than one head, row or batch, or a negative stride, does not (those calls run
// the kernels that address by offsets), and the CPU backend gives the same answer for a broadcast
// view as for the same values stored out.
TEST(Validation, BroadcastAndNegativeStridesDoNotFitTensorMaps) {
  Dense d = standard(17);
  AttentionArgs a = d.args();
  EXPECT_TRUE(strides_fit_tma(make_fwd_params(a)));
  // A size-1 dimension's stride is free (Python passes 0 there).
  HostTensor q1(DType::f16, {1, 6, 1, 64}), o1(DType::f16, {1, 6, 1, 64}),
      k1(DType::f16, {1, 10, 1, 64});
  AttentionArgs one = tensor_args(q1, k1, k1, o1);
  one.q.stride[0] = one.q.stride[2] = one.out.stride[0] = one.out.stride[2] = 0;
  one.k.stride[2] = one.v.stride[2] = 0;
  EXPECT_TRUE(strides_fit_tma(make_fwd_params(one)));
  for (int dim : {0, 1, 2}) {
    AttentionArgs b = d.args();
    b.k.stride[dim] = 0;
    EXPECT_FALSE(strides_fit_tma(make_fwd_params(b))) << "k stride " << dim << " zero";
    AttentionArgs q0 = d.args();
    q0.q.stride[dim] = 0;
    EXPECT_FALSE(strides_fit_tma(make_fwd_params(q0))) << "q stride " << dim << " zero";
  }
  // K/V heads broadcast from one stored head equal the same head stored Hkv times.
  HostTensor ks(DType::f16, {2, 10, 1, 64}), vs(DType::f16, {2, 10, 1, 64});
  ks.randomize(5);
  vs.randomize(6);
  HostTensor kf(DType::f16, {2, 10, 2, 64}), vf(DType::f16, {2, 10, 2, 64});
  for (std::int64_t i = 0; i < kf.numel(); ++i) {
    const std::int64_t d64 = i % 64, row = i / 128;  // [b * 10 + j] of [.., 2 heads, 64]
    kf.set(i, ks.get(row * 64 + d64));
    vf.set(i, vs.get(row * 64 + d64));
  }
  AttentionArgs bc = d.args();
  bc.k = ks.view();
  bc.v = vs.view();
  bc.k.shape[2] = bc.v.shape[2] = 2;
  bc.k.stride[2] = bc.v.stride[2] = 0;
  EXPECT_FALSE(strides_fit_tma(make_fwd_params(bc)));
  d.out.poison();
  attention_forward(bc);
  const HostTensor broadcast_out = d.out;
  AttentionArgs full = d.args();
  full.k = kf.view();
  full.v = vf.view();
  d.out.poison();
  attention_forward(full);
  EXPECT_EQ(std::memcmp(broadcast_out.data(), d.out.data(), d.out.bytes()), 0);
}

// AttentionArgs::pdl reaches the kernels' parameters (the decode launch reads it there); the CPU
// backend ignores it: the same call gives the same bits with it or without.
TEST(Validation, PdlReachesTheParamsAndLeavesCpuResultsAlone) {
  Dense d = standard(16);
  AttentionArgs a = d.args();
  EXPECT_FALSE(make_fwd_params(a).pdl);
  a.pdl = true;
  EXPECT_TRUE(make_fwd_params(a).pdl);
  d.out.poison();
  attention_forward(d.args());
  const HostTensor plain = d.out;
  d.out.poison();
  attention_forward(a);
  ASSERT_EQ(std::memcmp(plain.data(), d.out.data(), plain.bytes()), 0);
}

// attention_counters_needed: the split counts of a call the decode kernel can run (one per KV
// head and 16-row block of packed query rows), else 1; it validates like attention_forward and
// ignores args.counters (here a host view, which attention_forward rejects).
TEST(Validation, CountersNeeded) {
  struct Expect {
    int B, Sq, Hq, Hkv;
    std::int64_t needed;
  };
  for (const Expect& e : {Expect{4, 1, 16, 4, 4 * 4},      // 4 rows a KV head: 1 block
                          Expect{3, 8, 32, 4, 3 * 4 * 4},  // 64 rows a KV head: 4 blocks
                          Expect{2, 5, 4, 4, 2 * 4},       // 5 rows: 1 block
                          Expect{2, 65, 4, 4, 1},          // 65 rows: a prefill call
                          Expect{2, 9, 16, 2, 1}}) {       // 72 rows a KV head: a prefill call
    SCOPED_TRACE("B " + std::to_string(e.B) + " Sq " + std::to_string(e.Sq) + " Hq " +
                 std::to_string(e.Hq) + " Hkv " + std::to_string(e.Hkv));
    const Dense d(DType::f16, e.B, e.Sq, 40, e.Hq, e.Hkv, 64, 40);
    HostTensor counters(DType::i32, {1});
    AttentionArgs a = d.args();
    a.counters = counters.view();
    EXPECT_EQ(attention_counters_needed(a), e.needed);
    a.precision = Precision::compensated;  // the decode kernel takes standard precision only
    EXPECT_EQ(attention_counters_needed(a), 1);
  }
  // The same error as attention_forward's for a bad call (Hq not a multiple of Hkv).
  const Dense bad(DType::f16, 2, 1, 40, 4, 3, 64, 41);
  const auto message = [](auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string expected = message([&] { attention_forward(bad.args()); });
  EXPECT_NE(expected, "no error");
  EXPECT_EQ(message([&] { attention_counters_needed(bad.args()); }), expected);
}

// check_attention_args on a valid call: no error, and nothing written (out and lse poisoned).
TEST(Validation, CheckAloneWritesNothing) {
  Dense d = standard(45);
  d.out.poison();
  d.lse.poison();
  const std::vector<std::uint64_t> out = d.out.storage, lse = d.lse.storage;
  check_attention_args(d.args());
  EXPECT_TRUE(d.out.storage == out);
  EXPECT_TRUE(d.lse.storage == lse);
}

TEST(Validation, UnsupportedDtype) {
  const Dense d = standard(20, DType::i32);
  expect_rejected(d.args(), ErrorCode::not_supported, {"q dtype int32"}, {&d.out, &d.lse});
}

TEST(Validation, MismatchedDtypes) {
  const Dense d = standard(30);
  const Dense bf = standard(31, DType::bf16);
  const Dense f32 = standard(32, DType::f32);
  AttentionArgs a = d.args();
  a.k = bf.k.view();
  expect_invalid(a, {"k dtype bfloat16", "q dtype float16"}, d);
  a = d.args();
  a.v = f32.v.view();
  expect_invalid(a, {"v dtype float32"}, d);
  a = f32.args();
  a.out = d.out.view();
  expect_rejected(a, ErrorCode::invalid_argument, {"out dtype float16", "q dtype float32"},
                  {&d.out, &f32.lse});
}

// Views marked as CUDA memory over host buffers: validation must fail before touching them.
TEST(Validation, Float32OnCudaIsNotSupported) {
  const Dense d = standard(40, DType::f32);
  AttentionArgs a = d.args();
  for (TensorView* t : {&a.q, &a.k, &a.v, &a.out, &a.lse}) t->device = Device::cuda;
  expect_rejected(a, ErrorCode::not_supported, {"float32"}, {&d.out, &d.lse});
}

TEST(Validation, ShapeMismatches) {
  const Dense d = standard(50);
  AttentionArgs a = d.args();
  a.out.shape[1] = 5;
  expect_invalid(a, {"out shape [2, 5, 4, 64]", "q shape [2, 6, 4, 64]"}, d);

  a = d.args();
  a.v.shape[1] = 9;
  expect_invalid(a, {"v shape [2, 9, 2, 64]", "k shape [2, 10, 2, 64]"}, d);

  const Dense d128(DType::f16, 2, 6, 10, 4, 2, 128, 51);
  a = d.args();
  a.k = d128.k.view();
  a.v = d128.v.view();
  expect_invalid(a, {"k head dim 128", "q head dim 64"}, d);

  const Dense b1(DType::f16, 1, 6, 10, 4, 2, 64, 52);
  a = d.args();
  a.k = b1.k.view();
  a.v = b1.v.view();
  expect_invalid(a, {"k batch 1", "q batch 2"}, d);

  a = d.args();
  a.out.rank = 3;
  expect_invalid(a, {"out has rank 3", "[B, Sq, Hq, D]"}, d);
}

// Ranks outside [0, 4] must be reported without reading past TensorView::shape.
TEST(Validation, BadRanks) {
  const Dense d = standard(55);
  AttentionArgs a = d.args();
  a.q.rank = 6;
  expect_invalid(a, {"q has rank 6 (shape [2, 6, 4, 64, ...])"}, d);

  a = d.args();
  a.v.rank = -1;
  expect_invalid(a, {"v has rank -1"}, d);

  a = d.args();
  a.lse.rank = 5;
  expect_invalid(a, {"lse shape [2, 4, 6, 0, ...]"}, d);
}

TEST(Validation, HeadsNotAMultiple) {
  const Dense d(DType::bf16, 2, 6, 10, 4, 3, 64, 60);
  expect_invalid(d.args(), {"q heads 4", "kv heads 3"}, d);
}

// Counts past int32 through stride-0 views (no memory behind them): named before any narrowing
// (they once became 0 heads or batches, and nothing was computed).
TEST(Validation, CountsPastInt32AreNamed) {
  const Dense d = standard(163);
  AttentionArgs a = d.args();
  a.q.shape[2] = a.out.shape[2] = std::int64_t{1} << 32;
  a.q.stride[2] = a.out.stride[2] = 0;
  expect_invalid(a, {"q heads 4294967296", "at most 2^31 - 1"}, d);
  a = d.args();
  a.q.shape[0] = a.out.shape[0] = a.k.shape[0] = a.v.shape[0] = std::int64_t{1} << 32;
  a.q.stride[0] = a.out.stride[0] = a.k.stride[0] = a.v.stride[0] = 0;
  expect_invalid(a, {"q batch 4294967296 exceeds 2^31 - 1"}, d);
  a = d.args();
  a.q.shape[1] = a.out.shape[1] = std::int64_t{1} << 32;
  a.q.stride[1] = a.out.stride[1] = 0;
  expect_invalid(a, {"q sequence length (Sq, q dim 1) 4294967296 exceeds 2^31 - 1"}, d);
}

TEST(Validation, ZeroAndNegativeSizes) {
  const Dense d = standard(70);
  AttentionArgs a = d.args();
  a.q.shape[1] = a.out.shape[1] = 0;
  expect_invalid(a, {"q sequence length (Sq) is 0"}, d);

  a = d.args();
  a.k.shape[1] = a.v.shape[1] = 0;
  expect_invalid(a, {"k sequence length (Sk) is 0"}, d);

  a = d.args();
  for (TensorView* t : {&a.q, &a.k, &a.v, &a.out}) t->shape[0] = 0;
  expect_invalid(a, {"batch size (q dim 0) is 0"}, d);

  a = d.args();
  a.q.shape[2] = a.out.shape[2] = 0;
  expect_invalid(a, {"q heads (Hq) is 0"}, d);

  a = d.args();
  a.k.shape[2] = a.v.shape[2] = 0;
  expect_invalid(a, {"k heads (Hkv) is 0"}, d);

  a = d.args();
  a.q.shape[1] = -6;
  expect_invalid(a, {"q has a negative size -6"}, d);
}

// Enum values cast from wrong integers are named, not read as a default (a Device of 2 was taken
// for the host, a Backend of 7 for automatic).
TEST(Validation, EnumValuesOutOfRange) {
  const Dense d = standard(75);
  AttentionArgs a = d.args();
  a.backend = static_cast<Backend>(7);
  expect_invalid(a, {"backend is 7, not a gpuattn::Backend"}, d);
  a = d.args();
  a.precision = static_cast<Precision>(2);
  expect_invalid(a, {"precision is 2, not a gpuattn::Precision"}, d);
  a = d.args();
  a.k.device = static_cast<Device>(2);
  expect_invalid(a, {"k has device value 2, not a gpuattn::Device"}, d);
  a = d.args();
  a.out.dtype = static_cast<DType>(9);
  expect_invalid(a, {"out has dtype value 9, not a gpuattn::DType"}, d);
}

TEST(Validation, BadStrides) {
  const Dense d = standard(80);
  // A buffer wide enough for the strides tried below, so that a missed check could not read past
  // it.
  HostTensor wide(DType::f16, {2, 6, 4, 2 * 64 + 8});
  wide.randomize(81);

  AttentionArgs a = d.args();
  a.q.stride[1] = -a.q.stride[1];
  expect_invalid(a, {"q has a negative stride -256"}, d);

  a = d.args();
  a.q.data = wide.data();
  a.q.stride = {6 * 4 * 136, 4 * 136, 136, 2};
  expect_invalid(a, {"q last-dimension stride is 2"}, d);

  a = d.args();
  a.k.data = wide.data();
  a.k.stride = {6 * 4 * 136, 4 * 136, 68, 1};  // 136 bytes between heads
  expect_invalid(a, {"k stride 68 of dimension 2", "16 bytes"}, d);

  a = d.args();
  a.out.data = wide.data();
  a.out.stride = {6 * 4 * 136, 4 * 136 + 4, 64, 1};  // 1096 bytes between rows
  expect_rejected(a, ErrorCode::invalid_argument, {"out stride 548 of dimension 1"},
                  {&wide, &d.lse});
}

TEST(Validation, MisalignedPointers) {
  const Dense d = standard(90);
  for (int which = 0; which < 4; ++which) {
    AttentionArgs a = d.args();
    TensorView& t = which == 0 ? a.q : which == 1 ? a.k : which == 2 ? a.v : a.out;
    t.data = static_cast<char*>(t.data) + 2;
    const char* name[] = {"q", "k", "v", "out"};
    expect_invalid(a, {std::string(name[which]) + " pointer", "not 16-byte aligned"}, d);
  }
  AttentionArgs a = d.args();
  a.lse.data = static_cast<char*>(a.lse.data) + 2;
  expect_invalid(a, {"lse pointer 0x", "is not 4-byte aligned"}, d);
}

// out and lse may not write what the call reads (q, k, v), each other, or an element twice; out
// may be q itself (the same view: in place), which gives the out-of-place result.
TEST(Validation, WrittenViewsDoNotOverlap) {
  const Dense d(DType::f16, 2, 6, 6, 4, 4, 64, 130);  // out, q, k and v of one size
  AttentionArgs a = d.args();
  a.out.data = a.v.data;
  expect_invalid(a, {"out (at 0x", "overlaps v (at 0x", "the call reads v while it writes out"}, d);
  a = d.args();
  a.out.data = static_cast<char*>(a.q.data) + 64 * 2 * 4;  // q shifted by a row: not in place
  expect_invalid(a, {"out (at 0x", "overlaps q", "out may be q itself"}, d);
  a = d.args();
  a.lse.data = a.k.data;
  expect_invalid(a, {"lse (at 0x", "overlaps k"}, d);
  a = d.args();
  a.lse.data = a.out.data;
  expect_invalid(a, {"lse (at 0x", "overlaps out"}, d);
  a = d.args();
  a.out.stride[2] = 0;  // every head's rows on head 0's
  expect_invalid(a, {"out (at 0x", "strides [1536, 256, 0, 1]", "share an address"}, d);
  a = d.args();
  a.lse.stride[0] = 1;  // batch 1 inside batch 0's heads
  expect_invalid(a, {"lse (at 0x", "share an address"}, d);
  // Nor what else the call reads: a block layout inside out (rewritten by the first rows, then
  // read for the next: wrong rows), seqused_k inside lse (read back as a float's bits).
  a = d.args();
  a.mask.block_sparse = {TensorView::contiguous(a.out.data, DType::u8, Device::cpu, {1, 1, 1}), 16,
                         16};
  expect_invalid(a, {"out (at 0x", "overlaps mask.block_sparse.layout (at 0x"}, d);
  Dense e(DType::f16, 2, 6, 6, 4, 4, 64, 131);
  const std::int32_t used[2] = {6, 5};
  std::memcpy(e.lse.data(), used, sizeof used);
  a = e.args();
  a.seqused_k = TensorView::contiguous(a.lse.data, DType::i32, Device::cpu, {2});
  expect_invalid(a, {"lse (at 0x", "overlaps seqused_k (at 0x"}, e);

  // In place: q's memory gets the output the out-of-place call gives.
  Dense twin(DType::f16, 2, 6, 6, 4, 4, 64, 130);  // the same inputs
  attention_forward(d.args());
  AttentionArgs in_place = twin.args();
  in_place.out = in_place.q;
  attention_forward(in_place);
  EXPECT_EQ(std::memcmp(twin.q.data(), d.out.data(), d.out.bytes()), 0)
      << "in place differs from out of place";
}

// q, k, v and out as four slices of one packed buffer [B, S, 4, H, D]: their spans overlap but
// no element is shared, so the call runs (it was refused by the span test) and gives the result
// of separate tensors; out shifted by 8 elements into q's slot is refused.
TEST(Validation, OutBesideQkvInOnePackedBuffer) {
  constexpr int B = 2, S = 37, H = 4, D = 64;
  HostTensor packed(DType::f16, {B, S, 4, H, D});
  packed.randomize(140);
  const auto slot = [&](int i, std::int64_t shift = 0) {
    TensorView t =
        TensorView::contiguous(static_cast<std::uint16_t*>(packed.data()) + i * H * D + shift,
                               DType::f16, Device::cpu, {B, S, H, D});
    t.stride = {std::int64_t{S} * 4 * H * D, 4 * H * D, D, 1};
    return t;
  };
  HostTensor q(DType::f16, {B, S, H, D}), k(DType::f16, {B, S, H, D}), v(DType::f16, {B, S, H, D}),
      out(DType::f16, {B, S, H, D});
  for (std::int64_t b = 0; b < B * S; ++b) {  // the separate copies of the three inputs
    for (int e = 0; e < H * D; ++e) {
      q.set(b * H * D + e, packed.get(b * 4 * H * D + e));
      k.set(b * H * D + e, packed.get(b * 4 * H * D + H * D + e));
      v.set(b * H * D + e, packed.get(b * 4 * H * D + 2 * H * D + e));
    }
  }
  AttentionArgs sep = tensor_args(q, k, v, out);
  sep.causal = true;
  attention_forward(sep);

  AttentionArgs a;
  a.q = slot(0);
  a.k = slot(1);
  a.v = slot(2);
  a.out = slot(3);
  a.causal = true;
  attention_forward(a);
  for (std::int64_t b = 0; b < B * S; ++b) {
    for (int e = 0; e < H * D; ++e) {
      ASSERT_EQ(packed.get(b * 4 * H * D + 3 * H * D + e), out.get(b * H * D + e))
          << "row " << b << " element " << e;
      ASSERT_EQ(packed.get(b * 4 * H * D + e), q.get(b * H * D + e)) << "q was written";
    }
  }
  a.out = slot(0, 8);
  expect_rejected(a, ErrorCode::invalid_argument, {"out (at 0x", "overlaps q"}, {&packed});
  a.out = slot(2, 8);
  expect_rejected(a, ErrorCode::invalid_argument, {"out (at 0x", "overlaps v"}, {&packed});
}

// views_share_bytes against the bytes themselves, on random small views: never "no" where a byte
// is shared (a missed overlap would let a call corrupt its own inputs), and exact for pairs of one
// shape and nested strides (the case it decides exactly), with negative strides and sizes 1.
TEST(Validation, ViewsShareBytesAgainstBruteForce) {
  std::mt19937_64 rng(20261202);
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  alignas(16) static unsigned char buffer[1 << 16];
  const auto bytes_of = [](const TensorView& t) {
    std::set<std::intptr_t> out;
    const auto es = static_cast<std::intptr_t>(element_size(t.dtype));
    std::array<std::int64_t, TensorView::kMaxRank> idx{};
    while (true) {
      std::intptr_t off = reinterpret_cast<std::intptr_t>(t.data);
      for (int i = 0; i < t.rank; ++i) off += static_cast<std::intptr_t>(idx[i] * t.stride[i]) * es;
      for (std::intptr_t b = 0; b < es; ++b) out.insert(off + b);
      int d = t.rank - 1;
      while (d >= 0 && ++idx[d] == t.shape[d]) idx[d--] = 0;
      if (d < 0) return out;
    }
  };
  int exact_cases = 0, shared_exact = 0;
  for (int it = 0; it < 20000; ++it) {
    const DType dt = pick(0, 1) ? DType::f16 : DType::f32;
    const int rank = pick(1, 4);
    TensorView a;
    a.dtype = dt;
    a.rank = rank;
    const bool nested = pick(0, 3) != 0;
    // Nested strides: a random order of the dimensions, each stride the span below it plus a gap.
    std::vector<int> order(rank);
    for (int i = 0; i < rank; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    std::int64_t extent = 1;
    for (int i : order) {
      a.shape[i] = pick(1, 4);
      const std::int64_t stride = nested ? extent + pick(0, 3) : pick(0, 12);
      a.stride[i] = pick(0, 4) == 0 ? -stride : stride;
      extent = std::abs(a.stride[i]) * (a.shape[i] - 1) + extent;
    }
    TensorView b = a;
    if (pick(0, 4) == 0) {  // sometimes another shape or strides: the span test decides
      const int i = pick(0, rank - 1);
      b.stride[i] += pick(1, 3);
    }
    const std::int64_t es = static_cast<std::int64_t>(element_size(dt));
    // Bases in the middle of the buffer (negative strides reach below them).
    a.data = buffer + 8192 + es * pick(0, 200);
    b.data = buffer + 8192 + es * pick(0, 200) + (pick(0, 3) == 0 ? pick(0, 3) : 0);
    const std::set<std::intptr_t> x = bytes_of(a), y = bytes_of(b);
    const bool shared =
        std::any_of(x.begin(), x.end(), [&](std::intptr_t v) { return y.count(v); });
    const bool said = views_share_bytes(a, b);
    ASSERT_TRUE(said || !shared) << "missed a shared byte at iteration " << it;
    if (nested && b.stride == a.stride) {
      ++exact_cases;
      shared_exact += shared ? 1 : 0;
      ASSERT_EQ(said, shared) << "not exact at iteration " << it;
    }
  }
  EXPECT_GT(exact_cases, 5000);
  EXPECT_GT(shared_exact, 500);
  EXPECT_LT(shared_exact, exact_cases - 500);
}

TEST(Validation, NullPointers) {
  const Dense d = standard(100);
  const char* names[] = {"q", "k", "v", "out", "lse"};
  for (int which = 0; which < 5; ++which) {
    AttentionArgs a = d.args();
    TensorView* t[] = {&a.q, &a.k, &a.v, &a.out, &a.lse};
    t[which]->data = nullptr;  // rank and shape stay: a present tensor without memory
    expect_invalid(a, {std::string(names[which]) + " is a null pointer"}, d);
  }
}

TEST(Validation, HostDeviceMix) {
  const Dense d = standard(110);
  AttentionArgs a = d.args();
  a.k.device = Device::cuda;
  expect_invalid(a, {"k is on cuda:0", "q is on cpu:0", "host/device mix"}, d);

  a = d.args();
  a.lse.device = Device::cuda;
  expect_invalid(a, {"lse is on cuda:0"}, d);

  a = d.args();  // all on CUDA, but out on another device
  for (TensorView* t : {&a.q, &a.k, &a.v, &a.out, &a.lse}) t->device = Device::cuda;
  a.out.device_index = 1;
  expect_invalid(a, {"out is on cuda:1", "q is on cuda:0"}, d);
}

TEST(Validation, BackendDoesNotMatchDevice) {
  const Dense d = standard(120);
  AttentionArgs a = d.args();
  a.backend = Backend::cuda;
  expect_invalid(a, {"backend cuda", "host"}, d);

  a = d.args();
  for (TensorView* t : {&a.q, &a.k, &a.v, &a.out, &a.lse}) t->device = Device::cuda;
  a.backend = Backend::cpu;
  expect_invalid(a, {"backend cpu", "cuda:0"}, d);
}

TEST(Validation, BadLse) {
  const Dense d = standard(130);
  AttentionArgs a = d.args();
  a.lse.shape = {2, 6, 4};  // [B, Sq, Hq] instead of [B, Hq, Sq]
  expect_invalid(a, {"lse shape [2, 6, 4]", "[2, 4, 6]"}, d);

  a = d.args();
  a.lse.rank = 2;
  expect_invalid(a, {"lse shape [2, 4]"}, d);

  HostTensor lse16(DType::f16, {2, 4, 6});
  lse16.randomize(132);
  a = d.args();
  a.lse = lse16.view();
  expect_rejected(a, ErrorCode::invalid_argument, {"lse dtype float16"}, {&d.out, &lse16});

  a = d.args();
  a.lse.stride[2] = -1;
  expect_invalid(a, {"lse has a negative stride -1"}, d);
}

TEST(Validation, NonFiniteScaleAndNegativeThreads) {
  const Dense d = standard(140);
  AttentionArgs a = d.args();
  a.softmax_scale = std::numeric_limits<float>::quiet_NaN();
  expect_invalid(a, {"softmax_scale nan"}, d);
  a.softmax_scale = std::numeric_limits<float>::infinity();
  expect_invalid(a, {"softmax_scale inf"}, d);
  a.softmax_scale = -std::numeric_limits<float>::infinity();
  expect_invalid(a, {"softmax_scale -inf"}, d);

  a.softmax_scale = 0.f;
  expect_invalid(a, {"softmax_scale 0", "positive"}, d);
  a.softmax_scale = -0.125f;
  expect_invalid(a, {"softmax_scale -0.125", "positive"}, d);
  a.softmax_scale = 3e38f;  // x log2(e) is past float: NaN everywhere
  expect_invalid(a, {"softmax_scale 3.00000001e+38", "at most 2.36e38"}, d);
  a.softmax_scale = 2.3e38f;  // still finite in base 2
  EXPECT_NO_THROW(check_attention_args(a));

  a = d.args();
  a.num_threads = -1;
  expect_invalid(a, {"num_threads -1"}, d);
}

TEST(Validation, RowStrideBeyondKernelLimit) {
  const Dense d = standard(150);
  AttentionArgs a = d.args();
  // Only the stride is checked: with Sq = 6 rows this view would need 2^25 elements, but the
  // call must fail before anything is read.
  a.q.stride[1] = (std::int64_t{1} << 23) + 8;
  a.q.stride[0] = a.q.stride[1] * 6;
  expect_invalid(a, {"q sequence (row) stride 8388616", "8388608"}, d);
}

// A row dim of one row never steps: its stride may be past the limit (2^40 here, as torch may give
// a size-1 dim), the call runs, and the params carry 0 for it. Two rows at that stride are refused.
TEST(Validation, OneRowDimTakesAnyStride) {
  const std::int64_t far = std::int64_t{1} << 40;
  Dense one(DType::f16, 2, 1, 1, 4, 2, 64, 152);  // Sq = Sk = 1
  AttentionArgs a = one.args();
  a.q.stride[1] = a.k.stride[1] = a.v.stride[1] = a.out.stride[1] = far;
  const FwdParams p = make_fwd_params(a);
  EXPECT_EQ(p.q_row_stride, 0);
  EXPECT_EQ(p.k_row_stride, 0);
  EXPECT_EQ(p.v_row_stride, 0);
  EXPECT_EQ(p.o_row_stride, 0);
  EXPECT_TRUE(strides_fit_tma(p));
  one.out.poison();
  attention_forward(a);
  const HostTensor far_out = one.out;
  one.out.poison();
  attention_forward(one.args());
  EXPECT_EQ(std::memcmp(far_out.data(), one.out.data(), one.out.bytes()), 0);

  // Varlen: one key row in all (dim 0 of k and v), query rows at their own stride.
  HostTensor q(DType::f16, {3, 4, 64}), k(DType::f16, {1, 2, 64}), o(DType::f16, {3, 4, 64});
  q.randomize(153);
  k.randomize(154);
  const HostTensor cu_q = make_cu_seqlens({3}), cu_k = make_cu_seqlens({1});
  AttentionArgs v = tensor_args(q, k, k, o);
  v.cu_seqlens_q = cu_q.view();
  v.cu_seqlens_k = cu_k.view();
  v.max_seqlen_q = 3;
  v.max_seqlen_k = 1;
  v.k.stride[0] = v.v.stride[0] = far;
  const FwdParams pv = make_fwd_params(v);
  EXPECT_EQ(pv.k_row_stride, 0);
  EXPECT_EQ(pv.q_row_stride, 4 * 64);
  o.poison();
  attention_forward(v);
  const HostTensor far_varlen = o;
  v.k.stride[0] = v.v.stride[0] = 2 * 64;
  o.poison();
  attention_forward(v);
  EXPECT_EQ(std::memcmp(far_varlen.data(), o.data(), o.bytes()), 0);

  const Dense d = standard(155);
  AttentionArgs two = d.args();
  two.k.stride[1] = far;
  two.k.stride[0] = far * 10;
  expect_invalid(two, {"k sequence (row) stride 1099511627776", "8388608"}, d);
}

TEST(Validation, MaxSeqlenOnDenseCall) {
  const Dense d = standard(150);
  AttentionArgs a = d.args();
  a.max_seqlen_q = 5;
  expect_invalid(a, {"max_seqlen_q/k", "varlen", "5/0"}, d);
}

// ---- masks (sliding window, global tokens) ------------------------------------------------------

TEST(Validation, BadMaskValues) {
  const Dense d = standard(160);
  AttentionArgs a = d.args();
  a.mask.window_left = -2;
  expect_invalid(a, {"mask.window_left -2", "-1 for unbounded"}, d);
  a = d.args();
  a.mask.window_right = -7;
  a.mask.window_left = 3;
  expect_invalid(a, {"mask.window_right -7"}, d);
  a = d.args();
  a.mask.window_left = INT_MIN;
  expect_invalid(a, {"mask.window_left " + std::to_string(INT_MIN)}, d);
  a = d.args();
  a.mask.global_tokens = -1;
  expect_invalid(a, {"mask.global_tokens -1", "negative"}, d);
  a = d.args();
  a.mask.global_stride = -3;
  expect_invalid(a, {"mask.global_stride -3", "negative"}, d);
}

TEST(Validation, EdgeMasksAreValid) {
  struct M {
    int wl, wr, g, s;
    bool causal;
  };
  for (const M m :
       {M{0, 0, 0, 0, false}, M{-1, 0, 0, 0, true}, M{0, -1, 0, 0, false},
        M{INT_MAX, INT_MAX, 0, 0, false}, M{2, 1, 100, 0, true}, M{1, 1, INT_MAX, INT_MAX, false},
        M{-1, -1, 3, 2, false}, M{0, 0, 0, 1, true}}) {
    Dense d = standard(161);
    d.out.poison();
    d.lse.poison();
    AttentionArgs a = d.args();
    a.mask = {m.wl, m.wr, m.g, m.s};
    a.causal = m.causal;
    SCOPED_TRACE(std::to_string(m.wl) + " " + std::to_string(m.wr) + " " + std::to_string(m.g) +
                 " " + std::to_string(m.s));
    EXPECT_NO_THROW(attention_forward(a));
    EXPECT_FALSE(std::isnan(d.out.get(d.out.numel() - 1)));
    EXPECT_FALSE(std::isnan(d.lse.get(d.lse.numel() - 1)));
  }
}

// Positions are ints inside the mask: Sq + Sk must fit. Only the shapes are set: the call must fail
// before anything is read.
TEST(Validation, MaskedLengthsOverflow) {
  const Dense d = standard(162);
  AttentionArgs a = d.args();
  a.mask.window_left = 128;
  a.q.shape[1] = a.out.shape[1] = 1500000000;
  a.k.shape[1] = a.v.shape[1] = 1000000000;
  expect_invalid(a, {"Sq + Sk = 2500000000"}, d);
}

// Views marked as CUDA memory over host buffers: a window or global tokens no longer stop a CUDA
// call, which fails on the memory instead (a build without CUDA refuses every CUDA call), before
// it touches any of it.
TEST(Validation, MaskOnCudaReachesTheDeviceChecks) {
  const Dense d = standard(163);
  for (int which = 0; which < 3; ++which) {
    AttentionArgs a = d.args();
    for (TensorView* t : {&a.q, &a.k, &a.v, &a.out, &a.lse}) t->device = Device::cuda;
    if (which == 0) a.mask.window_left = 4;
    if (which == 1) a.mask.global_tokens = 2;
    if (which == 2) a.mask.global_stride = 16;
    std::vector<std::uint64_t> out = d.out.storage, lse = d.lse.storage;
    try {
      attention_forward(a);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.find("mask"), std::string::npos) << msg;
      if (msg.find("no CUDA backend") != std::string::npos) {
        EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(ErrorCode::not_supported)) << msg;
      } else {  // no device visible, or host memory marked cuda
        EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(ErrorCode::invalid_argument)) << msg;
        EXPECT_NE(msg.find("cuda"), std::string::npos) << msg;
      }
    }
    EXPECT_TRUE(d.out.storage == out);
    EXPECT_TRUE(d.lse.storage == lse);
  }
}

// CUDA calls within the launch limits (views marked cuda over host buffers; validation touches no
// memory): sequences up to 2^30 tokens, Hq and batch up to 65535, 2^30 row blocks of 64.
TEST(Validation, CudaLaunchLimits) {
  const Dense d = standard(164);
  auto cuda_args = [&] {
    AttentionArgs a = d.args();
    for (TensorView* t : {&a.q, &a.k, &a.v, &a.out, &a.lse}) t->device = Device::cuda;
    a.lse = TensorView{};
    return a;
  };
  AttentionArgs a = cuda_args();
  a.q.shape[1] = a.out.shape[1] = (1 << 30) + 1;
  expect_invalid(a, {"Sq 1073741825", "exceeds 2^30"}, d);

  a = cuda_args();
  for (TensorView* t : {&a.q, &a.k, &a.v, &a.out}) t->shape[0] = 70000;
  expect_invalid(a, {"batch 70000 exceeds 65535"}, d);

  a = cuda_args();  // Hq 70000 (Hkv 2), strides that keep the views apart
  for (TensorView* t : {&a.q, &a.out}) {
    t->shape[2] = 70000;
    t->stride[1] = 70000 * 64;
    t->stride[0] = t->shape[1] * t->stride[1];
  }
  expect_invalid(a, {"Hq 70000 exceeds 65535"}, d);

  a = cuda_args();  // 2^25 rows of 64 x 4 heads x 1024 batch entries: 2^37 row blocks
  for (TensorView* t : {&a.q, &a.k, &a.v, &a.out}) {
    t->shape[0] = 1024;
    t->shape[1] = 1 << 25;
    t->stride[0] = t->shape[1] * t->stride[1];
  }
  expect_invalid(a, {"row blocks exceeds 2^30", "Hq 4", "batch 1024"}, d);
}

// ---- varlen -------------------------------------------------------------------------------------

// q/out [12, 4, 64] in sequences {3, 5, 4}; k/v [12, 2, 64] in sequences {4, 6, 2}.
struct Varlen {
  HostTensor q, k, v, out, lse, cu_q, cu_k;
  explicit Varlen(std::uint64_t seed)
      : q(DType::bf16, {12, 4, 64}),
        k(DType::bf16, {12, 2, 64}),
        v(DType::bf16, {12, 2, 64}),
        out(DType::bf16, {12, 4, 64}),
        lse(DType::f32, {4, 12}),
        cu_q(make_cu_seqlens({3, 5, 4})),
        cu_k(make_cu_seqlens({4, 6, 2})) {
    q.randomize(seed);
    k.randomize(seed + 1);
    v.randomize(seed + 2);
    out.randomize(seed + 3);
    lse.randomize(seed + 4);
  }
  AttentionArgs args() const {
    AttentionArgs a = tensor_args(q, k, v, out, &lse);
    a.cu_seqlens_q = cu_q.view();
    a.cu_seqlens_k = cu_k.view();
    a.max_seqlen_q = 5;
    a.max_seqlen_k = 6;
    return a;
  }
  std::int32_t* cu(HostTensor& t) { return static_cast<std::int32_t*>(t.data()); }
  void expect_invalid(const AttentionArgs& a, std::initializer_list<std::string> needles) const {
    expect_rejected(a, ErrorCode::invalid_argument, needles, {&out, &lse});
  }
};

TEST(ValidationVarlen, ValidProblemIsValid) {
  Varlen d(200);
  d.out.poison();
  d.lse.poison();
  EXPECT_NO_THROW(attention_forward(d.args()));
  EXPECT_FALSE(std::isnan(d.out.get(d.out.numel() - 1)));
}

TEST(ValidationVarlen, OnlyOneCuSeqlens) {
  const Varlen d(210);
  AttentionArgs a = d.args();
  a.cu_seqlens_k = TensorView{};
  d.expect_invalid(a, {"cu_seqlens_q is given but cu_seqlens_k is missing"});
  a = d.args();
  a.cu_seqlens_q = TensorView{};
  d.expect_invalid(a, {"cu_seqlens_k is given but cu_seqlens_q is missing"});
  // On a dense call (q of rank 4) a stray cu_seqlens_k is named, not q's rank.
  {
    const Dense dense = standard(164);
    AttentionArgs b = dense.args();
    b.cu_seqlens_k = a.cu_seqlens_k;
    expect_invalid(b, {"cu_seqlens_k is given but cu_seqlens_q is missing"}, dense);
  }
}

TEST(ValidationVarlen, CuSeqlensDtypeRankDeviceCount) {
  const Varlen d(220);
  HostTensor f(DType::f32, {4});
  f.randomize(221);
  AttentionArgs a = d.args();
  a.cu_seqlens_q = f.view();
  d.expect_invalid(a, {"cu_seqlens_q has dtype float32", "int32"});

  a = d.args();
  a.cu_seqlens_k.rank = 2;
  a.cu_seqlens_k.shape = {2, 2};
  a.cu_seqlens_k.stride = {2, 1};
  d.expect_invalid(a, {"cu_seqlens_k has rank 2"});

  a = d.args();
  a.cu_seqlens_q.device = Device::cuda;
  d.expect_invalid(a, {"cu_seqlens_q is on cuda:0", "q is on cpu:0"});

  a = d.args();
  a.cu_seqlens_k.shape[0] = 3;
  d.expect_invalid(a, {"cu_seqlens_q has 4 entries", "cu_seqlens_k has 3"});

  a = d.args();
  a.cu_seqlens_q.data = nullptr;
  d.expect_invalid(a, {"cu_seqlens_q is a null pointer"});
}

TEST(ValidationVarlen, CuSeqlensContents) {
  {
    Varlen d(230);
    d.cu(d.cu_q)[0] = 1;
    d.expect_invalid(d.args(), {"cu_seqlens_q[0] is 1"});
  }
  {
    Varlen d(231);
    d.cu(d.cu_k)[2] = 3;  // {0, 4, 3, 12}
    d.expect_invalid(d.args(),
                     {"cu_seqlens_k decreases at index 2", "negative sequence length -1"});
  }
  {
    Varlen d(232);
    AttentionArgs a = d.args();
    a.max_seqlen_q = 4;  // sequence 1 has 5 rows
    d.expect_invalid(a, {"sequence 1 length 5 > max_seqlen 4"});
  }
  {
    Varlen d(233);
    d.cu(d.cu_q)[3] = 11;  // the packed q has 12 rows
    d.expect_invalid(d.args(), {"cu_seqlens_q[3] is 11", "12 rows"});
  }
  {
    const Varlen d(234);
    AttentionArgs a = d.args();
    a.max_seqlen_q = 0;
    d.expect_invalid(a, {"max_seqlen_q is 0"});
    a = d.args();
    a.max_seqlen_k = -1;
    d.expect_invalid(a, {"max_seqlen_k is -1"});
  }
}

TEST(ValidationVarlen, LayoutErrors) {
  const Varlen d(240);
  AttentionArgs a = d.args();
  a.lse.shape = {12, 4};  // [total_q, Hq] instead of [Hq, total_q]
  a.lse.stride = {4, 1};
  d.expect_invalid(a, {"lse shape [12, 4]", "[4, 12]"});

  const Dense dense = standard(241, DType::bf16);
  a = d.args();
  a.q = dense.q.view();
  d.expect_invalid(a, {"q has rank 4", "[total_q, Hq, D]"});
}

// The reference validates through the same function.
TEST(Validation, ReferenceRejectsTheSameInputs) {
  const Dense d(DType::f16, 2, 6, 10, 4, 2, 96, 300);
  EXPECT_THROW(reference_attention(d.args()), Error);
  const Dense ok = standard(301);
  AttentionArgs a = ok.args();
  a.q.device = a.k.device = a.v.device = a.out.device = a.lse.device = Device::cuda;
  EXPECT_THROW(reference_attention(a), Error);  // device tensors
}

// ---- block-sparse layouts -----------------------------------------------------------------------

// A uint8 layout [h, nq, nk], every block on.
HostTensor all_on_layout(std::int64_t h, std::int64_t nq, std::int64_t nk) {
  HostTensor t(DType::u8, {h, nq, nk});
  std::memset(t.data(), 1, t.bytes());
  return t;
}

// Dense problem with Sq 130, Sk 300, Hq 4, Hkv 2: blocks of 64 give a [4 or 1, 3, 5] layout.
Dense block_problem(std::uint64_t seed) {
  return Dense(DType::f16, 2, 130, 300, 4, 2, 64, seed);
}

AttentionArgs with_layout(const Dense& d, const HostTensor& layout, int bq = 64, int bk = 64) {
  AttentionArgs a = d.args();
  a.mask.block_sparse.layout = layout.view();
  a.mask.block_sparse.block_q = bq;
  a.mask.block_sparse.block_k = bk;
  return a;
}

TEST(ValidationBlockSparse, ValidLayouts) {
  Dense d = block_problem(400);
  const HostTensor per_head = all_on_layout(4, 3, 5), shared = all_on_layout(1, 3, 5);
  const HostTensor big_blocks = all_on_layout(1, 1, 1);  // blocks longer than the sequence
  const HostTensor blocks_16x128 = all_on_layout(4, 9, 3);
  for (const AttentionArgs& a :
       {with_layout(d, per_head), with_layout(d, shared), with_layout(d, big_blocks, 1024, 4096),
        with_layout(d, blocks_16x128, 16, 128)}) {
    d.out.poison();
    d.lse.poison();
    EXPECT_NO_THROW(attention_forward(a));
    EXPECT_FALSE(std::isnan(d.out.get(d.out.numel() - 1)));
  }
  // A strided view: every other block column of a [4, 3, 10] buffer.
  const HostTensor wide = all_on_layout(4, 3, 10);
  AttentionArgs a = with_layout(d, wide);
  a.mask.block_sparse.layout.shape = {4, 3, 5};
  a.mask.block_sparse.layout.stride = {30, 10, 2};
  EXPECT_NO_THROW(attention_forward(a));
  EXPECT_EQ(std::string(to_string(DType::u8)), "uint8");
  EXPECT_EQ(element_size(DType::u8), 1u);
}

TEST(ValidationBlockSparse, WrongDtypeRankShape) {
  const Dense d = block_problem(401);
  HostTensor f16(DType::f16, {4, 3, 5});
  expect_invalid(with_layout(d, f16), {"mask.block_sparse.layout", "dtype float16", "uint8"}, d);
  const HostTensor rank2 = [] {
    HostTensor t(DType::u8, {3, 5});
    return t;
  }();
  expect_invalid(with_layout(d, rank2), {"mask.block_sparse.layout has rank 2", "[3, 5]", "rank 3"},
                 d);
  // Each dimension wrong in turn: the message names both shapes and the lengths behind them.
  for (const std::vector<std::int64_t>& shape :
       {std::vector<std::int64_t>{2, 3, 5}, {4, 2, 5}, {4, 3, 4}, {1, 3, 6}, {8, 3, 5}}) {
    const HostTensor l = all_on_layout(shape[0], shape[1], shape[2]);
    const std::string got = "[" + std::to_string(shape[0]) + ", " + std::to_string(shape[1]) +
                            ", " + std::to_string(shape[2]) + "]";
    expect_invalid(with_layout(d, l),
                   {"layout shape " + got, "[4 or 1, 3, 5]", "Sq 130", "Sk 300", "block_q 64"}, d);
  }
  // Blocks of 128: the expected shape follows the block size.
  const HostTensor l = all_on_layout(4, 3, 5);
  expect_invalid(with_layout(d, l, 128, 128), {"[4 or 1, 2, 3]"}, d);
}

TEST(ValidationBlockSparse, BadBlockSizes) {
  const Dense d = block_problem(402);
  const HostTensor l = all_on_layout(4, 3, 5);
  expect_invalid(with_layout(d, l, 0, 64), {"mask.block_sparse.block_q is 0", "positive"}, d);
  expect_invalid(with_layout(d, l, 64, -64), {"mask.block_sparse.block_k is -64", "positive"}, d);
  for (auto [bq, bk, name] : {std::tuple{40, 64, "block_q 40"}, std::tuple{64, 8, "block_k 8"},
                              std::tuple{1, 64, "block_q 1"}}) {
    expect_rejected(with_layout(d, l, bq, bk), ErrorCode::not_supported,
                    {name, "not a multiple of 16"}, {&d.out, &d.lse});
  }
  // Block sizes without a layout.
  AttentionArgs a = d.args();
  a.mask.block_sparse.block_q = 64;
  expect_invalid(a, {"block_q/block_k are 64/0", "layout is absent"}, d);
}

TEST(ValidationBlockSparse, NullPointerNegativeStrideAndDevice) {
  const Dense d = block_problem(403);
  const HostTensor l = all_on_layout(4, 3, 5);
  AttentionArgs a = with_layout(d, l);
  a.mask.block_sparse.layout.data = nullptr;
  expect_invalid(a, {"mask.block_sparse.layout is a null pointer"}, d);
  a = with_layout(d, l);
  a.mask.block_sparse.layout.stride[2] = -1;
  expect_invalid(a, {"mask.block_sparse.layout has a negative stride -1"}, d);
  a = with_layout(d, l);
  a.mask.block_sparse.layout.device = Device::cuda;
  expect_invalid(a, {"mask.block_sparse.layout is on cuda:0", "q is on cpu", "host/device mix"}, d);
  // On the device of q, but another device index.
  a = with_layout(d, l);
  for (TensorView* t : {&a.q, &a.k, &a.v, &a.out, &a.lse, &a.mask.block_sparse.layout}) {
    t->device = Device::cuda;
  }
  a.mask.block_sparse.layout.device_index = 1;
  expect_invalid(a, {"mask.block_sparse.layout is on cuda:1", "q is on cuda:0"}, d);
}

TEST(ValidationBlockSparse, VarlenShapeFollowsMaxSeqlen) {
  Varlen d(404);  // max_seqlen_q 5, max_seqlen_k 6, Hq 4
  const HostTensor ok = all_on_layout(1, 1, 1);
  AttentionArgs a = d.args();
  a.mask.block_sparse = {ok.view(), 16, 16};
  d.out.poison();
  EXPECT_NO_THROW(attention_forward(a));
  EXPECT_FALSE(std::isnan(d.out.get(0)));
  const HostTensor bad = all_on_layout(4, 1, 2);
  a.mask.block_sparse.layout = bad.view();
  d.expect_invalid(a, {"[4, 1, 2]", "ceil(max_seqlen_q / block_q)", "[4 or 1, 1, 1]",
                       "max_seqlen_q 5", "max_seqlen_k 6"});
}

// Views marked as CUDA memory over host buffers, a block layout among them: refused before any
// memory is touched (a build without CUDA, no visible device, or host memory behind a cuda view).
TEST(ValidationBlockSparse, CudaViewsOverHostBuffersRefused) {
  const Dense d = block_problem(405);
  const HostTensor l = all_on_layout(1, 3, 5);
  AttentionArgs a = with_layout(d, l);
  for (TensorView* t : {&a.q, &a.k, &a.v, &a.out, &a.lse, &a.mask.block_sparse.layout}) {
    t->device = Device::cuda;
  }
  std::vector<std::uint64_t> out = d.out.storage, lse = d.lse.storage;
  try {
    attention_forward(a);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(msg.find("no CUDA backend") != std::string::npos ||
                msg.find("CUDA device(s) are visible") != std::string::npos ||
                msg.find("is host memory") != std::string::npos)
        << msg;
  }
  EXPECT_TRUE(d.out.storage == out);
  EXPECT_TRUE(d.lse.storage == lse);
}

}  // namespace
}  // namespace gpuattn
