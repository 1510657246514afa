// AttentionArgs::seqused_k on CUDA: decode calls (decode_16x64, whatever GPUATTN_KERNEL names)
// against the fp64 reference on fresh random inputs with outputs poisoned first: lengths from 0 to
// the whole cache, causal rows that see no key, split keys of sequences much shorter than the
// longest; the other calls (more rows, a window, compensated precision) on the sm_80 kernel; every
// bad length is an error that names it, with out untouched. The same with leftpad_k (keys from
// leftpad_k[b] on): the decode kernels in place, the sm_80 kernel for the rest. (tests/cpu/
// test_seqused_k.cpp shows the reference's reading of seqused_k and leftpad_k equals a call on
// the cut cache.)
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "core/fwd_params.h"
#include "core/tile_config.h"
#include "cuda/cuda_attention.h"
#include "cuda/cuda_test_util.h"
#include "gpuattn/attention.h"
#include "gpuattn/reference.h"

namespace gpuattn::testing {
namespace {

struct UsedCase {
  int B, Hq, Hkv, Sq, Sk, D;
  DType t;
  bool causal;
  std::vector<int> used;  // empty: no seqused_k
  std::vector<int> pad = {};  // empty: no leftpad_k
};

// Host and device copies of one call's tensors.
struct UsedProblem {
  HostTensor q, k, v, out, lse, used, pad;
  DeviceBuffer dq, dk, dv, dout, dlse, dused, dpad;
  bool has_used, has_pad;

