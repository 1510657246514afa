// GPU tests of block-sparse layouts (AttentionArgs::mask.block_sparse) on device tensors against
// the fp64 CPU reference, alone and ANDed with causal, sliding windows and global tokens.
//
// Every case gets fresh random inputs and a random layout (its own seed), out and lse poisoned with
// NaN on the device before the call, and the whole output scanned afterwards: a NaN left behind
// means an element was never written, and a (row, head) that sees no key must hold out = 0 and
// lse = -inf. Nothing here depends on which CUDA kernel runs the call. Every test skips where no
// CUDA device is visible.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/random_cases.h"
#include "common/test_util.h"
#include "core/fwd_params.h"
#include "core/mask.h"
#include "core/tile_config.h"
#include "cuda/cuda_attention.h"
#include "cuda/cuda_test_util.h"
#include "gpuattn/attention.h"
#include "gpuattn/reference.h"

namespace gpuattn::testing {
namespace {

constexpr double kTolF16 = 5e-3;   // ||out - ref|| / ||ref||, as in test_attention_cuda.cpp
constexpr double kTolBF16 = 1e-2;  // bf16 keeps 8 mantissa bits: P and out round ~8x coarser
constexpr double kTolLse = 1e-3;   // |lse - ref| / max(1, |ref|)

// A case whose reference needs at most this many (row x key) visibility tests plus (visible key x
// head x dim) steps checks every query row; larger ones check kSampledRows rows.
constexpr double kFullCheckSteps = 1e9;
constexpr int kSampledRows = 64;

// ---- cases --------------------------------------------------------------------------------------

enum class Fill : std::uint8_t {
  random,    // each block on with probability `density`
  all_on,    // every block on: the same as no layout
  all_off,   // every block off: every row sees nothing
  explicit_  // `blocks`, row-major [layout_heads, n_blocks_q, n_blocks_k]
};

enum class LayoutStorage : std::uint8_t {
  contiguous,  // [H, nq, nk] row-major
  transposed,  // each head stored column-major: strides (nq * nk, 1, nq)
  broadcast,   // one [1, nq, nk] layout seen through a head stride of 0 as [Hq, nq, nk]
};

struct BlockCase : CaseBase<BlockCase> {
  int block_q = 64, block_k = 64;
  bool per_head = true;  // a layout per query head, or one shared by all (shape [1, ...])
  double density = 0.5;
  Fill fill = Fill::random;
  std::vector<std::uint8_t> blocks;
  LayoutStorage storage = LayoutStorage::contiguous;
  int nan_kv_seq = -1;  // varlen: this sequence (of no query rows) has K and V rows all NaN

  BlockCase() { D = 64; }

  int layout_heads() const { return per_head || storage == LayoutStorage::broadcast ? Hq : 1; }
  int n_blocks_q() const { return (Sq + block_q - 1) / block_q; }
  int n_blocks_k() const { return (Sk + block_k - 1) / block_k; }

  BlockCase blocks_of(int bq, int bk) const {
    BlockCase c = *this;
    c.block_q = bq;
    c.block_k = bk;
    return c;
  }
  BlockCase shared() const {
    BlockCase c = *this;
    c.per_head = false;
    return c;
  }
  BlockCase nan_kv(int seq) const {
    BlockCase c = *this;
    c.nan_kv_seq = seq;
    return c;
  }
  BlockCase sparsity(double s) const {  // fraction of the blocks off
    BlockCase c = *this;
    c.density = 1.0 - s;
    return c;
  }
  BlockCase filled(Fill f) const {
    BlockCase c = *this;
    c.fill = f;
    return c;
  }
  BlockCase stored(LayoutStorage s) const {
    BlockCase c = *this;
    c.storage = s;
    return c;
  }

  // A readable, unique test name: f16_B2_H8kv2_S1000_D128_b16x64_per_head_sp50_causal_w100_0_g16
  std::string name() const {
    std::string s = shape_name();
    s += "_b" + std::to_string(block_q) + "x" + std::to_string(block_k);
    s += per_head ? "_per_head" : "_shared";
    switch (fill) {
      case Fill::random:
        s += "_sp" + std::to_string(static_cast<int>(std::lround((1.0 - density) * 100)));
        break;
      case Fill::all_on: s += "_all_on"; break;
      case Fill::all_off: s += "_all_off"; break;
      case Fill::explicit_: s += "_explicit"; break;
    }
    if (storage == LayoutStorage::transposed) s += "_transposed";
    if (storage == LayoutStorage::broadcast) s += "_broadcast";
    if (nan_kv_seq >= 0) s += "_nan_kv" + std::to_string(nan_kv_seq);
    return s + mask_name();
  }
};

void PrintTo(const BlockCase& c, std::ostream* os) {
  *os << c.name();
}

// Dense batch with a random 50% layout of 64 x 64 blocks, one per query head.
BlockCase dense(int B, int Hq, int Hkv, int Sq, int Sk, int D, DType t) {
  return dense_case<BlockCase>(B, Hq, Hkv, Sq, Sk, D, t);
}

// Packed variable-length batch; `lk` empty means the same lengths as `lq`. The layout follows
// max_seqlen_q/k, and every sequence starts at its block (0, 0).
BlockCase varlen(int Hq, int Hkv, int D, DType t, std::vector<int> lq, std::vector<int> lk = {}) {
  return varlen_case<BlockCase>(Hq, Hkv, D, t, std::move(lq), std::move(lk));
}

constexpr DType f16 = DType::f16;
constexpr DType bf16 = DType::bf16;

std::string current_test_name() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "." + info->name();
}

// ---- one problem: host and device copies, poisoned outputs, checks ------------------------------

class BlockProblem {
 public:
  struct Outputs {
    HostTensor out, lse;
  };

  BlockProblem(BlockCase c, std::uint64_t seed) : c_(std::move(c)) {
    TEST_CUDA_CHECK(cudaGetDevice(&device_));
    if (c_.varlen()) {
      cu_q_ = make_cu_seqlens(c_.lens_q);
      cu_k_ = make_cu_seqlens(c_.lens_k);
      total_q_ = static_cast<const std::int32_t*>(cu_q_.data())[c_.B];
      total_k_ = static_cast<const std::int32_t*>(cu_k_.data())[c_.B];
      q_ = HostTensor(c_.dtype, {total_q_, c_.Hq, c_.D});
      k_ = HostTensor(c_.dtype, {total_k_, c_.Hkv, c_.D});
      lse_ = HostTensor(DType::f32, {c_.Hq, total_q_});
    } else {
      total_q_ = std::int64_t{c_.B} * c_.Sq;
      total_k_ = std::int64_t{c_.B} * c_.Sk;
      q_ = HostTensor(c_.dtype, {c_.B, c_.Sq, c_.Hq, c_.D});
      k_ = HostTensor(c_.dtype, {c_.B, c_.Sk, c_.Hkv, c_.D});
      lse_ = HostTensor(DType::f32, {c_.B, c_.Hq, c_.Sq});
    }
    v_ = HostTensor(c_.dtype, k_.shape);
    out_ = HostTensor(c_.dtype, q_.shape);
    q_.randomize(seed ^ 0x1111, c_.q_scale);
    k_.randomize(seed ^ 0x2222);
    v_.randomize(seed ^ 0x3333);
    if (c_.nan_kv_seq >= 0) {
      // No query attends these rows; a key tile that runs past the sequence before reads them.
      const auto s = static_cast<std::size_t>(c_.nan_kv_seq);
      if (!c_.varlen() || s >= c_.lens_q.size() || c_.lens_q[s] != 0) {
        throw std::logic_error("nan_kv needs a varlen sequence of no query rows");
      }
      const auto* cu = static_cast<const std::int32_t*>(cu_k_.data());
      const std::int64_t row = std::int64_t{c_.Hkv} * c_.D;
      const auto nan = static_cast<std::uint16_t>(c_.dtype == DType::f16 ? 0x7e00u : 0x7fc0u);
      std::fill(static_cast<std::uint16_t*>(k_.data()) + cu[s] * row,
                static_cast<std::uint16_t*>(k_.data()) + cu[s + 1] * row, nan);
      std::fill(static_cast<std::uint16_t*>(v_.data()) + cu[s] * row,
                static_cast<std::uint16_t*>(v_.data()) + cu[s + 1] * row, nan);
    }
    out_.poison();
    lse_.poison();
    make_layout(seed ^ 0x4444);

    dq_ = upload(q_);
    dk_ = upload(k_);
    dv_ = upload(v_);
    dout_ = DeviceBuffer(out_.bytes());
    dlse_ = DeviceBuffer(lse_.bytes());
    dlayout_ = DeviceBuffer(layout_.bytes());
    dlayout_.upload(layout_.data());
    if (c_.varlen()) {
      dcu_q_ = upload(cu_q_);
      dcu_k_ = upload(cu_k_);
    }

    // Keys each (packed row, head) sees, from the library's own params over the host copies.
    const FwdParams hp = make_fwd_params(host_args());
    visible_.assign(static_cast<std::size_t>(total_q_ * c_.Hq), 0);
    parallel_for(std::int64_t{c_.B} * c_.Hq, [&](std::int64_t bh) {
      const int b = static_cast<int>(bh / c_.Hq), h = static_cast<int>(bh % c_.Hq);
      const MaskPolicy m = hp.mask(h);
      const int lq = hp.len_q(b), lk = hp.len_k(b);
      // Packed row of (b, 0): dense batches are laid out back to back (row0_q is 0 there).
      const std::int64_t row0 = hp.is_varlen() ? hp.row0_q(b) : std::int64_t{b} * hp.seqlen_q;
      for (int i = 0; i < lq; ++i) {
        visible_[static_cast<std::size_t>((row0 + i) * c_.Hq + h)] = m.visible_count(i, lq, lk);
      }
    });
  }

  const BlockCase& params() const { return c_; }
  const HostTensor& layout() const { return layout_; }

  // The call on the device tensors; the layout in device memory.
  AttentionArgs device_args() const {
    AttentionArgs a = common_args();
    a.q = q_.view(Device::cuda, dq_.get());
    a.k = k_.view(Device::cuda, dk_.get());
    a.v = v_.view(Device::cuda, dv_.get());
    a.out = out_.view(Device::cuda, dout_.get());
    if (c_.with_lse) a.lse = lse_.view(Device::cuda, dlse_.get());
    for (TensorView* t : {&a.q, &a.k, &a.v, &a.out, &a.lse}) t->device_index = device_;
    if (c_.varlen()) {
      a.cu_seqlens_q = cu_q_.view(Device::cuda, dcu_q_.get());
      a.cu_seqlens_k = cu_k_.view(Device::cuda, dcu_k_.get());
      a.cu_seqlens_q.device_index = a.cu_seqlens_k.device_index = device_;
    }
    a.mask.block_sparse.layout = layout_view(Device::cuda, dlayout_.get());
    return a;
  }

  // The same problem over the host copies, for the reference (which writes neither out nor lse).
  AttentionArgs host_args() const {
    AttentionArgs a = common_args();
    a.q = q_.view();
    a.k = k_.view();
    a.v = v_.view();
    a.out = out_.view();
    if (c_.varlen()) {
      a.cu_seqlens_q = cu_q_.view();
      a.cu_seqlens_k = cu_k_.view();
    }
    a.mask.block_sparse.layout = layout_view(Device::cpu, const_cast<void*>(layout_.data()));
    return a;
  }

  void poison_outputs() {
    dout_.upload(out_.data());  // the host copies hold the NaN poison
    dlse_.upload(lse_.data());
  }

  Outputs download() const {
    Outputs r{HostTensor(out_.dtype, out_.shape), HostTensor(lse_.dtype, lse_.shape)};
    dout_.download(r.out.data());
    dlse_.download(r.lse.data());
    return r;
  }

  std::vector<unsigned char> output_snapshot() const {
    std::vector<unsigned char> s = dout_.snapshot();
    const std::vector<unsigned char> l = dlse_.snapshot();
    s.insert(s.end(), l.begin(), l.end());
    return s;
  }

  // Poison, run on the default stream, wait, download.
  Outputs run() {
    poison_outputs();
    attention_forward(device_args());
    TEST_CUDA_CHECK(cudaGetLastError());
    TEST_CUDA_CHECK(cudaDeviceSynchronize());
    return download();
  }