  explicit UsedProblem(const UsedCase& c, std::uint64_t seed)
      : q(c.t, {c.B, c.Sq, c.Hq, c.D}),
        k(c.t, {c.B, c.Sk, c.Hkv, c.D}),
        v(c.t, {c.B, c.Sk, c.Hkv, c.D}),
        out(c.t, {c.B, c.Sq, c.Hq, c.D}),
        lse(DType::f32, {c.B, c.Hq, c.Sq}),
        used(DType::i32, {c.B}),
        pad(DType::i32, {c.B}),
        has_used(!c.used.empty()),
        has_pad(!c.pad.empty()) {
    q.randomize(seed);
    k.randomize(seed + 1);
    v.randomize(seed + 2);
    for (int b = 0; b < c.B; ++b) {
      static_cast<std::int32_t*>(used.data())[b] = has_used ? c.used[b] : 0;
      static_cast<std::int32_t*>(pad.data())[b] = has_pad ? c.pad[b] : 0;
    }
    dq = DeviceBuffer(q.bytes());
    dk = DeviceBuffer(k.bytes());
    dv = DeviceBuffer(v.bytes());
    dout = DeviceBuffer(out.bytes());
    dlse = DeviceBuffer(lse.bytes());
    dused = DeviceBuffer(used.bytes());
    dpad = DeviceBuffer(pad.bytes());
    dq.upload(q.data());
    dk.upload(k.data());
    dv.upload(v.data());
    dused.upload(used.data());
    dpad.upload(pad.data());
  }
  void poison() {
    out.poison();
    lse.poison();
    dout.upload(out.data());
    dlse.upload(lse.data());
  }
  AttentionArgs device_args(bool causal) const {
    AttentionArgs a;
    a.q = q.view(Device::cuda, dq.get());
    a.k = k.view(Device::cuda, dk.get());
    a.v = v.view(Device::cuda, dv.get());
    a.out = out.view(Device::cuda, dout.get());
    a.lse = lse.view(Device::cuda, dlse.get());
    if (has_used) a.seqused_k = used.view(Device::cuda, dused.get());
    if (has_pad) a.leftpad_k = pad.view(Device::cuda, dpad.get());
    a.causal = causal;
    a.backend = Backend::cuda;
    return a;
  }
  AttentionArgs host_args(bool causal) const {
    AttentionArgs a = tensor_args(q, k, v, out, &lse);
    if (has_used) a.seqused_k = used.view();
    if (has_pad) a.leftpad_k = pad.view();
    a.causal = causal;
    return a;
  }
};

// Runs the call on poisoned outputs and checks it against the fp64 reference of the host call: out
// elementwise within the dtype's bound (max_abs_tol), lse within 1e-3; -inf exact.
void expect_matches_reference(UsedProblem& p, const UsedCase& c, const AttentionArgs& dev,
                              const AttentionArgs& host) {
  p.poison();
  attention_forward(dev);
  TEST_CUDA_CHECK(cudaDeviceSynchronize());
  p.dout.download(p.out.data());
  p.dlse.download(p.lse.data());
  const ReferenceResult ref = reference_attention(host);
  const double tol = max_abs_tol(c.t);
  for (std::size_t r = 0; r < ref.rows.size(); ++r) {
    const std::int64_t row = ref.rows[r];
    const int b = static_cast<int>(row / c.Sq), i = static_cast<int>(row % c.Sq);
    for (int h = 0; h < c.Hq; ++h) {
      for (int d = 0; d < c.D; ++d) {
        const double want = ref.out[(r * c.Hq + h) * c.D + d];
        const float got = p.out.get(((row * c.Hq) + h) * c.D + d);
        ASSERT_LE(std::abs(got - want), tol * std::max(1.0, std::abs(want)))
            << "b " << b << " i " << i << " h " << h << " d " << d;
      }
      const double want = ref.lse[r * c.Hq + h];
      const float got = p.lse.get((static_cast<std::int64_t>(b) * c.Hq + h) * c.Sq + i);
      if (std::isinf(want)) {
        EXPECT_EQ(got, -std::numeric_limits<float>::infinity()) << "lse b " << b << " h " << h;
      } else {
        ASSERT_LE(std::abs(got - want), 1e-3 * std::max(1.0, std::abs(want)))
            << "lse b " << b << " i " << i << " h " << h;
      }
    }
  }
}

class SeqUsedKCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(SeqUsedKCuda, DecodeMatchesTheReference) {
  const std::vector<UsedCase> cases = {
      {3, 32, 8, 1, 4096, 128, DType::bf16, false, {4096, 1, 0}},
      {2, 16, 16, 4, 777, 64, DType::f16, true, {777, 3}},  // 3 keys, 4 causal rows: row 0 none
      {2, 8, 2, 2, 3000, 256, DType::f16, false, {2999, 1500}},
      {4, 8, 8, 1, 70000, 64, DType::bf16, false, {70000, 65, 64, 100}},  // splits of 70000 keys
      {2, 64, 1, 1, 5000, 128, DType::f16, true, {4097, 2}},              // 4 row blocks
      {3, 16, 4, 1, 65536, 128, DType::bf16, false, {100, 3000, 0}},  // a large, mostly empty cache
  };
  for (const UsedCase& c : cases) {
    const std::string name = "B" + std::to_string(c.B) + "_H" + std::to_string(c.Hq) + "kv" +
                             std::to_string(c.Hkv) + "_Sq" + std::to_string(c.Sq) + "_Sk" +
                             std::to_string(c.Sk) + "_D" + std::to_string(c.D);
    SCOPED_TRACE(name);
    UsedProblem p(c, seed_of("SeqUsedKCuda/" + name));
    const AttentionArgs dev = p.device_args(c.causal);
    EXPECT_EQ(cuda_forward_kernel(make_fwd_params(dev)), FwdKernel::decode_16x64);
    expect_matches_reference(p, c, dev, p.host_args(c.causal));
  }
}

// Calls the decode kernel does not take run on the sm_80 kernel, on Hopper too: more rows than a
// decode call, a window, compensated precision.
TEST_F(SeqUsedKCuda, OtherCallsRunThePortableKernel) {
  struct Extra {
    UsedCase c;
    int window_left;
    bool compensated;
  };
  const std::vector<Extra> cases = {
      {{2, 8, 8, 256, 1000, 128, DType::f16, true, {1000, 10}}, -1, false},
      {{2, 16, 4, 130, 300, 64, DType::bf16, false, {300, 1}}, -1, false},
      {{2, 8, 8, 100, 999, 128, DType::f16, true, {999, 500}}, 64, false},
      {{2, 4, 4, 1, 777, 64, DType::f16, false, {777, 0}}, -1, true},
  };
  for (const Extra& e : cases) {
    const UsedCase& c = e.c;
    const std::string name = "Sq" + std::to_string(c.Sq) + "_D" + std::to_string(c.D) + "_w" +
                             std::to_string(e.window_left) + (e.compensated ? "_comp" : "");
    SCOPED_TRACE(name);
    UsedProblem p(c, seed_of("SeqUsedKCuda/other/" + name));
    AttentionArgs dev = p.device_args(c.causal), host = p.host_args(c.causal);
    for (AttentionArgs* a : {&dev, &host}) {
      a->mask.window_left = e.window_left;
      if (e.compensated) a->precision = Precision::compensated;
    }
    const std::string pick = tile_config(cuda_forward_kernel(make_fwd_params(dev))).name;
    EXPECT_EQ(pick.rfind("sm80_", 0), 0u) << "picked " << pick;
    expect_matches_reference(p, c, dev, host);
  }
}

TEST_F(SeqUsedKCuda, BadLengthsAreNamedAndOutIsUntouched) {
  UsedProblem p({2, 8, 8, 1, 1000, 128, DType::f16, false, {1000, 1001}}, 6);
  p.poison();
  try {
    attention_forward(p.device_args(false));
    ADD_FAILURE() << "a length past Sk accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("seqused_k[1] is 1001, must be in [0, Sk = 1000]"),
              std::string::npos)
        << e.what();
  }
  TEST_CUDA_CHECK(cudaDeviceSynchronize());
  p.dout.download(p.out.data());
  for (std::int64_t i = 0; i < p.out.numel(); ++i) ASSERT_TRUE(std::isnan(p.out.get(i)));
}

TEST_F(SeqUsedKCuda, LeftpadDecodeMatchesTheReference) {
  const std::vector<UsedCase> cases = {
      {3, 32, 8, 1, 4096, 128, DType::bf16, false, {4096, 1, 300}, {17, 1, 300}},  // 0 keys
      {2, 16, 16, 4, 777, 64, DType::f16, true, {777, 9}, {700, 6}},  // 3 keys, 4 causal rows
      {2, 8, 2, 2, 3000, 256, DType::f16, false, {2999, 1500}, {1, 1499}},
      {4, 8, 8, 1, 70000, 64, DType::bf16, false, {70000, 65, 64, 100}, {5, 0, 63, 99}},
      {2, 64, 1, 1, 5000, 128, DType::f16, true, {}, {4999, 123}},  // no seqused_k: to Sk
  };
  for (const UsedCase& c : cases) {
    const std::string name = "B" + std::to_string(c.B) + "_H" + std::to_string(c.Hq) + "kv" +
                             std::to_string(c.Hkv) + "_Sq" + std::to_string(c.Sq) + "_Sk" +
                             std::to_string(c.Sk) + "_D" + std::to_string(c.D);
    SCOPED_TRACE(name);
    UsedProblem p(c, seed_of("SeqUsedKCuda/leftpad/" + name));
    for (const bool checked : {true, false}) {
      SCOPED_TRACE(checked ? "checked" : "unchecked");
      AttentionArgs dev = p.device_args(c.causal);
      dev.check_indices = checked;
      EXPECT_EQ(cuda_forward_kernel(make_fwd_params(dev)), FwdKernel::decode_16x64);
      expect_matches_reference(p, c, dev, p.host_args(c.causal));
    }
  }
}

TEST_F(SeqUsedKCuda, LeftpadOtherCallsRunThePortableKernel) {
  const std::vector<std::pair<UsedCase, int>> cases = {
      {{2, 8, 8, 256, 1000, 128, DType::f16, true, {1000, 300}, {3, 290}}, -1},
      {{2, 16, 4, 130, 300, 64, DType::bf16, false, {300, 1}, {299, 0}}, -1},
      {{2, 8, 8, 100, 999, 128, DType::f16, true, {}, {500, 0}}, 64},  // a window, no seqused_k
  };
  for (const auto& [c, window] : cases) {
    const std::string name = "Sq" + std::to_string(c.Sq) + "_D" + std::to_string(c.D) + "_w" +
                             std::to_string(window);
    SCOPED_TRACE(name);
    UsedProblem p(c, seed_of("SeqUsedKCuda/leftpad-other/" + name));
    AttentionArgs dev = p.device_args(c.causal), host = p.host_args(c.causal);
    dev.mask.window_left = host.mask.window_left = window;
    const std::string pick = tile_config(cuda_forward_kernel(make_fwd_params(dev))).name;
    EXPECT_EQ(pick.rfind("sm80_", 0), 0u) << "picked " << pick;
    expect_matches_reference(p, c, dev, host);
  }
}

// A paged cache with leftpad_k: the dense cache as B pages of Sk keys (page b sequence b's, as
// Python's cache_batch_idx runs), read in place by decode_16x64 from each start (299, 1 and 7,
// the last sequence's end: none on a multiple of 16, so a warp's rows may cross pages: two table
// entries a warp and tile). The rest of paged leftpad_k is in tests/cuda/test_paged_kv_cuda.cpp.
TEST_F(SeqUsedKCuda, LeftpadPagedDecodeReadsOnePageASequence) {
  const UsedCase c{3, 16, 4, 2, 300, 128, DType::bf16, true, {300, 41, 7}, {299, 1, 7}};
  UsedProblem p(c, seed_of("SeqUsedKCuda/leftpad-paged"));
  HostTensor table(DType::i32, {c.B, 1});
  for (int b = 0; b < c.B; ++b) static_cast<std::int32_t*>(table.data())[b] = b;
  DeviceBuffer dtable(table.bytes());
  dtable.upload(table.data());
  AttentionArgs dev = p.device_args(c.causal), host = p.host_args(c.causal);
  dev.block_table = table.view(Device::cuda, dtable.get());
  host.block_table = table.view();
  EXPECT_EQ(cuda_forward_kernel(make_fwd_params(dev)), FwdKernel::decode_16x64);
  expect_matches_reference(p, c, dev, host);
}

TEST_F(SeqUsedKCuda, BadLeftpadIsNamedAndOutIsUntouched) {
  for (const bool with_used : {true, false}) {
    UsedProblem p({2, 8, 8, 1, 1000, 128, DType::f16, false,
                   with_used ? std::vector<int>{1000, 400} : std::vector<int>{}, {0, 401}},
                  7);
    if (!with_used) {
      static_cast<std::int32_t*>(p.pad.data())[1] = 1001;
      p.dpad.upload(p.pad.data());
    }
    p.poison();
    try {
      attention_forward(p.device_args(false));
      ADD_FAILURE() << "a pad past the keys' end accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
      const std::string want = with_used ? "leftpad_k[1] is 401, must be in [0, seqused_k[1] = 400]"
                                         : "leftpad_k[1] is 1001, must be in [0, Sk = 1000]";
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
    TEST_CUDA_CHECK(cudaDeviceSynchronize());
    p.dout.download(p.out.data());
    for (std::int64_t i = 0; i < p.out.numel(); ++i) ASSERT_TRUE(std::isnan(p.out.get(i)));
  }
}

}  // namespace
}  // namespace gpuattn::testing