  // Every out element written and finite, exactly 0 for a (row, head) that sees no key; lse finite,
  // -inf where a (row, head) sees no key (lse untouched when not requested); the checked rows
  // within tolerance of the fp64 reference.
  void expect_matches_reference(const Outputs& r) const {
    const std::int64_t hd = std::int64_t{c_.Hq} * c_.D;
    std::atomic<std::int64_t> nonfinite{0}, nonzero_empty{0};
    parallel_for(total_q_, [&](std::int64_t row) {
      std::int64_t bad_nf = 0, bad_zero = 0;
      for (int h = 0; h < c_.Hq; ++h) {
        const bool empty = visible_[static_cast<std::size_t>(row * c_.Hq + h)] == 0;
        for (std::int64_t e = row * hd + h * c_.D; e < row * hd + (h + 1) * c_.D; ++e) {
          const float o = r.out.get(e);
          if (!std::isfinite(o)) {
            ++bad_nf;
          } else if (empty && o != 0.f) {
            ++bad_zero;
          }
        }
      }
      nonfinite += bad_nf;
      nonzero_empty += bad_zero;
    });
    EXPECT_EQ(nonfinite.load(), 0) << "NaN/inf in out: an element left unwritten, or overflow";
    EXPECT_EQ(nonzero_empty.load(), 0) << "out must be 0 for a (row, head) that sees no key";

    std::vector<float> lse;
    if (c_.with_lse) {
      const auto* p = static_cast<const float*>(r.lse.data());
      lse.assign(p, p + r.lse.numel());
      std::int64_t bad = 0;
      for (std::int64_t row = 0; row < total_q_; ++row) {
        for (int h = 0; h < c_.Hq; ++h) {
          const bool empty = visible_[static_cast<std::size_t>(row * c_.Hq + h)] == 0;
          const float l = lse[static_cast<std::size_t>(lse_index(row, h))];
          bad += empty ? !(std::isinf(l) && l < 0) : !std::isfinite(l);
        }
      }
      EXPECT_EQ(bad, 0) << "lse entries that are NaN/+inf, or -inf for a (row, head) that sees "
                           "keys, or not -inf for one that sees none";
    } else {
      EXPECT_EQ(std::memcmp(r.lse.data(), lse_.data(), lse_.bytes()), 0)
          << "lse written although not requested";
    }

    const std::vector<std::int64_t> rows = pick_rows();
    const ReferenceResult ref = parallel_reference(host_args(), rows);
    const Comparison cmp = compare(ref, r.out, c_.Hq, c_.D, c_.with_lse ? &lse : nullptr,
                                   [&](std::int64_t row, int h) { return lse_index(row, h); });
    const double tol = c_.dtype == DType::bf16 ? kTolBF16 : kTolF16;
    EXPECT_EQ(cmp.nonfinite, 0);
    EXPECT_LE(cmp.rel_err, tol) << "max_abs " << cmp.max_abs << ", cosine " << cmp.cosine;
    if (c_.with_lse) {
      EXPECT_LE(cmp.lse_rel, kTolLse);
    }
    const double abs_tol = max_abs_tol(c_.dtype);
    const WorstElement worst = expect_out_within_max_abs(
        ref, r.out, c_.Hq, c_.D, abs_tol, c_.B, c_.Sq,
        c_.varlen() ? static_cast<const std::int32_t*>(cu_q_.data()) : nullptr);
    std::int64_t empty = 0;
    for (const int n : visible_) empty += n == 0;
    std::printf(
        "[ checked  ] %s: %zu of %lld rows, rel_err %.2e (tol %.0e), max_abs %.2e (%.2f of the "
        "bound %.0e * max(1, |ref|)), lse_rel %.2e, %lld of %zu (row, head) see no key\n",
        c_.name().c_str(), rows.size(), static_cast<long long>(total_q_), cmp.rel_err, tol,
        cmp.max_abs, worst.ratio, abs_tol, cmp.lse_rel, static_cast<long long>(empty),
        visible_.size());
  }

  std::int64_t lse_index(std::int64_t row, int h) const {
    if (c_.varlen()) return h * total_q_ + row;
    return (row / c_.Sq * c_.Hq + h) * c_.Sq + row % c_.Sq;
  }

 private:
  static DeviceBuffer upload(const HostTensor& t) {
    DeviceBuffer d(t.bytes());
    d.upload(t.data());
    return d;
  }

  AttentionArgs common_args() const {
    AttentionArgs a;
    if (c_.varlen()) {
      a.max_seqlen_q = c_.Sq;
      a.max_seqlen_k = c_.Sk;
    }
    a.causal = c_.is_causal;
    a.mask = c_.mask;
    a.mask.block_sparse.block_q = c_.block_q;
    a.mask.block_sparse.block_k = c_.block_k;
    a.precision = c_.precision;
    return a;
  }

  // The layout bytes in their storage order, and the [H, nq, nk] view of them.
  void make_layout(std::uint64_t seed) {
    const int h = c_.storage == LayoutStorage::broadcast ? 1 : c_.layout_heads();
    const int nq = c_.n_blocks_q(), nk = c_.n_blocks_k();
    std::vector<std::uint8_t> on(static_cast<std::size_t>(h) * nq * nk);  // row-major
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (auto& x : on) {
      switch (c_.fill) {
        case Fill::random: x = u(rng) < c_.density ? 1 + rng() % 255 : 0; break;  // any nonzero
        case Fill::all_on: x = 1; break;
        case Fill::all_off: x = 0; break;
        case Fill::explicit_: break;
      }
    }
    if (c_.fill == Fill::explicit_) {
      if (c_.blocks.size() != on.size()) throw std::logic_error("explicit layout of wrong size");
      on = c_.blocks;
    }
    layout_ = HostTensor(DType::u8, {static_cast<std::int64_t>(on.size())});
    auto* dst = static_cast<std::uint8_t*>(layout_.data());
    for (int hh = 0; hh < h; ++hh) {
      for (int r = 0; r < nq; ++r) {
        for (int c = 0; c < nk; ++c) {
          const std::size_t src = (static_cast<std::size_t>(hh) * nq + r) * nk + c;
          const std::size_t at = c_.storage == LayoutStorage::transposed
                                     ? (static_cast<std::size_t>(hh) * nk + c) * nq + r
                                     : src;
          dst[at] = on[src];
        }
      }
    }
  }

  TensorView layout_view(Device dev, void* data) const {
    const std::int64_t h = c_.layout_heads(), nq = c_.n_blocks_q(), nk = c_.n_blocks_k();
    TensorView v = TensorView::contiguous(data, DType::u8, dev, {h, nq, nk},
                                          dev == Device::cuda ? device_ : 0);
    if (c_.storage == LayoutStorage::transposed) {
      v.stride = {nq * nk, 1, nq, 0};
    } else if (c_.storage == LayoutStorage::broadcast) {
      v.stride[0] = 0;
    }
    return v;
  }

  // All rows when that is cheap; otherwise the first and last row of every sequence and of every
  // 64-row block, and random rows up to kSampledRows.
  std::vector<std::int64_t> pick_rows() const {
    double steps = double(total_q_) * c_.Sk * c_.Hq;  // the reference tests every key of a row
    for (const int n : visible_) steps += double(n) * c_.D;
    std::vector<std::int64_t> rows;
    if (steps <= kFullCheckSteps) {
      for (std::int64_t r = 0; r < total_q_; ++r) rows.push_back(r);
      return rows;
    }
    std::set<std::int64_t> pick;
    const auto* cu = static_cast<const std::int32_t*>(cu_q_.data());
    for (int b = 0; b < c_.B; ++b) {
      const std::int64_t first = c_.varlen() ? cu[b] : std::int64_t{b} * c_.Sq;
      const std::int64_t len = c_.varlen() ? cu[b + 1] - cu[b] : c_.Sq;
      if (len == 0) continue;
      pick.insert(first);
      pick.insert(first + len - 1);
      for (std::int64_t i = 64; i < len && pick.size() < kSampledRows / 2; i += 64 * 37) {
        pick.insert(first + i - 1);
        pick.insert(first + i);
      }
    }
    std::mt19937_64 rng(seed_of(c_.name()));
    std::uniform_int_distribution<std::int64_t> any(0, total_q_ - 1);
    while (pick.size() < static_cast<std::size_t>(std::min<std::int64_t>(kSampledRows, total_q_))) {
      pick.insert(any(rng));
    }
    return std::vector<std::int64_t>(pick.begin(), pick.end());
  }

  BlockCase c_;
  int device_ = 0;
  std::int64_t total_q_ = 0, total_k_ = 0;
  HostTensor q_, k_, v_, out_, lse_, layout_, cu_q_, cu_k_;
  DeviceBuffer dq_, dk_, dv_, dout_, dlse_, dlayout_, dcu_q_, dcu_k_;
  std::vector<int> visible_;  // keys seen by each (packed row, head): [total_q, Hq]
};

// ---- fixtures -----------------------------------------------------------------------------------

class BlockSparseCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  }
};

class BlockSparseCuda : public BlockSparseCudaTest,
                        public ::testing::WithParamInterface<BlockCase> {};

// Where the dispatch picks the sm_90a kernel, a layout of whole 128 x 128 tiles alone (blocks of
// multiples of 128 each way, no causal, window or global tokens) at head dims 64 and 128 in
// standard precision runs its dense instantiation, which lists the on tiles, and every other
// layout its masked one: judged here from the case alone, so that the WholeTiles cases cannot
// pass on the masked kernel by mistake.
void expect_instantiation(const BlockCase& c, const AttentionArgs& args) {
  const FwdParams fp = make_fwd_params(args);
  const FwdKernel k = cuda_forward_kernel(fp);
  const std::string name = tile_config(k).name;
  if (name.rfind("sm90_", 0) != 0) return;  // no sm_90a kernel on this device (or sm80 forced)
  const bool whole = !c.is_causal && c.mask.window_left < 0 && c.mask.window_right < 0 &&
                     c.mask.global_tokens == 0 && c.mask.global_stride == 0 &&
                     c.block_q % 128 == 0 && c.block_k % 128 == 0 && c.D <= 128 &&
                     c.precision == Precision::standard;
  EXPECT_EQ(sm90_dense_instantiation(k, fp), whole) << "picked " << name;
}

TEST_P(BlockSparseCuda, MatchesReference) {
  BlockProblem p(GetParam(), seed_of(current_test_name()));
  p.expect_matches_reference(p.run());
  expect_instantiation(GetParam(), p.device_args());
}

std::string case_name(const ::testing::TestParamInfo<BlockCase>& info) {
  return info.param.name();
}

// Runs case c (one query head) against the reference and checks that exactly the rows i with
// empty(i) (in every batch entry) see no key: lse -inf there (out 0 is the reference's check).
template <class Empty>
void expect_rows_that_see_nothing(const BlockCase& c, Empty empty) {
  SCOPED_TRACE(c.name());
  BlockProblem p(c, seed_of(current_test_name() + c.name()));
  const BlockProblem::Outputs r = p.run();
  p.expect_matches_reference(r);
  expect_instantiation(c, p.device_args());
  const auto* lse = static_cast<const float*>(r.lse.data());
  for (int b = 0; b < c.B; ++b) {
    for (int i = 0; i < c.Sq; ++i) {
      const float l = lse[p.lse_index(static_cast<std::int64_t>(b) * c.Sq + i, 0)];
      EXPECT_EQ(std::isinf(l) && l < 0, empty(i)) << "batch " << b << " row " << i;
    }
  }
}

// ---- the layout alone ---------------------------------------------------------------------------

// 50% and 90% sparsity, per-head and shared layouts, blocks of 16, 64 and 128 and mixed sizes
// (blocks smaller than a 64-key tile mask inside it; blocks of 16 rows put the rows of one warp in
// different row blocks; 48 x 80 blocks straddle the tiles unevenly), lengths that are multiples of
// no tile, both dtypes and head dims.
INSTANTIATE_TEST_SUITE_P(
    Layout, BlockSparseCuda,
    ::testing::Values(
        dense(2, 4, 4, 1000, 1000, 128, f16),
        dense(2, 4, 4, 1000, 1000, 64, bf16).shared().sparsity(0.9),
        dense(1, 8, 8, 1000, 1000, 64, f16).blocks_of(16, 16),
        dense(1, 4, 4, 1000, 1000, 128, bf16).blocks_of(16, 16).sparsity(0.9),
        dense(1, 4, 4, 1000, 1000, 128, f16).blocks_of(128, 128),
        dense(1, 4, 4, 1000, 1000, 64, bf16).blocks_of(128, 128).shared().sparsity(0.9),
        dense(1, 4, 4, 1000, 1000, 128, f16).blocks_of(32, 128),
        dense(1, 4, 4, 1000, 1000, 64, bf16).blocks_of(128, 16).sparsity(0.9),
        dense(1, 4, 4, 1000, 1000, 64, f16).blocks_of(48, 80).shared(),
        dense(2, 4, 4, 77, 77, 128, bf16).blocks_of(16, 32),
        dense(3, 2, 2, 1, 1, 64, f16).blocks_of(16, 16),
        // 128-row CTAs (the grid fills the GPU twice over)
        dense(2, 16, 16, 2048, 2048, 128, f16),
        dense(2, 16, 16, 2048, 2048, 64, bf16).blocks_of(16, 16).sparsity(0.9),
        dense(2, 16, 16, 2048, 2048, 128, bf16).blocks_of(16, 128),
        dense(2, 16, 16, 2000, 2000, 64, f16).blocks_of(32, 48).shared()),
    case_name);

// Sq != Sk (blocks count query rows, not positions), decode (one query row), GQA and MQA.
INSTANTIATE_TEST_SUITE_P(
    Shapes, BlockSparseCuda,
    ::testing::Values(dense(2, 4, 4, 77, 1000, 128, f16),
                      dense(2, 4, 4, 1000, 77, 64, bf16).blocks_of(16, 16),
                      dense(2, 4, 4, 300, 4097, 128, bf16).blocks_of(128, 16).sparsity(0.9),
                      dense(2, 8, 8, 1, 4097, 128, f16).blocks_of(16, 64),
                      dense(4, 8, 8, 1, 1000, 64, bf16).blocks_of(128, 128).shared(),
                      dense(2, 8, 2, 1000, 1000, 128, f16).blocks_of(32, 64),
                      dense(1, 16, 1, 1000, 700, 64, bf16).blocks_of(64, 16).sparsity(0.9),
                      dense(2, 32, 8, 2048, 2048, 128, f16).blocks_of(128, 64).shared()),
    case_name);

// ---- the layout ANDed with the other masks ------------------------------------------------------

// Causal (bottom-right aligned), sliding windows and global tokens: an element is visible iff its
// block is on and the other masks allow it (a global token does not reach into an off block).
INSTANTIATE_TEST_SUITE_P(
    Combined, BlockSparseCuda,
    ::testing::Values(
        dense(2, 4, 4, 1000, 1000, 128, f16).causal(),
        dense(2, 4, 4, 1000, 1000, 64, bf16).blocks_of(16, 16).sparsity(0.9).causal(),
        dense(2, 4, 4, 300, 1000, 128, f16).blocks_of(32, 128).causal(),
        dense(2, 4, 4, 1000, 300, 64, f16).blocks_of(128, 16).causal(),  // rows without keys
        dense(2, 16, 16, 2048, 2048, 128, bf16).blocks_of(64, 64).shared().causal(),
        dense(2, 4, 4, 1000, 1000, 128, f16).window(100, 100),
        dense(2, 4, 4, 1000, 1000, 64, bf16).blocks_of(16, 32).causal().window(256, 0),
        dense(1, 8, 8, 1000, 1000, 128, f16).blocks_of(128, 128).window(0, 0),
        dense(1, 4, 4, 1000, 100, 64, f16).blocks_of(16, 16).window(10, 10),
        dense(2, 4, 4, 1000, 1000, 128, bf16).window(64, 64).globals(16),
        dense(1, 4, 4, 1000, 1000, 64, f16)
            .blocks_of(16, 64)
            .causal()
            .window(100, 0)
            .globals(4, 300),
        dense(1, 4, 4, 1000, 1000, 128, f16)
            .blocks_of(128, 16)
            .shared()
            .window(3, 3)
            .globals(0, 65),
        dense(2, 16, 16, 2048, 2048, 64, bf16)
            .blocks_of(16, 16)
            .causal()
            .window(128, 0)
            .globals(8, 256),
        dense(1, 8, 2, 1000, 1000, 128, f16).causal().compensated(),
        dense(1, 4, 4, 1000, 1000, 64, bf16)
            .blocks_of(16, 48)
            .window(50, 50)
            .globals(7)
            .compensated(),
        dense(1, 8, 8, 1000, 1000, 128, f16).blocks_of(32, 32).causal().q_times(30),
        dense(1, 4, 4, 1000, 1000, 64, bf16).blocks_of(64, 16).q_times(30).no_lse()),
    case_name);

// ---- head dim 256 -------------------------------------------------------------------------------

// Head dim 256 (the sm_80 kernel's swizzled 64 x 64 configuration, its 2-CTA O split in
// compensated precision, the sm_90a kernel's 64-key tiles): layouts alone, with the other masks,
// GQA, varlen.
INSTANTIATE_TEST_SUITE_P(
    HeadDim256, BlockSparseCuda,
    ::testing::Values(
        dense(2, 4, 4, 1000, 1000, 256, f16),
        dense(1, 8, 2, 1000, 700, 256, bf16).blocks_of(16, 16).sparsity(0.9),
        dense(2, 16, 16, 2048, 2048, 256, bf16).blocks_of(64, 128).shared().causal(),
        dense(1, 4, 4, 1000, 1000, 256, f16).blocks_of(32, 48).causal().window(100, 0).globals(4),
        dense(1, 8, 2, 1000, 1000, 256, f16).blocks_of(16, 64).causal().compensated(),
        varlen(8, 2, 256, bf16, {1, 77, 513, 1000, 1}, {17, 77, 300, 1000, 1})
            .blocks_of(128, 32)
            .causal()),
    case_name);

// ---- varlen -------------------------------------------------------------------------------------

// One layout (from max_seqlen) for every sequence, each starting at block (0, 0); length-1
// sequences use block (0, 0) alone; a sequence with Sq > Sk under causal has rows without keys.
INSTANTIATE_TEST_SUITE_P(
    Varlen, BlockSparseCuda,
    ::testing::Values(
        varlen(8, 2, 64, f16, {1, 77, 513, 1000, 1}, {17, 77, 300, 1000, 1}),
        varlen(8, 2, 128, bf16, {1, 77, 513, 1000, 1}, {17, 77, 300, 1000, 1})
            .blocks_of(16, 16)
            .shared()
            .sparsity(0.9),
        varlen(8, 8, 64, bf16, {1, 77, 513, 1000, 1}).blocks_of(128, 32).causal(),
        varlen(8, 2, 128, f16, {1, 0, 513, 300}, {17, 300, 0, 2048}).blocks_of(32, 128).causal(),
        varlen(16, 4, 64, f16, {1, 17, 513, 2048})
            .blocks_of(16, 64)
            .causal()
            .window(100, 0)
            .globals(5),
        varlen(8, 8, 128, bf16, {1, 17, 513, 2048}, {2048, 513, 17, 1})
            .blocks_of(64, 16)
            .window(64, 64)
            .globals(0, 256)
            .compensated(),
        // A query-less sequence of NaN K / V after sequences whose last key tile runs into it:
        // whole-tile blocks (the dense kernel's listed tiles) and 16 x 16 ones (the masked kernel).
        varlen(8, 2, 128, bf16, {200, 0, 150}, {140, 100, 130}).blocks_of(128, 128).nan_kv(1),
        varlen(8, 2, 64, f16, {200, 0, 150}, {140, 100, 130}).blocks_of(16, 16).causal().nan_kv(1)),
    case_name);

// ---- grids of many row blocks -------------------------------------------------------------------

// Several hundred 128-row blocks, about 3 or more per SM of a 132-SM H200 (B2 H16 S1500: 2 * 16 *
// 12 = 384), so that a persistent CTA runs several work items in turn and a CTA-per-item grid runs
// several waves, each item with its own layout rows: the layout alone, with causal, windows,
// global tokens (the first row block much longer) and strided ones; GQA 16:4, Sq != Sk, varlen
// with lengths 1 and 0 and a sequence without keys. Most fit the full check (every row).
INSTANTIATE_TEST_SUITE_P(
    ManyRowBlocks, BlockSparseCuda,
    ::testing::Values(
        dense(2, 16, 4, 1500, 1500, 64, f16).blocks_of(128, 64).sparsity(0.9),
        dense(2, 16, 4, 1500, 1500, 128, bf16).causal(),
        dense(2, 16, 4, 1300, 1700, 64, f16).blocks_of(16, 64).shared().sparsity(0.9),
        dense(2, 16, 4, 1700, 1300, 64, bf16).blocks_of(64, 32).causal(),  // rows 0..399: no key
        dense(2, 16, 4, 1500, 1500, 64, bf16).blocks_of(32, 32).window(100, 100).globals(64),
        dense(2, 16, 4, 1500, 1500, 128, f16)
            .blocks_of(64, 128)
            .causal()
            .window(256, 0)
            .globals(8, 300),
        varlen(16, 4, 64, f16, {1500, 1, 0, 1300, 700, 129}, {1400, 17, 300, 0, 1000, 129})
            .blocks_of(64, 64)
            .causal(),
        varlen(16, 4, 64, bf16, {1500, 1, 0, 1300, 700, 129})
            .blocks_of(32, 128)
            .sparsity(0.9)
            .window(64, 64)
            .globals(0, 300),
        dense(2, 16, 4, 1500, 1500, 64, bf16).blocks_of(128, 128).sparsity(0.7).compensated()),
    case_name);

// ---- special layouts ----------------------------------------------------------------------------

// Every block off: every row sees nothing (out 0, lse -inf). Every block on: plain (causal)
// attention. Layouts with other strides: stored column-major per head, and one layout broadcast
// to every head through a head stride of 0.
INSTANTIATE_TEST_SUITE_P(
    SpecialLayouts, BlockSparseCuda,
    ::testing::Values(
        dense(2, 4, 4, 1000, 1000, 128, f16).filled(Fill::all_off),
        dense(1, 8, 2, 300, 77, 64, bf16).blocks_of(16, 16).filled(Fill::all_off).causal(),
        varlen(4, 4, 64, f16, {1, 77, 513}).shared().filled(Fill::all_off),
        dense(2, 4, 4, 1000, 1000, 128, bf16).filled(Fill::all_on),
        dense(2, 4, 4, 1000, 1000, 64, f16).blocks_of(16, 16).filled(Fill::all_on).causal(),
        dense(2, 4, 4, 1000, 1000, 128, f16).blocks_of(32, 16).stored(LayoutStorage::transposed),
        dense(2, 4, 4, 1000, 1000, 64, bf16)
            .blocks_of(128, 64)
            .stored(LayoutStorage::broadcast)
            .causal()),
    case_name);

// ---- layouts of whole tiles ---------------------------------------------------------------------

// Blocks that are whole 128-row blocks and whole 128-key tiles (multiples of both) and no other
// mask: the sm_90a kernel runs these on its dense instantiation at head dims 64 and 128, loading
// only the on tiles (FwdParams::whole_tile_layout). Lengths on, one past and one short of a tile
// edge (the last, partial tile on or off), Sq != Sk both ways, decode, GQA, blocks of 2 and 3
// tiles, column-major and broadcast layouts, every block off or on, varlen with lengths 1 and 0,
// and grids of many items (the dynamic schedule), both dtypes.
INSTANTIATE_TEST_SUITE_P(
    WholeTiles, BlockSparseCuda,
    ::testing::Values(
        dense(2, 4, 4, 1024, 1024, 128, f16).blocks_of(128, 128),
        dense(2, 4, 4, 1025, 1025, 128, bf16).blocks_of(128, 128).sparsity(0.9),
        dense(2, 4, 4, 1023, 1151, 64, f16).blocks_of(128, 128),
        dense(2, 8, 2, 300, 2000, 128, f16).blocks_of(256, 128).sparsity(0.7),
        dense(2, 8, 2, 2000, 300, 64, bf16).blocks_of(128, 384),
        dense(1, 4, 4, 1, 1000, 128, f16).blocks_of(128, 256),
        dense(2, 4, 4, 1000, 1000, 128, bf16)
            .blocks_of(128, 128)
            .stored(LayoutStorage::transposed)
            .sparsity(0.9),
        dense(2, 4, 4, 1000, 1000, 64, f16).blocks_of(256, 256).stored(LayoutStorage::broadcast),
        dense(2, 4, 4, 1000, 1000, 128, f16).blocks_of(128, 128).filled(Fill::all_off),
        dense(2, 4, 4, 1000, 1000, 64, bf16).blocks_of(128, 128).filled(Fill::all_on),
        varlen(8, 2, 128, f16, {1, 0, 513, 1000, 129}, {17, 300, 0, 1000, 129}).blocks_of(128, 128),
        dense(2, 32, 8, 2048, 2048, 128, bf16).blocks_of(128, 128).sparsity(0.9),
        dense(1, 16, 16, 4096, 4000, 64, f16).blocks_of(128, 128),
        // 40 and 71 key tiles (two and three ballots of 32), the last one partial, on grids of
        // several items a CTA; at 97% off about half the row blocks see no key at all, mixed
        // with the others on the same persistent CTAs
        dense(2, 16, 4, 1500, 5000, 128, f16).blocks_of(128, 128),
        dense(2, 16, 16, 1300, 9000, 64, bf16).blocks_of(128, 256).sparsity(0.7),
        dense(2, 16, 4, 3000, 3000, 64, f16).blocks_of(128, 128).sparsity(0.97),
        dense(2, 16, 4, 3000, 3000, 128, bf16).blocks_of(256, 128).sparsity(0.97)),
    case_name);

// Whole-tile blocks of 128 over Sq = 512 and Sk = 500 (the last tile 116 keys), one head: row
// block 1 all off (out 0, lse -inf), row block 2 only the last, partial tile.
TEST_F(BlockSparseCudaTest, WholeTileRowsThatSeeNothing) {
  const std::vector<std::uint8_t> blocks = {1, 0, 0, 1,   // rows 0..127
                                            0, 0, 0, 0,   // rows 128..255: nothing
                                            0, 0, 0, 1,   // rows 256..383: the last tile only
                                            1, 1, 1, 1};  // rows 384..511
  for (const DType t : {f16, bf16}) {
    for (const int d : {64, 128}) {
      BlockCase c = dense(2, 1, 1, 512, 500, d, t).blocks_of(128, 128).filled(Fill::explicit_);
      c.blocks = blocks;
      expect_rows_that_see_nothing(c, [](int i) { return i >= 128 && i < 256; });
    }
  }
}

// ---- random cases ------------------------------------------------------------------------------

// GPUATTN_FUZZ_CASES random cases (default 32) drawn from GPUATTN_FUZZ_SEED (a fixed default;
// another seed explores; tests/common/random_cases.h), each through MatchesReference's checks: both
// 16-bit types, every head dim, GQA, dense (Sq != Sk among them) or varlen batches (empty
// sequences, a NaN-filled key sequence behind a query-less one), block sizes of 16-256 (multiples
// of 128 for the listed dense path among them), densities from 3% to all on or all off, per-head,
// shared, transposed and broadcast layouts, causal, windows, global tokens, compensated precision,
// no lse.
BlockCase random_block_case(Dice& d) {
  for (;;) {
    const DType t = d.chance(0.5) ? f16 : bf16;
    const int D = d.one_of({64, 64, 128, 128, 256});
    const int hkv = d.one_of({1, 2, 4});
    const int hq = hkv * d.one_of({1, 2, 4});
    BlockCase c;
    if (d.chance(0.3)) {
      const int n = d.between(1, 4);
      std::vector<int> lq, lk;
      for (int i = 0; i < n; ++i) {
        lq.push_back(d.chance(0.12) ? 0 : d.length(1, 900));
        lk.push_back(d.chance(0.4) ? lq.back() : d.chance(0.12) ? 0 : d.length(1, 1500));
      }
      if (*std::max_element(lq.begin(), lq.end()) == 0) lq[0] = 1;
      if (*std::max_element(lk.begin(), lk.end()) == 0) lk[0] = 1;
      c = varlen(hq, hkv, D, t, lq, lk);
      for (int i = 0; i < n; ++i) {
        if (lq[static_cast<std::size_t>(i)] == 0 && lk[static_cast<std::size_t>(i)] > 0 &&
            d.chance(0.5)) {
          c = c.nan_kv(i);
          break;
        }
      }
    } else {
      const int sq = d.length(1, 1500);
      // sk drawn before B (the order GCC gave the arguments, kept)
      const int sk = d.chance(0.5) ? sq : d.length(1, 2500);
      c = dense(d.between(1, 2), hq, hkv, sq, sk, D, t);
    }
    // Block sizes: block_k drawn first (the order GCC gave the arguments, kept).
    const bool whole_tiles = d.chance(0.35);
    const int bk = whole_tiles ? 128 * d.between(1, 2) : 16 * d.between(1, 8);
    const int bq = whole_tiles ? 128 * d.between(1, 2) : 16 * d.between(1, 8);
    c = c.blocks_of(bq, bk);
    const int fill = d.between(0, 9);
    if (fill == 0) {
      c = c.filled(Fill::all_on);
    } else if (fill == 1) {
      c = c.filled(Fill::all_off);
    } else {
      c = c.sparsity(d.one_of({0.1, 0.5, 0.9, 0.97}));
    }
    if (d.chance(0.4)) c = c.shared();
    const int storage = d.between(0, 5);
    if (storage == 0) c = c.stored(LayoutStorage::transposed);
    if (storage == 1) c = c.stored(LayoutStorage::broadcast);
    if (d.chance(0.35)) c = c.causal();
    if (d.chance(0.2)) {
      const auto side = [&] { return d.chance(0.3) ? -1 : d.between(0, 300); };
      // Drawn right side first, each in its own statement: the order is then the same on every
      // compiler (as arguments, it was GCC's right-to-left, which these cases keep).
      const int right = side(), left = side();
      c = c.window(left, right);
      if (d.chance(0.4)) {
        const int stride = d.chance(0.5) ? d.between(16, 200) : 0;
        c = c.globals(d.between(0, 30), stride);
      }
    }
    if (d.chance(0.15)) c = c.compensated();
    if (d.chance(0.2)) c = c.no_lse();
    std::int64_t total_q = 0;
    for (int b = 0; b < c.B; ++b)
      total_q += c.varlen() ? c.lens_q[static_cast<std::size_t>(b)] : c.Sq;
    if (double(total_q) * c.Sk * (1.0 + double(c.Hq) * c.D) <= kFullCheckSteps) return c;
  }
}

TEST_F(BlockSparseCudaTest, RandomCasesMatchReference) {
  const FuzzRun run = FuzzRun::from_env(kDefaultFuzzSeed, 32);
  Dice dice(run.seed);
  for (int i = 0; i < run.cases; ++i) {
    const BlockCase c = random_block_case(dice);
    SCOPED_TRACE(run.where(i) + ": " + c.name());
    BlockProblem p(c, run.case_seed(i));
    p.expect_matches_reference(p.run());
    expect_instantiation(c, p.device_args());
  }
}

// ---- long key sequences -------------------------------------------------------------------------

// More than 64 Ki candidate keys per row block: a kernel that keeps per-window tile state has to
// move its window on (the sm_80 kernel's window is 1024 tiles of 64 keys).
INSTANTIATE_TEST_SUITE_P(
    LongKeys, BlockSparseCuda,
    ::testing::Values(dense(1, 2, 2, 200, 150000, 64, bf16).blocks_of(128, 128).sparsity(0.9),
                      dense(1, 2, 1, 130, 140000, 128, f16).blocks_of(16, 64).shared(),
                      dense(1, 2, 2, 70000, 70000, 64, f16).blocks_of(64, 64).causal(),
                      dense(1, 2, 2, 100, 140000, 64, bf16)
                          .blocks_of(16, 16)
                          .sparsity(0.9)
                          .window(70000, 0)
                          .globals(3)),
    case_name);

// ---- explicit layouts ---------------------------------------------------------------------------

// 4 x 4 blocks of 32 over Sq = Sk = 128, one head: row block 1 all off (out 0, lse -inf), row block
// 2 only key block 3 (after the causal limit of its rows: under causal it sees nothing).
TEST_F(BlockSparseCudaTest, RowsThatSeeNothing) {
  const std::vector<std::uint8_t> blocks = {1, 0, 0, 1,   // rows 0..31
                                            0, 0, 0, 0,   // rows 32..63: nothing
                                            0, 0, 0, 1,   // rows 64..95: key block 3 only
                                            1, 1, 1, 1};  // rows 96..127
  for (const bool causal : {false, true}) {
    for (const DType t : {f16, bf16}) {
      BlockCase c = dense(2, 1, 1, 128, 128, 64, t).blocks_of(32, 32).filled(Fill::explicit_);
      c.blocks = blocks;
      if (causal) c = c.causal();
      expect_rows_that_see_nothing(
          c, [causal](int i) { return (i >= 32 && i < 64) || (causal && i >= 64 && i < 96); });
    }
  }
}

// Every block on is no layout at all: the same result as the call without one, dense and causal,
// up to rounding (another kernel may run the call without a layout).
TEST_F(BlockSparseCudaTest, FullLayoutEqualsDense) {
  for (const bool causal : {false, true}) {
    BlockCase c = dense(2, 8, 2, 1000, 1000, 128, f16).blocks_of(64, 128).filled(Fill::all_on);
    if (causal) c = c.causal();
    SCOPED_TRACE(c.name());
    BlockProblem p(c, seed_of(current_test_name() + c.name()));
    const BlockProblem::Outputs with = p.run();
    p.expect_matches_reference(with);
    AttentionArgs plain = p.device_args();
    plain.mask.block_sparse = BlockSparseLayout{};
    p.poison_outputs();
    attention_forward(plain);
    TEST_CUDA_CHECK(cudaDeviceSynchronize());
    const BlockProblem::Outputs without = p.download();
    // Elementwise, relative to max(1, |x|): 4e-3 is 4 fp16 ulps of the rounded output.
    double out_err = 0, lse_err = 0;
    for (std::int64_t i = 0; i < with.out.numel(); ++i) {
      const double a = with.out.get(i), b = without.out.get(i);
      out_err = std::max(out_err, std::fabs(a - b) / std::max(1.0, std::fabs(b)));
    }
    for (std::int64_t i = 0; i < with.lse.numel(); ++i) {
      const double a = with.lse.get(i), b = without.lse.get(i);
      lse_err = std::max(lse_err, std::fabs(a - b) / std::max(1.0, std::fabs(b)));
    }
    EXPECT_LE(out_err, 4e-3) << "out: all-on layout vs no layout";
    EXPECT_LE(lse_err, 1e-4) << "lse: all-on layout vs no layout";
  }
}

// The same inputs twice: bitwise the same outputs.
TEST_F(BlockSparseCudaTest, Deterministic) {
  const BlockCase c = dense(2, 16, 4, 2048, 2048, 128, bf16).blocks_of(16, 64).causal();
  BlockProblem p(c, seed_of(current_test_name()));
  const BlockProblem::Outputs first = p.run();
  const BlockProblem::Outputs second = p.run();
  EXPECT_EQ(std::memcmp(first.out.data(), second.out.data(), first.out.bytes()), 0);
  EXPECT_EQ(std::memcmp(first.lse.data(), second.lse.data(), first.lse.bytes()), 0);
  p.expect_matches_reference(first);
}

// ---- errors: a clear gpuattn::Error naming the layout, outputs untouched
// -------------------------

class BlockSparseCudaValidation : public BlockSparseCudaTest {
 protected:
  void SetUp() override {
    BlockSparseCudaTest::SetUp();
    if (IsSkipped()) return;
    problem_.emplace(varlen(4, 2, 64, f16, {10, 5, 15}, {12, 7, 20}).blocks_of(16, 16),
                     seed_of(current_test_name()));
    problem_->poison_outputs();
    TEST_CUDA_CHECK(cudaDeviceSynchronize());
    TEST_CUDA_CHECK(cudaGetDevice(&device_));
    before_ = problem_->output_snapshot();
  }

  // `a` must be rejected with a gpuattn::Error of `code` whose message contains each of `words`,
  // leaving out and lse as they were, no CUDA error pending and the current device unchanged.
  void expect_rejected(const AttentionArgs& a, ErrorCode code,
                       std::initializer_list<const char*> words) {
    ErrorCode got = ErrorCode::cuda_error;
    const std::string msg = error_of([&] {
      try {
        attention_forward(a);
      } catch (const Error& e) {
        got = e.code();
        throw;
      }
    });
    EXPECT_EQ(static_cast<int>(got), static_cast<int>(code)) << msg;
    for (const char* w : words) {
      EXPECT_NE(msg.find(w), std::string::npos) << "the message does not name " << w << ": " << msg;
    }
    const cudaError_t pending = cudaGetLastError();
    EXPECT_EQ(pending, cudaSuccess)
        << "a rejected call left a CUDA error pending: " << cudaGetErrorName(pending);
    int device = -1;
    TEST_CUDA_CHECK(cudaGetDevice(&device));
    EXPECT_EQ(device, device_) << "a rejected call changed the current device";
    TEST_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(problem_->output_snapshot() == before_) << "out/lse changed by a rejected call";
  }

  std::optional<BlockProblem> problem_;
  int device_ = 0;
  std::vector<unsigned char> before_;
};

// A layout view marked cuda that points at host memory: the device-pointer check names it.
TEST_F(BlockSparseCudaValidation, RejectsHostLayoutPointerInCudaView) {
  AttentionArgs a = problem_->device_args();
  HostTensor host = problem_->layout();  // the right bytes, in host memory
  const HostTensor copy = host;
  a.mask.block_sparse.layout.data = host.data();
  expect_rejected(a, ErrorCode::invalid_argument, {"mask.block_sparse.layout", "host"});
  EXPECT_EQ(std::memcmp(host.data(), copy.data(), host.bytes()), 0) << "the host layout changed";
}

// A host layout (marked cpu) with device tensors: a host/device mix, whatever the backend.
TEST_F(BlockSparseCudaValidation, RejectsHostLayoutWithDeviceTensors) {
  AttentionArgs a = problem_->device_args();
  HostTensor host = problem_->layout();
  a.mask.block_sparse.layout.data = host.data();
  a.mask.block_sparse.layout.device = Device::cpu;
  a.mask.block_sparse.layout.device_index = 0;
  expect_rejected(a, ErrorCode::invalid_argument, {"mask.block_sparse.layout", "host/device mix"});
  a.backend = Backend::cuda;
  expect_rejected(a, ErrorCode::invalid_argument, {"mask.block_sparse.layout", "host/device mix"});
}

// The layout's shape and block sizes are checked before anything runs on the device.
TEST_F(BlockSparseCudaValidation, RejectsBadLayoutShapeAndBlockSize) {
  {
    AttentionArgs a = problem_->device_args();
    a.mask.block_sparse.layout.shape[2] += 1;  // one key block too many
    expect_rejected(a, ErrorCode::invalid_argument, {"mask.block_sparse.layout shape"});
  }
  {
    AttentionArgs a = problem_->device_args();
    a.mask.block_sparse.block_k = 24;
    expect_rejected(a, ErrorCode::not_supported, {"block_k", "multiple of 16"});
  }
  {
    AttentionArgs a = problem_->device_args();
    a.mask.block_sparse.layout.dtype = DType::i32;
    expect_rejected(a, ErrorCode::invalid_argument, {"mask.block_sparse.layout", "uint8"});
  }
}

}  // namespace
}  // namespace gpuattn::testing
