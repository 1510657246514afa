// GPU tests of attention_forward on device tensors against the fp64 CPU reference.
//
// Every case gets fresh random inputs (its own seed), outputs and lse poisoned with NaN on the
// device before the call, and the whole output scanned afterwards (a NaN left behind means an
// element was never written). Long sequences are checked against the reference on sampled query
// rows, computed on all host cores. Every test skips where no CUDA device is visible.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
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
#include "cuda/fwd_decode.h"
#include "cuda/fwd_sm80.h"
#include "cuda/fwd_sm90.h"
#include "cuda/fresh_process.h"
#include "cuda/pdl.h"
#include "gpuattn/attention.h"
#include "gpuattn/reference.h"

namespace gpuattn::testing {
namespace {

constexpr double kTolF16 = 5e-3;   // ||out - ref|| / ||ref||
constexpr double kTolBF16 = 1e-2;  // bf16 keeps 8 mantissa bits: P and out round ~8x coarser
constexpr double kTolLse = 1e-3;   // |lse - ref| / max(1, |ref|)

// Query rows checked when checking all of them would be slow. The fp64 reference costs ~4 ns per
// multiply-add: one row of H=32, D=128, Sk=65536 is ~2 s, so 48 rows take ~6 s on 16 cores.
constexpr int kSampledRows = 48;
// A case whose full reference needs at most this many (row x key x head x dim) steps checks every
// query row (~4 core-seconds).
constexpr double kFullCheckSteps = 1e9;

// ---- cases
// ---------------------------------------------------------------------------------------

enum class Layout : std::uint8_t {
  contiguous,  // every tensor packed row-major
  padded,      // padded head/row/batch strides with NaN in the padding; lse padded as well
  packed_qkv,  // q/k/v are slices of one [.., S, 3, H, D] buffer; out a slice of [.., S, 2, H, D]
  far_units,   // packed, but every size-1 dim of q/k/v/out has a stride of 2^40 elements (never
               // used: its index is 0; past what a TMA tensor map can hold)
};

struct Case : CaseBase<Case> {
  Layout layout = Layout::contiguous;
  // Varlen: this sequence (of no query rows) has K and V rows all NaN. No query attends them, but
  // a kernel whose last key tile of the sequence before runs past its end reads them there: masked
  // scores alone leave P = 0 times NaN in P V.
  int nan_kv_seq = -1;

  // The visibility rule of the case, as the kernels and the reference apply it.
  MaskPolicy policy() const {
    MaskPolicy m;
    m.causal = is_causal;
    m.window_left = mask.window_left;
    m.window_right = mask.window_right;
    m.global_tokens = mask.global_tokens;
    m.global_stride = mask.global_stride;
    return m;
  }

  Case in(Layout l) const {
    Case c = *this;
    c.layout = l;
    return c;
  }
  Case nan_kv(int seq) const {
    Case c = *this;
    c.nan_kv_seq = seq;
    return c;
  }

  // A readable, unique test name: f16_B2_H32kv8_Sq100_Sk1000_D128_causal_w256_0_g16_compensated
  // _qx30 ...
  std::string name() const {
    std::string s = shape_name() + mask_name();
    if (layout == Layout::padded) s += "_padded";
    if (layout == Layout::packed_qkv) s += "_packed_qkv";
    if (layout == Layout::far_units) s += "_far_units";
    if (nan_kv_seq >= 0) s += "_nan_kv" + std::to_string(nan_kv_seq);
    return s;
  }
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name();
}

Case dense(int B, int Hq, int Hkv, int Sq, int Sk, int D, DType t) {
  return dense_case<Case>(B, Hq, Hkv, Sq, Sk, D, t);
}

// Packed variable-length batch; `lk` empty means the same lengths as `lq`.
Case varlen(int Hq, int Hkv, int D, DType t, std::vector<int> lq, std::vector<int> lk = {}) {
  return varlen_case<Case>(Hq, Hkv, D, t, std::move(lq), std::move(lk));
}

constexpr DType f16 = DType::f16;
constexpr DType bf16 = DType::bf16;

// ---- small host helpers -------------------------------------------------------------------------

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  std::uint64_t s = a ^ (b * 0xd1342543de82ef95ull);
  return next_random(s);
}

std::uint32_t nan_bits(DType t) {
  switch (t) {
    case DType::f16: return 0x7e00u;
    case DType::bf16: return 0x7fc0u;
    default: return 0x7fc00000u;  // f32
  }
}
void fill_bits(void* p, DType t, std::int64_t n, std::uint32_t bits) {
  if (element_size(t) == 2) {
    std::fill_n(static_cast<std::uint16_t*>(p), n, static_cast<std::uint16_t>(bits));
  } else {
    std::fill_n(static_cast<std::uint32_t*>(p), n, bits);
  }
}
bool bits_nonfinite(std::uint16_t b, DType t) {
  return t == DType::f16 ? (b & 0x7c00u) == 0x7c00u : (b & 0x7f80u) == 0x7f80u;
}
bool bits_zero(std::uint16_t b) {
  return (b & 0x7fffu) == 0;
}

// Number of last-dimension rows of a view, and the element offset of row `o` (row-major order).
std::int64_t rows_of(const TensorView& v) {
  return v.numel() / v.shape[v.rank - 1];
}
std::int64_t row_offset(const TensorView& v, std::int64_t o) {
  std::int64_t off = 0;
  for (int d = v.rank - 2; d >= 0; --d) {
    off += (o % v.shape[d]) * v.stride[d];
    o /= v.shape[d];
  }
  return off;
}
char* elem_ptr(const TensorView& v, std::int64_t off) {
  return static_cast<char*>(v.data) + off * static_cast<std::int64_t>(element_size(v.dtype));
}

// Fills the elements of a 16-bit host view with N(0, 1) * scale, picked from normal_table (see
// there) in parallel row chunks: ~1 ns per element; the seed table has ~4e9 input elements.
void fill_normal(const TensorView& v, std::uint64_t seed, float scale) {
  const std::vector<std::uint16_t> table = table_bits16(normal_table(seed, scale), v.dtype);
  const std::int64_t inner = v.shape[v.rank - 1];
  const std::int64_t rows = rows_of(v);
  constexpr std::int64_t kRowsPerChunk = 2048;
  parallel_for((rows + kRowsPerChunk - 1) / kRowsPerChunk, [&](std::int64_t chunk) {
    std::uint64_t state = mix(seed, static_cast<std::uint64_t>(chunk) + 1);
    const std::int64_t end = std::min(rows, (chunk + 1) * kRowsPerChunk);
    for (std::int64_t o = chunk * kRowsPerChunk; o < end; ++o) {
      auto* row = reinterpret_cast<std::uint16_t*>(elem_ptr(v, row_offset(v, o)));
      pick_from_table(inner, state, [&](std::int64_t i, std::uint32_t k) { row[i] = table[k]; });
    }
  });
}

// The elements of a host view (last dim contiguous), packed row-major into a new tensor.
HostTensor gather(const TensorView& v) {
  HostTensor t(v.dtype, std::vector<std::int64_t>(v.shape.begin(), v.shape.begin() + v.rank));
  const std::size_t row_bytes =
      static_cast<std::size_t>(v.shape[v.rank - 1]) * element_size(v.dtype);
  const std::int64_t rows = rows_of(v);
  constexpr std::int64_t kRowsPerChunk = 8192;
  parallel_for((rows + kRowsPerChunk - 1) / kRowsPerChunk, [&](std::int64_t chunk) {
    const std::int64_t end = std::min(rows, (chunk + 1) * kRowsPerChunk);
    for (std::int64_t o = chunk * kRowsPerChunk; o < end; ++o) {
      std::memcpy(static_cast<char*>(t.data()) + o * row_bytes, elem_ptr(v, row_offset(v, o)),
                  row_bytes);
    }
  });
  return t;
}

// ---- one problem: inputs on host and device, poisoned outputs, checks ---------------------------

// One allocation: its host copy (inputs: NaN padding + random view elements; outputs: all NaN, the
// poison that is uploaded before each run) and its device copy.
struct Alloc {
  HostTensor host;
  DeviceBuffer dev;
};

// A strided view into an allocation.
struct Operand {
  int alloc = -1;
  std::int64_t offset = 0;  // elements
  int rank = 0;
  std::array<std::int64_t, TensorView::kMaxRank> shape{}, stride{};
};

class Problem {
 public:
  struct Outputs {
    HostTensor out, lse;  // whole allocations, as downloaded
  };

  Problem(Case c, std::uint64_t seed) : c_(std::move(c)), seed_(seed) {
    TEST_CUDA_CHECK(cudaGetDevice(&device_));
    const bool vl = c_.varlen();
    if (vl) {
      cu_q_ = make_cu_seqlens(c_.lens_q);
      cu_k_ = make_cu_seqlens(c_.lens_k);
      total_q_ = static_cast<const std::int32_t*>(cu_q_.data())[c_.B];
      total_k_ = static_cast<const std::int32_t*>(cu_k_.data())[c_.B];
    } else {
      total_q_ = std::int64_t{c_.B} * c_.Sq;
      total_k_ = std::int64_t{c_.B} * c_.Sk;
    }
    using Shape = std::vector<std::int64_t>;
    const Shape qs = vl ? Shape{total_q_, c_.Hq, c_.D} : Shape{c_.B, c_.Sq, c_.Hq, c_.D};
    const Shape ks = vl ? Shape{total_k_, c_.Hkv, c_.D} : Shape{c_.B, c_.Sk, c_.Hkv, c_.D};
    const Shape ls = vl ? Shape{c_.Hq, total_q_} : Shape{c_.B, c_.Hq, c_.Sq};

    switch (c_.layout) {
      case Layout::contiguous:
        q_ = padded_operand(c_.dtype, qs, 0);
        k_ = padded_operand(c_.dtype, ks, 0);
        v_ = padded_operand(c_.dtype, ks, 0);
        out_ = padded_operand(c_.dtype, qs, 0);
        lse_ = padded_operand(DType::f32, ls, 0);
        break;
      case Layout::padded:  // pads of 8 elements keep 16-bit strides multiples of 16 bytes
        q_ = padded_operand(c_.dtype, qs, 8);
        k_ = padded_operand(c_.dtype, ks, 8);
        v_ = padded_operand(c_.dtype, ks, 8);
        out_ = padded_operand(c_.dtype, qs, 8);
        lse_ = padded_operand(DType::f32, ls, 3);
        break;
      case Layout::far_units:
        q_ = far_units(padded_operand(c_.dtype, qs, 0));
        k_ = far_units(padded_operand(c_.dtype, ks, 0));
        v_ = far_units(padded_operand(c_.dtype, ks, 0));
        out_ = far_units(padded_operand(c_.dtype, qs, 0));
        lse_ = padded_operand(DType::f32, ls, 0);
        break;
      case Layout::packed_qkv: {
        if (c_.Hq != c_.Hkv || c_.Sq != c_.Sk || c_.lens_q != c_.lens_k) {
          throw std::logic_error("packed_qkv needs Hq == Hkv and equal q/k lengths");
        }
        const std::int64_t hd = std::int64_t{c_.Hq} * c_.D;
        const int qkv = add_alloc(c_.dtype, 3 * total_q_ * hd);
        q_ = slice_operand(qkv, 0, qs, 3);
        k_ = slice_operand(qkv, hd, qs, 3);
        v_ = slice_operand(qkv, 2 * hd, qs, 3);
        out_ = slice_operand(add_alloc(c_.dtype, 2 * total_q_ * hd), hd, qs, 2);
        lse_ = padded_operand(DType::f32, ls, 0);
        break;
      }
    }

    // Inputs: NaN where no view reaches (padding), random in the views; then upload.
    for (const Operand* op : {&q_, &k_, &v_}) {
      Alloc& a = allocs_[op->alloc];
      if (!fills_alloc(*op)) fill_bits(a.host.data(), c_.dtype, a.host.numel(), nan_bits(c_.dtype));
    }
    fill_normal(host_view(q_), mix(seed_, 1), c_.q_scale);
    fill_normal(host_view(k_), mix(seed_, 2), 1.f);
    fill_normal(host_view(v_), mix(seed_, 3), 1.f);
    if (c_.nan_kv_seq >= 0) {
      const auto s = static_cast<std::size_t>(c_.nan_kv_seq);
      if (!vl || s >= c_.lens_q.size() || c_.lens_q[s] != 0) {
        throw std::logic_error("nan_kv needs a varlen sequence of no query rows");
      }
      const auto* cu = static_cast<const std::int32_t*>(cu_k_.data());
      for (const Operand* op : {&k_, &v_}) {
        const TensorView v = host_view(*op);  // [total_k, Hkv, D]
        for (std::int64_t o = std::int64_t{cu[s]} * c_.Hkv; o < std::int64_t{cu[s + 1]} * c_.Hkv;
             ++o) {
          fill_bits(elem_ptr(v, row_offset(v, o)), c_.dtype, c_.D, nan_bits(c_.dtype));
        }
      }
    }
    for (const Operand* op : {&q_, &k_, &v_}) {
      Alloc& a = allocs_[op->alloc];
      if (a.dev.bytes() > 0) continue;  // packed_qkv: one buffer for all three
      a.dev = DeviceBuffer(a.host.bytes());
      a.dev.upload(a.host.data());
    }
    // Outputs: the host copies hold the NaN poison.
    for (const Operand* op : {&out_, &lse_}) {
      Alloc& a = allocs_[op->alloc];
      fill_bits(a.host.data(), a.host.dtype, a.host.numel(), nan_bits(a.host.dtype));
      a.dev = DeviceBuffer(a.host.bytes());
    }
    if (c_.alibi_rows > 0) {
      alibi_ = alibi_slopes_for(c_.alibi_rows == 1 ? 1 : c_.B, c_.Hq, mix(seed_, 7));
      dalibi_ = DeviceBuffer(alibi_.bytes());
      dalibi_.upload(alibi_.data());
    }
    if (vl) {
      dcu_q_ = DeviceBuffer(cu_q_.bytes());
      dcu_q_.upload(cu_q_.data());
      dcu_k_ = DeviceBuffer(cu_k_.bytes());
      dcu_k_.upload(cu_k_.data());
    }

    // Keys visible to every query row (bottom-right alignment; causal, window, global tokens).
    visible_.assign(static_cast<std::size_t>(total_q_), 0);
    const MaskPolicy mask = c_.policy();
    for (int b = 0; b < c_.B; ++b) {
      const int lq = len_q(b), lk = len_k(b);
      for (int i = 0; i < lq; ++i) {
        visible_[static_cast<std::size_t>(row0_q(b) + i)] = mask.visible_count(i, lq, lk);
      }
    }
  }

  const Case& params() const { return c_; }
  std::int64_t total_q() const { return total_q_; }

  AttentionArgs device_args() const {
    AttentionArgs a = common_args();
    a.q = device_view(q_);
    a.k = device_view(k_);
    a.v = device_view(v_);
    a.out = device_view(out_);
    if (c_.with_lse) a.lse = device_view(lse_);
    if (c_.varlen()) {
      a.cu_seqlens_q = TensorView::contiguous(dcu_q_.get(), DType::i32, Device::cuda,
                                              {std::int64_t{c_.B} + 1}, device_);
      a.cu_seqlens_k = TensorView::contiguous(dcu_k_.get(), DType::i32, Device::cuda,
                                              {std::int64_t{c_.B} + 1}, device_);
    }
    if (c_.alibi_rows > 0) a.alibi_slopes = alibi_.view(Device::cuda, dalibi_.get());
    return a;
  }

  // The same problem over the host copies, for the reference (which writes neither out nor lse).
  AttentionArgs host_args() const {
    AttentionArgs a = common_args();
    a.q = host_view(q_);
    a.k = host_view(k_);
    a.v = host_view(v_);
    a.out = host_view(out_);
    if (c_.varlen()) {
      a.cu_seqlens_q = cu_q_.view();
      a.cu_seqlens_k = cu_k_.view();
    }
    if (c_.alibi_rows > 0) a.alibi_slopes = alibi_.view();
    return a;
  }

  // Copies NaN over the whole out and lse allocations (padding included).
  void poison_outputs(cudaStream_t stream = nullptr) {
    for (const Operand* op : {&out_, &lse_}) {
      Alloc& a = allocs_[op->alloc];
      a.dev.upload(a.host.data(), stream);
    }
  }

  // Downloads the out and lse allocations; with a stream, asynchronously on it through pinned
  // memory, then waits for that stream only.
  Outputs download(cudaStream_t stream = nullptr) const {
    const Alloc& o = allocs_[out_.alloc];
    const Alloc& l = allocs_[lse_.alloc];
    Outputs r{HostTensor(o.host.dtype, o.host.shape), HostTensor(l.host.dtype, l.host.shape)};
    if (!stream) {
      o.dev.download(r.out.data());
      l.dev.download(r.lse.data());
      return r;
    }
    PinnedBuffer po(o.dev.bytes()), pl(l.dev.bytes());
    TEST_CUDA_CHECK(
        cudaMemcpyAsync(po.get(), o.dev.get(), po.bytes(), cudaMemcpyDeviceToHost, stream));
    TEST_CUDA_CHECK(
        cudaMemcpyAsync(pl.get(), l.dev.get(), pl.bytes(), cudaMemcpyDeviceToHost, stream));
    TEST_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::memcpy(r.out.data(), po.get(), po.bytes());
    std::memcpy(r.lse.data(), pl.get(), pl.bytes());
    return r;
  }

  // Device bytes of out and lse (padding included), to check that a rejected call left them alone.
  std::vector<unsigned char> output_snapshot() const {
    std::vector<unsigned char> s = allocs_[out_.alloc].dev.snapshot();
    const std::vector<unsigned char> l = allocs_[lse_.alloc].dev.snapshot();
    s.insert(s.end(), l.begin(), l.end());
    return s;
  }

  // Every output element written and finite (exactly 0 where a row sees no key), nothing written
  // outside the views, lse finite (-inf where a row sees no key), and the sampled rows within
  // tolerance of the fp64 reference.
  void expect_matches_reference(const Outputs& r) const {
    const TensorView ov = view_at(out_, r.out.data(), Device::cpu);
    const HostTensor out = gather(ov);  // [total_q, Hq, D] (dense: [B, Sq, Hq, D])
    if (!fills_alloc(out_)) {
      EXPECT_EQ(changed_outside(r.out, out_), 0) << "out written outside its strided view";
    }
    const std::int64_t hd = std::int64_t{c_.Hq} * c_.D;
    std::atomic<std::int64_t> nonfinite{0}, nonzero_empty{0};
    constexpr std::int64_t kRowsPerChunk = 1024;
    parallel_for((total_q_ + kRowsPerChunk - 1) / kRowsPerChunk, [&](std::int64_t chunk) {
      std::int64_t bad_nf = 0, bad_zero = 0;
      const auto* o = static_cast<const std::uint16_t*>(out.data());
      const std::int64_t end = std::min(total_q_, (chunk + 1) * kRowsPerChunk);
      for (std::int64_t row = chunk * kRowsPerChunk; row < end; ++row) {
        const bool empty = visible_[static_cast<std::size_t>(row)] == 0;
        for (std::int64_t e = row * hd; e < (row + 1) * hd; ++e) {
          if (bits_nonfinite(o[e], c_.dtype)) {
            ++bad_nf;
          } else if (empty && !bits_zero(o[e])) {
            ++bad_zero;
          }
        }
      }
      nonfinite += bad_nf;
      nonzero_empty += bad_zero;
    });
    EXPECT_EQ(nonfinite.load(), 0) << "NaN/inf in out: an element left unwritten, or overflow";
    EXPECT_EQ(nonzero_empty.load(), 0) << "out must be 0 in rows that see no key";

    std::vector<float> lse;  // dense [B, Hq, Sq], varlen [Hq, total_q]
    if (c_.with_lse) {
      const TensorView lv = view_at(lse_, r.lse.data(), Device::cpu);
      const HostTensor packed = gather(lv);
      const auto* p = static_cast<const float*>(packed.data());
      lse.assign(p, p + packed.numel());
      if (!fills_alloc(lse_)) {
        EXPECT_EQ(changed_outside(r.lse, lse_), 0) << "lse written outside its strided view";
      }
      std::int64_t bad = 0;
      for (std::int64_t row = 0; row < total_q_; ++row) {
        const bool empty = visible_[static_cast<std::size_t>(row)] == 0;
        for (int h = 0; h < c_.Hq; ++h) {
          const float l = lse[static_cast<std::size_t>(lse_index(row, h))];
          bad += empty ? !(std::isinf(l) && l < 0) : !std::isfinite(l);
        }
      }
      EXPECT_EQ(bad, 0) << "lse entries that are NaN/+inf, or -inf for a row that sees keys, or "
                           "not -inf for a row that sees none";
    } else {
      EXPECT_EQ(changed_outside(r.lse, Operand{}), 0) << "lse written although not requested";
    }

    const std::vector<std::int64_t> rows = pick_rows();
    const ReferenceResult ref = parallel_reference(host_args(), rows);
    const Comparison cmp = compare(ref, out, c_.Hq, c_.D, c_.with_lse ? &lse : nullptr,
                                   [&](std::int64_t row, int h) { return lse_index(row, h); });
    const double tol = c_.dtype == DType::bf16 ? kTolBF16 : kTolF16;
    EXPECT_EQ(cmp.nonfinite, 0);
    EXPECT_LE(cmp.rel_err, tol) << "max_abs " << cmp.max_abs << ", cosine " << cmp.cosine;
    if (c_.with_lse) {
      EXPECT_LE(cmp.lse_rel, kTolLse);
    }
    const double abs_tol = max_abs_tol(c_.dtype);
    const WorstElement worst = expect_out_within_max_abs(
        ref, out, c_.Hq, c_.D, abs_tol, c_.B, c_.Sq,
        c_.varlen() ? static_cast<const std::int32_t*>(cu_q_.data()) : nullptr);
    std::printf(
        "[ checked  ] %s: %zu of %lld rows, rel_err %.2e (tol %.0e), max_abs %.2e (%.2f of the "
        "bound %.0e * max(1, |ref|)), lse_rel %.2e\n",
        c_.name().c_str(), rows.size(), static_cast<long long>(total_q_), cmp.rel_err, tol,
        cmp.max_abs, worst.ratio, abs_tol, cmp.lse_rel);
  }

 private:
  int len_q(int b) const { return c_.varlen() ? c_.lens_q[static_cast<std::size_t>(b)] : c_.Sq; }
  int len_k(int b) const { return c_.varlen() ? c_.lens_k[static_cast<std::size_t>(b)] : c_.Sk; }
  std::int64_t row0_q(int b) const {
    return c_.varlen() ? static_cast<const std::int32_t*>(cu_q_.data())[b]
                       : std::int64_t{b} * c_.Sq;
  }
  std::int64_t lse_index(std::int64_t row, int h) const {
    if (c_.varlen()) return h * total_q_ + row;
    return (row / c_.Sq * c_.Hq + h) * c_.Sq + row % c_.Sq;
  }

  AttentionArgs common_args() const {
    AttentionArgs a;
    if (c_.varlen()) {
      a.max_seqlen_q = c_.Sq;
      a.max_seqlen_k = c_.Sk;
    }
    a.causal = c_.is_causal;
    a.mask = c_.mask;
    a.precision = c_.precision;
    a.softcap = c_.softcap;
    return a;
  }

  int add_alloc(DType t, std::int64_t elems) {
    allocs_.push_back(Alloc{HostTensor(t, {elems}), DeviceBuffer()});
    return static_cast<int>(allocs_.size()) - 1;
  }

  // A view of `shape` in its own allocation. Each stride gets `pad` more elements per level above
  // the last dim (0: contiguous), and the view starts `pad` elements in.
  Operand padded_operand(DType t, const std::vector<std::int64_t>& shape, std::int64_t pad) {
    Operand op;
    op.rank = static_cast<int>(shape.size());
    op.offset = pad;
    std::int64_t last = op.offset;
    for (int d = op.rank - 1; d >= 0; --d) {
      op.shape[d] = shape[static_cast<std::size_t>(d)];
      op.stride[d] =
          d == op.rank - 1 ? 1 : op.shape[d + 1] * op.stride[d + 1] + pad * (op.rank - 1 - d);
      last += (op.shape[d] - 1) * op.stride[d];
    }
    op.alloc = add_alloc(t, last + 1 + pad);
    return op;
  }

  // `op` with each size-1 dim (but the last) 2^40 elements apart: the same elements.
  static Operand far_units(Operand op) {
    spread_unit_dims(op);
    return op;
  }

  // Slice `offset` of a [.., S, n, H, D] allocation: rows are n * H * D apart.
  Operand slice_operand(int alloc, std::int64_t offset, const std::vector<std::int64_t>& shape,
                        int n) {
    Operand op;
    op.alloc = alloc;
    op.offset = offset;
    op.rank = static_cast<int>(shape.size());
    for (int d = 0; d < op.rank; ++d) op.shape[d] = shape[static_cast<std::size_t>(d)];
    const int r = op.rank;
    op.stride[r - 1] = 1;
    op.stride[r - 2] = op.shape[r - 1];
    op.stride[r - 3] = n * op.shape[r - 2] * op.shape[r - 1];
    if (r == 4) op.stride[0] = op.shape[1] * op.stride[1];
    return op;
  }

  TensorView view_at(const Operand& op, const void* base, Device dev) const {
    TensorView v;
    v.dtype = allocs_[op.alloc].host.dtype;
    // Host copies are read-only in the checks; TensorView has no const flavour.
    v.data = const_cast<char*>(static_cast<const char*>(base)) +
             op.offset * static_cast<std::int64_t>(element_size(v.dtype));
    v.device = dev;
    v.device_index = dev == Device::cuda ? device_ : 0;
    v.rank = op.rank;
    v.shape = op.shape;
    v.stride = op.stride;
    return v;
  }
  TensorView host_view(const Operand& op) const {
    return view_at(op, allocs_[op.alloc].host.data(), Device::cpu);
  }
  TensorView device_view(const Operand& op) const {
    return view_at(op, allocs_[op.alloc].dev.get(), Device::cuda);
  }

  bool fills_alloc(const Operand& op) const {
    TensorView v;
    v.rank = op.rank;
    v.shape = op.shape;
    return op.offset == 0 && v.numel() == allocs_[op.alloc].host.numel();
  }

  // Elements of the downloaded allocation `a` outside `op` (all of them for an empty Operand)
  // that no longer hold the NaN poison.
  std::int64_t changed_outside(const HostTensor& a, const Operand& op) const {
    HostTensor copy = a;
    const std::uint32_t poison = nan_bits(a.dtype);
    if (op.rank > 0) {
      const TensorView v = view_at(op, copy.data(), Device::cpu);
      const std::int64_t inner = v.shape[v.rank - 1];
      for (std::int64_t o = 0; o < rows_of(v); ++o) {
        fill_bits(elem_ptr(v, row_offset(v, o)), v.dtype, inner, poison);
      }
    }
    std::int64_t changed = 0;
    const std::size_t es = element_size(a.dtype);
    const auto* p = static_cast<const unsigned char*>(copy.data());
    for (std::int64_t i = 0; i < copy.numel(); ++i) {
      std::uint32_t bits = 0;
      std::memcpy(&bits, p + i * es, es);  // little-endian: the low bytes
      changed += bits != poison;
    }
    return changed;
  }

  // All rows when that is cheap; otherwise the first and last row of every sequence, the last row
  // that sees no key and the first that sees one (Sq > Sk under causal masking, or a window),
  // the last global query row and the first after it, and random rows up to kSampledRows.
  std::vector<std::int64_t> pick_rows() const {
    double steps = double(total_q_) * c_.Sk;  // the reference tests every key of a row
    for (const int n : visible_) steps += double(n) * c_.Hq * c_.D;
    std::vector<std::int64_t> rows;
    if (steps <= kFullCheckSteps) {
      for (std::int64_t r = 0; r < total_q_; ++r) rows.push_back(r);
      return rows;
    }
    std::set<std::int64_t> pick;
    for (int b = 0; b < c_.B; ++b) {
      const int lq = len_q(b), lk = len_k(b);
      if (lq == 0) continue;
      pick.insert(row0_q(b));
      pick.insert(row0_q(b) + lq - 1);
      for (int i = 0; i < lq; ++i) {
        if (visible_[static_cast<std::size_t>(row0_q(b) + i)] == 0) continue;
        if (i > 0) {
          pick.insert(row0_q(b) + i - 1);  // last row that sees no key
          pick.insert(row0_q(b) + i);      // first row that sees one
        }
        break;
      }
      const int first_plain = c_.mask.global_tokens - (lk - lq);  // row at position G
      for (const int i : {first_plain - 1, first_plain}) {
        if (c_.mask.global_tokens > 0 && i >= 0 && i < lq) pick.insert(row0_q(b) + i);
      }
    }
    std::mt19937_64 rng(mix(seed_, 99));
    std::uniform_int_distribution<std::int64_t> any(0, total_q_ - 1);
    while (pick.size() < static_cast<std::size_t>(std::min<std::int64_t>(kSampledRows, total_q_))) {
      pick.insert(any(rng));
    }
    return std::vector<std::int64_t>(pick.begin(), pick.end());
  }

  Case c_;
  std::uint64_t seed_;
  int device_ = 0;
  std::int64_t total_q_ = 0, total_k_ = 0;
  std::vector<Alloc> allocs_;
  Operand q_, k_, v_, out_, lse_;
  HostTensor cu_q_, cu_k_, alibi_;
  DeviceBuffer dcu_q_, dcu_k_, dalibi_;
  std::vector<int> visible_;  // keys visible to each packed query row
};

// Poison, run on the default stream, wait, download.
Problem::Outputs run_once(Problem& p) {
  p.poison_outputs();
  attention_forward(p.device_args());
  TEST_CUDA_CHECK(cudaGetLastError());
  TEST_CUDA_CHECK(cudaDeviceSynchronize());
  return p.download();
}

// Suite and test name, parameter included: every case gets its own seed.
std::string current_test_name() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "." + info->name();
}

// ---- fixtures -----------------------------------------------------------------------------------

class AttentionCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  }
};

class AttentionCuda : public AttentionCudaTest, public ::testing::WithParamInterface<Case> {};

// Under GPUATTN_KERNEL=sm90_ws_192x128 (ctest's sm90_192. copies of the head-dim-64 cases) a dense
// or causal head-dim-64 call in standard precision must pick the 3-consumer kernel wherever the
// sm_90a kernel runs, and every other call must not: else those copies would re-run the default
// kernel and pass for the wrong reason. Likewise under GPUATTN_KERNEL=sm90_ws_128x128 (the
// sm90_2stage. copies of the head-dim-128 and causal head-dim-64 cases) no call may take the 3- or
// 4-stage instantiations, and under the default dispatch a causal head-dim-64 call of fewer than
// kD64FourStageMaxRows rows must take the 4-stage one (sm90_ws_128x128_s4), and no other call;
// under GPUATTN_KERNEL=sm90_ws_128x128_s4 (the sm90_s4. copies of the causal head-dim-64 cases)
// every causal one must; under GPUATTN_KERNEL=sm90_ws_64x128_2cta (sm90_2cta.) every dense or
// causal head-dim-64 one but varlen ones must take the one-consumer kernel; under
// GPUATTN_KERNEL=sm90_ws_128x128_s3 (sm90_s3.) every dense or causal head-dim-128 one in standard
// precision must take the 3-stage kernel, at any length.
void expect_forced_kernel(const AttentionArgs& args) {
  const char* env = std::getenv("GPUATTN_KERNEL");
  const std::string want = env ? env : "auto";
  const FwdParams fp = make_fwd_params(args);
  const FwdKernel k = cuda_forward_kernel(fp);
  const std::string name = tile_config(k).name;
  if (name.rfind("sm90_", 0) != 0) return;  // no sm_90a kernel on this device (or a decode call)
  // ALiBi calls take the kernels that compile the bias whatever is forced (AlibiCallsTake...).
  if (fp.has_alibi()) return;
  const bool d64_dense_or_causal =
      fp.head_dim == 64 && fp.precision == Precision::standard && fp.dense_or_causal();
  if (want == "sm90_ws_192x128") {
    EXPECT_EQ(k == FwdKernel::sm90_ws_192x128, d64_dense_or_causal) << "picked " << name;
  } else if (want == "sm90_ws_64x128_2cta") {
    // The two-CTA kernel compiles no varlen code (FwdTraits::kTakesVarlen): varlen calls keep the
    // rule under the force.
    EXPECT_EQ(k == FwdKernel::sm90_ws_64x128_2cta, d64_dense_or_causal && !fp.is_varlen())
        << "picked " << name;
  } else if (want == "sm90_ws_128x128_s4") {
    EXPECT_EQ(k == FwdKernel::sm90_ws_128x128_s4, d64_dense_or_causal && fp.causal)
        << "picked " << name;
  } else if (want == "sm90_ws_128x128_s3") {
    EXPECT_EQ(k == FwdKernel::sm90_ws_128x128_s3,
              fp.head_dim == 128 && fp.precision == Precision::standard && fp.dense_or_causal())
        << "picked " << name;
  } else if (want == "sm90_ws_128x128") {
    EXPECT_NE(k, FwdKernel::sm90_ws_128x128_s3) << "picked " << name;
    EXPECT_NE(k, FwdKernel::sm90_ws_128x128_s4) << "picked " << name;
    EXPECT_NE(k, FwdKernel::sm90_ws_64x128_2cta) << "picked " << name;
  } else if (want == "auto" && k == FwdKernel::sm90_ws_64x128_2cta) {
    EXPECT_TRUE(d64_dense_or_causal && !fp.is_varlen()) << "picked " << name;
  } else if (want == "auto" && k != FwdKernel::sm90_ws_192x128) {
    EXPECT_EQ(k == FwdKernel::sm90_ws_128x128_s4,
              d64_dense_or_causal && fp.causal && fp.seqlen_q < kD64FourStageMaxRows)
        << "picked " << name;
  }
}

TEST_P(AttentionCuda, MatchesReference) {
  Problem p(GetParam(), seed_of(current_test_name()));
  p.expect_matches_reference(run_once(p));
  expect_forced_kernel(p.device_args());
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return info.param.name();
}

const std::vector<int> kLens = {1, 17, 513, 2048};

// The seed report's table, H = 32, D = 128, fp16; causal, bf16 and compensated on a subset.
std::vector<Case> seed_table() {
  std::vector<Case> cs;
  const std::pair<int, int> table[] = {{1, 1024},  {2, 2048},  {4, 4096}, {1, 8192},
                                       {2, 16384}, {1, 32768}, {1, 65536}};
  for (auto [B, S] : table) cs.push_back(dense(B, 32, 32, S, S, 128, f16));
  for (auto [B, S] : {table[0], table[2], table[4], table[6]}) {
    cs.push_back(dense(B, 32, 32, S, S, 128, f16).causal());
  }
  cs.push_back(dense(2, 32, 32, 2048, 2048, 128, f16).compensated());
  cs.push_back(dense(1, 32, 32, 8192, 8192, 128, f16).causal().compensated());
  cs.push_back(dense(4, 32, 32, 4096, 4096, 128, bf16));
  cs.push_back(dense(1, 32, 32, 32768, 32768, 128, bf16).causal().compensated());
  cs.push_back(dense(2, 16, 16, 8192, 8192, 64, f16).causal());
  cs.push_back(dense(1, 32, 32, 16384, 16384, 64, bf16));
  return cs;
}
INSTANTIATE_TEST_SUITE_P(SeedTable, AttentionCuda, ::testing::ValuesIn(seed_table()), case_name);

// Lengths that are not multiples of any tile: S = 1, 17, 1000, 4097.
INSTANTIATE_TEST_SUITE_P(
    AwkwardLengths, AttentionCuda,
    ::testing::Values(dense(2, 8, 8, 1, 1, 128, f16), dense(3, 4, 4, 1, 1, 64, bf16).causal(),
                      dense(3, 4, 4, 17, 17, 64, bf16).causal(),
                      dense(2, 8, 8, 17, 17, 128, f16).no_lse(),
                      dense(2, 16, 16, 1000, 1000, 128, f16).causal(),
                      dense(1, 8, 8, 1000, 1000, 64, bf16).compensated(),
                      dense(1, 8, 8, 4097, 4097, 128, bf16).causal(),
                      dense(2, 4, 4, 4097, 4097, 64, f16).compensated().no_lse()),
    case_name);

// Last key tiles of 128 keys that the sm_90a 3-consumer and 4-stage causal kernels and the
// 3-stage head-dim-128 kernel's causal twin run on their first 64 keys only (FwdTraits::kHalfLast;
// the other kernels on the sm90_192. and default variants) and their neighbours: 64 valid keys
// (half), 65 (whole), 1; causal with rows ending on a 64-key boundary, and bottom-right diagonals
// 248 and 64 keys to the right.
INSTANTIATE_TEST_SUITE_P(HalfLastTile, AttentionCuda,
                         ::testing::Values(dense(2, 8, 8, 192, 192, 64, f16),
                                           dense(2, 8, 8, 193, 193, 64, bf16),
                                           dense(1, 8, 2, 129, 129, 128, f16),
                                           dense(2, 8, 8, 192, 192, 128, bf16),
                                           dense(2, 8, 8, 320, 320, 64, f16).causal(),
                                           dense(1, 8, 4, 576, 576, 128, bf16).causal(),
                                           dense(2, 4, 4, 200, 448, 64, bf16).causal(),
                                           dense(2, 4, 4, 256, 320, 128, f16).causal().no_lse()),
                         case_name);

// Logit soft-capping (AttentionArgs::softcap) on whichever kernel the dispatch picks (ctest's
// sm80. and sm90_*. copies run the cases on the others): logits of ~4-8 sigma (q x 4) that the
// caps bend, every head dim and dtype, causal and Sq != Sk, GQA, varlen with rows that see no
// key, a window with global tokens (the masked sm_90a kernel), compensated precision, the dense
// kernel's half last tile (193 rows), head dim 256's wide tiles (1024 keys and more), and
// decode-shaped calls (the decode kernel: one and four rows per KV head, causal), with a
// fractional cap; and caps above FwdParams::kFastTanhMaxCap (the exact tanh: 3000 to 1e6, nearly no
// cap, where the fast tanh's absolute error would move the logits by up to 0.25).
INSTANTIATE_TEST_SUITE_P(
    Softcap, AttentionCuda,
    ::testing::Values(dense(2, 8, 8, 300, 300, 64, f16).q_times(4).capped(5),
                      dense(1, 8, 2, 257, 700, 128, bf16).causal().q_times(4).capped(30),
                      dense(2, 4, 4, 130, 130, 256, f16).q_times(4).capped(10),
                      dense(1, 8, 8, 1000, 100, 128, f16).causal().q_times(4).capped(8),
                      dense(3, 32, 8, 1, 999, 128, bf16).q_times(4).capped(20),
                      dense(2, 16, 4, 4, 777, 64, f16).causal().q_times(4).capped(2.5f),
                      dense(2, 8, 8, 193, 193, 64, bf16).causal().q_times(4).capped(7),
                      dense(1, 4, 2, 700, 1500, 256, bf16).causal().q_times(4).capped(15),
                      dense(1, 8, 8, 2100, 2100, 128, f16).q_times(4).capped(50),
                      varlen(8, 2, 64, bf16, {1, 0, 300, 17}, {40, 5, 300, 0})
                          .causal()
                          .q_times(4)
                          .capped(6),
                      varlen(8, 8, 128, f16, {513, 1, 200}, {513, 64, 1100}).q_times(4).capped(9),
                      dense(1, 4, 4, 600, 600, 128, f16)
                          .window(64, 16)
                          .globals(8)
                          .q_times(4)
                          .capped(12),
                      dense(1, 8, 8, 333, 333, 64, f16).compensated().q_times(4).capped(4),
                      dense(1, 8, 2, 400, 400, 128, bf16).causal().compensated().q_times(4).capped(3),
                      dense(2, 8, 8, 300, 300, 64, f16).q_times(4).capped(1e6f),
                      dense(1, 8, 2, 257, 700, 128, bf16).causal().q_times(4).capped(3000),
                      dense(1, 4, 4, 300, 300, 256, f16).q_times(4).capped(2e4f),
                      dense(3, 32, 8, 1, 999, 128, bf16).q_times(4).capped(1e5f)),
    case_name);

// Soft-capping does not move the dispatch: a soft-capped call takes the kernel its uncapped twin
// takes (the sm_90a kernels on Hopper, the decode kernel for decode shapes, the sm_80 kernel
// elsewhere), under every GPUATTN_KERNEL of the GPU ctest; except caps above the fast tanh's,
// which no sm_90a kernel takes.
TEST_F(AttentionCudaTest, SoftcappedCallsTakeTheUncappedKernel) {
  for (const Case& c : {dense(1, 8, 8, 512, 512, 128, f16), dense(4, 32, 8, 1, 4096, 128, bf16),
                        dense(1, 16, 16, 4096, 4096, 64, f16).causal(),
                        dense(1, 16, 16, 1024, 1024, 64, f16), dense(2, 8, 8, 2048, 2048, 256, bf16),
                        dense(1, 8, 8, 700, 700, 128, f16).window(64, 16).globals(8),
                        dense(1, 8, 8, 333, 333, 64, f16).compensated()}) {
    Problem plain(c, 1), capped(c.capped(5), 1), huge(c.capped(1000), 1);
    const FwdKernel want = cuda_forward_kernel(make_fwd_params(plain.device_args()));
    const FwdKernel got = cuda_forward_kernel(make_fwd_params(capped.device_args()));
    EXPECT_EQ(got, want) << c.name() << ": capped " << tile_config(got).name << ", uncapped "
                         << tile_config(want).name;
    // Above FwdParams::kFastTanhMaxCap (the exact tanh) not the sm_90a kernels, which compile
    // the fast form only: the sm_80 kernel, or the decode kernel for a decode call.
    const FwdKernel exact = cuda_forward_kernel(make_fwd_params(huge.device_args()));
    const std::string exact_name = tile_config(exact).name;
    EXPECT_NE(exact_name.substr(0, 5), "sm90_") << c.name() << ": capped at 1000 " << exact_name;
    if (want == FwdKernel::decode_16x64) EXPECT_EQ(exact, want) << c.name();
  }
}

// ALiBi (AttentionArgs::alibi_slopes) on whichever kernel the dispatch picks (ctest's sm80. and
// sm90_*. copies run the cases on the others): the sm_90a kernels' dense loop for dense and causal
// calls on Hopper (and windows alone at head dim 128), the decode kernel for decode shapes, the
// sm_80 kernel's masked instantiations for the rest and elsewhere. Slopes a head and a sequence
// and head (the paper's, each sequence's scaled differently), every head dim and dtype, dense and
// causal with Sq != Sk both ways (rows that see no key), GQA and MQA, varlen with rows of one key
// and empty sequences, decode shapes (one and four rows per KV head, GQA rows of several heads in
// one tile: each row's own slope), the dense kernel's half last tile (193 rows), head dim 256's
// wide tiles (1024 keys and more), windows (alone at head dims 64 and 128, and with global tokens:
// sm_80), soft-capping (the bias after the tanh), compensated precision (both head dim 256
// splits), and logits large enough (q x 4) that a wrong bias would show.
INSTANTIATE_TEST_SUITE_P(
    Alibi, AttentionCuda,
    ::testing::Values(dense(2, 8, 8, 300, 300, 64, f16).alibi(),
                      dense(2, 8, 2, 257, 700, 128, bf16).causal().alibi(true),
                      dense(2, 4, 4, 130, 130, 256, f16).q_times(4).alibi(true),
                      dense(1, 8, 8, 1000, 100, 128, f16).causal().alibi(),
                      dense(2, 8, 8, 77, 1500, 64, bf16).alibi(true),
                      dense(3, 32, 8, 1, 999, 128, bf16).alibi(true),
                      dense(2, 16, 4, 4, 777, 64, f16).causal().alibi(),
                      dense(1, 16, 1, 513, 513, 64, f16).causal().q_times(4).alibi(),
                      dense(1, 4, 2, 700, 1500, 256, bf16).causal().alibi(true),
                      varlen(8, 2, 64, bf16, {1, 0, 300, 17}, {40, 5, 300, 0}).causal().alibi(true),
                      varlen(8, 8, 128, f16, {513, 1, 200}, {513, 1, 1100}).alibi(true),
                      dense(1, 4, 4, 600, 600, 128, f16).window(64, 16).globals(8).alibi(true),
                      dense(2, 8, 8, 300, 300, 64, f16).q_times(4).capped(5).alibi(true),
                      dense(1, 8, 2, 400, 400, 128, bf16).causal().capped(1e5f).alibi(),
                      dense(1, 8, 8, 333, 333, 64, f16).compensated().alibi(true),
                      dense(1, 4, 4, 300, 300, 256, bf16).causal().compensated().alibi(),
                      dense(2, 8, 8, 193, 193, 64, bf16).causal().q_times(4).alibi(true),
                      dense(1, 16, 16, 1024, 1024, 64, f16).alibi(),
                      dense(4, 32, 8, 1024, 1024, 64, f16).causal().alibi(true),
                      dense(1, 8, 8, 2100, 2100, 128, f16).alibi(true),
                      dense(1, 8, 8, 1500, 1500, 256, bf16).alibi(),
                      // The 3-stage D128 kernel's causal twin's half last tile (193 rows).
                      dense(2, 8, 4, 193, 193, 128, bf16).causal().q_times(4).alibi(true),
                      // Windows alone at head dim 128: the sm_90a dense loop's tiles from the
                      // window's first (t_first), edges masked, and Sq != Sk both ways.
                      dense(2, 8, 8, 1000, 1000, 128, f16).window(100, 100).alibi(true),
                      dense(1, 8, 2, 1000, 1000, 128, bf16).causal().window(256, 0).q_times(4).alibi(),
                      dense(1, 8, 8, 700, 1500, 128, f16).window(37, 130).alibi(true),
                      dense(1, 8, 8, 1500, 700, 128, bf16).causal().window(300, 0).alibi(),
                      varlen(8, 8, 128, f16, {513, 1, 200}, {513, 1, 1100}).window(64, 64).alibi(true),
                      dense(1, 8, 8, 1000, 1000, 64, f16).window(64, 64).alibi(true),
                      // Grids where the 3-consumer kernel pays under the default dispatch (its
                      // ALiBi instantiation; ctest's sm90_192. copies force it on the others).
                      dense(1, 132, 132, 384, 384, 64, bf16).alibi(true),
                      dense(1, 32, 8, 2048, 2048, 64, f16).causal().alibi()),
    case_name);

// An ALiBi call takes the kernel its plain twin takes (the sm_90a kernels on Hopper, the decode
// kernel for decode shapes, the sm_80 kernel elsewhere), under every GPUATTN_KERNEL of the GPU
// ctest, except that on Hopper at head dim 64 it is the 2-consumer kernel (whose dense loop
// compiles the bias: FwdTraits::kAlibi), or the 3-consumer one where the plain call takes that
// (its ALiBi instantiation), and that with global tokens, a window at head dims 64 and 256, or
// compensated precision it is the sm_80 kernel's. (At head dim 128 the 3-stage and 2-stage
// kernels, and at 256 both kernels, have instantiations with the bias.)
TEST_F(AttentionCudaTest, AlibiCallsTakeTheirPlainKernel) {
  for (const Case& c : {dense(1, 8, 8, 512, 512, 128, f16), dense(4, 32, 8, 1, 4096, 128, bf16),
                        dense(16, 16, 16, 1024, 1024, 128, f16).causal(),
                        dense(1, 8, 8, 4096, 4096, 128, bf16),
                        dense(1, 16, 16, 4096, 4096, 64, f16).causal(),
                        dense(1, 16, 16, 1024, 1024, 64, f16), dense(4, 32, 8, 4096, 4096, 64, f16),
                        dense(2, 8, 8, 2048, 2048, 256, bf16),
                        dense(1, 8, 8, 700, 700, 128, f16).window(64, 16).globals(8),
                        dense(1, 8, 8, 700, 700, 128, f16).window(64, 16),
                        dense(2, 8, 8, 1000, 1000, 128, bf16).causal().window(256, 0),
                        dense(1, 8, 8, 1000, 1000, 64, f16).window(64, 64),
                        dense(1, 8, 8, 1000, 1000, 256, bf16).window(64, 64),
                        dense(1, 132, 132, 384, 384, 64, bf16),
                        dense(1, 8, 8, 333, 333, 64, f16).compensated()}) {
    Problem plain(c, 1), biased(c.alibi(), 1), per_seq(c.alibi(true), 1);
    const FwdKernel want = cuda_forward_kernel(make_fwd_params(plain.device_args()));
    for (const Problem* p : {&biased, &per_seq}) {
      const FwdKernel got = cuda_forward_kernel(make_fwd_params(p->device_args()));
      const std::string name = tile_config(got).name;
      const std::string plain_name = tile_config(want).name;
      const bool window = c.mask.window_left >= 0 || c.mask.window_right >= 0;
      if ((window && c.D != 128) || c.mask.global_tokens > 0 ||
          c.precision != Precision::standard) {
        EXPECT_EQ(name.substr(0, 5), "sm80_") << c.name() << ": with ALiBi " << name;
      } else if (plain_name.substr(0, 5) == "sm90_" && c.D == 64) {
        const bool three = want == FwdKernel::sm90_ws_192x128;
        EXPECT_EQ(got, three ? FwdKernel::sm90_ws_192x128 : FwdKernel::sm90_ws_128x128)
            << c.name() << ": with ALiBi " << name << ", plain " << plain_name;
      } else {
        EXPECT_EQ(got, want) << c.name() << ": with ALiBi " << name << ", plain "
                             << tile_config(want).name;
      }
    }
  }
}

// Bad slopes on the device are named on the host copy (check_indices) before any kernel, out and
// lse untouched; unchecked, the call trusts them. The view's shape, dtype and place are named
// whatever check_indices says.
TEST_F(AttentionCudaTest, BadAlibiSlopesAreNamed) {
  Problem p(dense(2, 4, 2, 33, 70, 64, f16).causal().alibi(true), 5);
  HostTensor slopes = alibi_slopes_for(2, 4, 9);
  DeviceBuffer d(slopes.bytes());
  const auto rejected = [&](const AttentionArgs& a, const std::string& word) {
    p.poison_outputs();
    TEST_CUDA_CHECK(cudaDeviceSynchronize());
    const auto before = p.output_snapshot();
    const std::string msg = error_of([&] { attention_forward(a); });
    EXPECT_NE(msg.find(word), std::string::npos) << "'" << msg << "' lacks '" << word << "'";
    TEST_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(p.output_snapshot() == before) << "out changed by a rejected call";
  };
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -1e30f}) {
    static_cast<float*>(slopes.data())[6] = bad;  // [1][2]
    d.upload(slopes.data());
    AttentionArgs a = p.device_args();
    a.alibi_slopes = slopes.view(Device::cuda, d.get());
    rejected(a, "alibi_slopes[1][2]");
  }
  static_cast<float*>(slopes.data())[6] = 0.25f;
  d.upload(slopes.data());
  AttentionArgs a = p.device_args();
  a.alibi_slopes = slopes.view(Device::cuda, d.get());
  a.alibi_slopes.rank = 1;  // [3]: neither [Hq = 4] nor [B = 2, Hq = 4]
  a.alibi_slopes.shape[0] = 3;
  a.alibi_slopes.stride[0] = 1;
  rejected(a, "alibi_slopes has shape [3]");
  a.alibi_slopes = slopes.view();  // host memory beside device q
  rejected(a, "alibi_slopes is on cpu");
  // Unchecked: trusted and run.
  a = p.device_args();
  a.check_indices = false;
  p.poison_outputs();
  attention_forward(a);
  TEST_CUDA_CHECK(cudaDeviceSynchronize());
  p.expect_matches_reference(p.download());
}

// Sq != Sk, causal masks bottom-right aligned: with Sq = 1000, Sk = 100 the first 900 rows see no
// key (out 0, lse -inf).
INSTANTIATE_TEST_SUITE_P(
    SeqlenMismatch, AttentionCuda,
    ::testing::Values(dense(2, 8, 8, 100, 1000, 128, f16).causal(),
                      dense(2, 8, 8, 1000, 100, 128, f16).causal(),
                      dense(1, 8, 8, 100, 1000, 64, bf16),
                      dense(1, 8, 8, 1000, 100, 64, bf16).causal().compensated(),
                      dense(2, 8, 8, 1, 4097, 128, f16).causal(),
                      dense(1, 4, 4, 4097, 17, 64, f16).causal(),
                      dense(1, 4, 4, 17, 4097, 128, bf16).causal()),
    case_name);

// GQA 32:8 and MQA 16:1.
INSTANTIATE_TEST_SUITE_P(
    GroupedHeads, AttentionCuda,
    ::testing::Values(dense(2, 32, 8, 2048, 2048, 128, f16).causal(),
                      dense(1, 32, 8, 1000, 1000, 64, bf16),
                      dense(2, 32, 8, 4097, 4097, 128, bf16).causal().compensated(),
                      dense(2, 16, 1, 1024, 1024, 128, f16).causal(),
                      dense(1, 16, 1, 4097, 4097, 64, bf16),
                      dense(1, 16, 1, 100, 1000, 128, f16).causal().no_lse()),
    case_name);

// Packed batches; lse is [Hq, total_q]. Different q/k lengths per sequence leave whole sequences
// of causal rows without keys; a zero-length sequence on either side must work too.
INSTANTIATE_TEST_SUITE_P(
    Varlen, AttentionCuda,
    ::testing::Values(varlen(16, 16, 128, f16, kLens), varlen(16, 4, 64, bf16, kLens).causal(),
                      varlen(16, 16, 128, f16, kLens).causal().compensated(),
                      varlen(8, 8, 64, f16, kLens, {2048, 513, 17, 1}).causal(),
                      varlen(8, 2, 128, bf16, kLens, {17, 1, 2048, 513}).causal().compensated(),
                      varlen(8, 8, 128, f16, {1, 0, 513, 300}, {17, 300, 0, 2048}),
                      varlen(16, 16, 128, bf16, kLens).no_lse()),
    case_name);

// A query-less sequence of NaN keys and values right after sequences whose last key tile runs into
// it (140, 5 and 1100 keys: partial tiles of every kernel's key tile), causal or not, at every
// head dim, and with query lengths of the decode kernel: masked scores alone would leave P = 0
// times NaN in P V. The sm_90a kernels read V's last tile of a sequence through a map that ends
// there (zeros past it); the others never read past a sequence's keys.
INSTANTIATE_TEST_SUITE_P(
    VarlenNeighbours, AttentionCuda,
    ::testing::Values(
        varlen(8, 2, 128, bf16, {200, 0, 150}, {140, 100, 130}).nan_kv(1),
        varlen(4, 4, 128, f16, {130, 0, 300, 64}, {5, 200, 260, 0}).causal().nan_kv(1),
        varlen(8, 8, 64, f16, {200, 0, 150}, {140, 100, 130}).nan_kv(1),
        varlen(8, 2, 64, bf16, {300, 0, 70}, {1100, 90, 70}).causal().nan_kv(1),
        varlen(4, 4, 256, bf16, {200, 0, 150}, {140, 100, 130}).nan_kv(1),
        varlen(4, 2, 256, f16, {64, 0, 1}, {1100, 300, 1}).causal().nan_kv(1),
        varlen(8, 2, 128, f16, {200, 0, 150}, {140, 100, 130}).compensated().nan_kv(1),
        // query lengths the decode kernel takes
        varlen(8, 2, 128, f16, {1, 0, 2}, {140, 100, 130}).nan_kv(1),
        varlen(16, 4, 64, bf16, {3, 0, 1}, {1100, 90, 70}).causal().nan_kv(1)),
    case_name);

// A varlen call whose packed k and v (or q and out) have no rows at all, every sequence empty on
// that side, through valid pointers to one row of storage: a tensor map of zero rows is an error in
// cuTensorMapEncodeTiled, which the sm_90a kernels (16-bit and FP8) raised as a cuda_error until
// their maps covered max(rows, 1). Query rows without keys get out = 0 and lse = -inf; a call
// without query rows writes nothing. Every head dim, both 16-bit types, causal or not, a window,
// compensated; under each GPUATTN_KERNEL of the GPU ctest. max_seqlen_q 130 on both sides keeps
// the calls off the decode kernel (no maps): where the sm_90a kernels run, they must take them.
struct EmptySide {
  DType dtype;
  int D;
  bool no_keys;  // else no query rows
  bool causal = false, window = false, compensated = false;
};

void expect_empty_side_runs(const EmptySide& c) {
  SCOPED_TRACE(std::string(to_string(c.dtype)) + " D" + std::to_string(c.D) +
               (c.no_keys ? " no keys" : " no queries") + (c.causal ? " causal" : "") +
               (c.window ? " window" : "") + (c.compensated ? " compensated" : ""));
  const int Hq = 4, Hkv = 2;
  const std::vector<int> lq = c.no_keys ? std::vector<int>{3, 130} : std::vector<int>{0, 0};
  const std::vector<int> lk = c.no_keys ? std::vector<int>{0, 0} : std::vector<int>{5, 200};
  const std::int64_t tq = c.no_keys ? 133 : 0, tk = c.no_keys ? 0 : 205;
  const std::int64_t sq = std::max<std::int64_t>(tq, 1), sk = std::max<std::int64_t>(tk, 1);
  HostTensor q(c.dtype, {sq, Hq, c.D}), k(c.dtype, {sk, Hkv, c.D}), v(c.dtype, {sk, Hkv, c.D}),
      out(c.dtype, {sq, Hq, c.D}), lse(DType::f32, {Hq, sq});
  const std::uint64_t seed = seed_of(current_test_name());
  q.randomize(seed);
  k.randomize(seed + 1);
  v.randomize(seed + 2);
  out.poison();
  lse.poison();
  const HostTensor cq = make_cu_seqlens(lq), ck = make_cu_seqlens(lk);
  const OnDevice dq(q), dk(k), dv(v), dout(out), dlse(lse), dcq(cq), dck(ck);
  const auto rows = [](TensorView x, int dim, std::int64_t n) {
    x.shape[dim] = n;
    return x;
  };
  AttentionArgs a;
  a.q = rows(dq.view(), 0, tq);
  a.k = rows(dk.view(), 0, tk);
  a.v = rows(dv.view(), 0, tk);
  a.out = rows(dout.view(), 0, tq);
  a.lse = rows(dlse.view(), 1, tq);
  a.cu_seqlens_q = dcq.view();
  a.cu_seqlens_k = dck.view();
  a.max_seqlen_q = 130;  // a bound: no sequence reaches it on the side of no rows
  a.max_seqlen_k = c.no_keys ? 1 : 200;
  a.causal = c.causal;
  if (c.window) a.mask.window_left = 64;
  if (c.compensated) a.precision = Precision::compensated;
  const char* env = std::getenv("GPUATTN_KERNEL");
  if (sm90::usable(c.dtype, c.D) && !(env != nullptr && std::string(env) == "sm80")) {
    const std::string kernel = tile_config(cuda_forward_kernel(make_fwd_params(a))).name;
    EXPECT_EQ(kernel.rfind("sm90_", 0), 0u) << "the call ran " << kernel;
  }
  attention_forward(a);
  TEST_CUDA_CHECK(cudaDeviceSynchronize());
  dout.buf.download(out.data());
  dlse.buf.download(lse.data());
  expect_empty_side_outputs(out, lse, c.no_keys);
}

TEST_F(AttentionCudaTest, VarlenWithoutKeyOrQueryRows) {
  for (DType t : {DType::f16, DType::bf16}) {
    for (int D : {64, 128, 256}) {
      for (bool no_keys : {true, false}) {
        expect_empty_side_runs({t, D, no_keys});
        expect_empty_side_runs({t, D, no_keys, /*causal=*/true});
      }
    }
  }
  expect_empty_side_runs({DType::f16, 128, true, false, /*window=*/true});
  expect_empty_side_runs({DType::bf16, 64, false, true, /*window=*/true});
  expect_empty_side_runs({DType::f16, 128, true, false, false, /*compensated=*/true});
  expect_empty_side_runs({DType::bf16, 128, false, true, false, /*compensated=*/true});
}

// q scaled by 30: logits with a standard deviation of 30, softmax close to one-hot.
INSTANTIATE_TEST_SUITE_P(
    LargeLogits, AttentionCuda,
    ::testing::Values(dense(1, 16, 16, 2048, 2048, 128, f16).q_times(30),
                      dense(2, 8, 8, 1000, 1000, 64, bf16).causal().q_times(30),
                      dense(1, 8, 8, 4097, 4097, 128, f16).causal().compensated().q_times(30),
                      dense(1, 32, 8, 8192, 8192, 128, bf16).q_times(30),
                      varlen(8, 8, 128, f16, kLens).causal().q_times(30)),
    case_name);

// Non-contiguous views: padded strides with NaN in the padding (reading it, or writing it, fails),
// q/k/v slices of one packed qkv buffer with out a slice of a wider buffer, and size-1 dims with
// strides no tensor map holds. The sm_90a kernel
// stores out through a TMA tensor map of its strides (64-row boxes, rows past the end clipped):
// head dim 256 (4 boxes a warpgroup), a window alone (at head dim 128 the dense instantiation from
// the window's first key tile, at 64 the masked one) and a masked call (global tokens: its own
// instantiation) too.
INSTANTIATE_TEST_SUITE_P(
    StridedViews, AttentionCuda,
    ::testing::Values(
        dense(2, 8, 2, 100, 1000, 128, f16).causal().in(Layout::padded),
        dense(2, 4, 4, 300, 300, 256, bf16).in(Layout::padded),
        dense(1, 4, 4, 1000, 1000, 64, f16).causal().window(200, 0).in(Layout::padded),
        dense(1, 4, 4, 1000, 1000, 128, bf16).causal().window(200, 0).in(Layout::padded),
        dense(1, 4, 4, 700, 900, 128, f16).window(100, 50).in(Layout::padded),
        dense(1, 4, 4, 1000, 1000, 64, f16).causal().window(200, 0).globals(4).in(Layout::padded),
        dense(3, 4, 4, 17, 17, 64, bf16).causal().in(Layout::padded),
        dense(1, 8, 8, 4097, 4097, 128, bf16).compensated().in(Layout::padded),
        varlen(8, 2, 64, f16, kLens).causal().in(Layout::padded),
        dense(2, 16, 16, 1000, 1000, 128, f16).causal().in(Layout::packed_qkv),
        dense(1, 8, 8, 4097, 4097, 64, bf16).compensated().in(Layout::packed_qkv),
        varlen(8, 8, 128, f16, {17, 513, 1, 2048}).causal().in(Layout::packed_qkv),
        // one batch entry and one KV head, their strides 2^40 elements: the tensor maps take
        // others for those dims (a map's strides end below 2^40 bytes)
        dense(1, 4, 1, 300, 500, 128, bf16).causal().in(Layout::far_units),
        dense(1, 8, 1, 77, 1000, 64, f16).in(Layout::far_units),
        dense(1, 2, 1, 130, 200, 256, f16).causal().in(Layout::far_units),
        // one row in a row dim (Sk 1, Sq 1, a varlen total of 1 key): its stride 2^40 elements,
        // past the row-stride limit, is never used (the params carry 0)
        dense(1, 4, 1, 300, 1, 128, f16).in(Layout::far_units),
        dense(2, 8, 2, 1, 700, 64, bf16).causal().in(Layout::far_units),
        varlen(4, 4, 128, f16, {300}, {1}).in(Layout::far_units)),
    case_name);

// ---- masks: sliding window and global tokens ----------------------------------------------------

// flash-attn window_size semantics: (left, right) keys around the query position, -1 unbounded.
// (W, 0) with causal is the usual causal sliding window; a window wider than the sequence must be
// plain (causal) attention; window (0, 0) leaves every row its own key. Tile edges: 64-key tiles.
INSTANTIATE_TEST_SUITE_P(
    SlidingWindow, AttentionCuda,
    ::testing::Values(dense(2, 8, 8, 1000, 1000, 128, f16).window(100, 100),
                      dense(2, 8, 8, 1000, 1000, 128, f16).causal().window(256, 0),
                      dense(1, 8, 8, 4097, 4097, 64, bf16).causal().window(1024, 0),
                      dense(1, 8, 8, 1000, 1000, 64, bf16).window(256, 0),  // causal by window
                      dense(2, 4, 4, 1000, 1000, 64, bf16).window(0, 0),
                      dense(1, 4, 4, 777, 777, 128, f16).causal().window(0, 0).no_lse(),
                      dense(2, 8, 8, 500, 500, 128, f16).window(5000, 5000),
                      dense(1, 8, 8, 500, 500, 64, f16).causal().window(100000, -1),
                      dense(1, 8, 8, 1000, 1000, 128, bf16).window(37, 130),
                      dense(1, 8, 8, 1000, 1000, 128, f16).window(-1, 64),
                      dense(1, 8, 8, 1000, 1000, 64, f16).window(64, -1),
                      dense(1, 8, 8, 1000, 1000, 128, f16).window(64, 64),
                      dense(1, 8, 8, 1000, 1000, 128, bf16).causal().window(63, 1),
                      dense(3, 4, 4, 17, 17, 64, f16).causal().window(4, 0),
                      dense(1, 8, 8, 2048, 2048, 128, f16).causal().window(300, 0).compensated(),
                      dense(1, 4, 4, 1000, 1000, 64, bf16).window(17, 200).compensated(),
                      // 128-row blocks (the grid fills the GPU twice over)
                      dense(2, 16, 16, 2048, 2048, 128, f16).window(100, 100),
                      dense(4, 16, 16, 1000, 1000, 64, bf16).causal().window(64, 0),
                      dense(2, 16, 16, 2048, 2048, 128, bf16).causal().window(511, 0),
                      // On Hopper a window alone runs the dense kernel from the window's first
                      // key tile at head dim 128 (the masked one at 64 and 256): band edges on
                      // tile boundaries, one side unbounded with Sq != Sk, a single query row far
                      // from key 0, and items without a key tile between items with tiles (the
                      // D128 copies of the D64/D256 cases below).
                      dense(1, 8, 8, 4097, 4097, 256, bf16).causal().window(1024, 0),
                      dense(1, 8, 8, 1000, 100, 256, f16).causal().window(20, 0),
                      dense(1, 8, 8, 1000, 1000, 128, f16).causal().window(127, 0),
                      dense(1, 8, 8, 1000, 1000, 128, f16).causal().window(128, 0),
                      dense(1, 8, 8, 1000, 1000, 256, bf16).causal().window(63, 0),
                      dense(1, 8, 8, 1000, 100, 128, f16).window(-1, 0),
                      dense(1, 8, 8, 100, 1000, 64, bf16).window(0, -1),
                      dense(2, 8, 8, 1, 4097, 128, f16).causal().window(1000, 0),
                      dense(2, 16, 4, 1700, 1300, 256, bf16).window(64, 64),
                      dense(1, 8, 8, 4097, 4097, 128, bf16).causal().window(1024, 0),
                      dense(1, 8, 8, 1000, 100, 128, f16).causal().window(20, 0),
                      dense(1, 8, 8, 1000, 1000, 128, bf16).causal().window(63, 0),
                      dense(1, 8, 8, 100, 1000, 128, bf16).window(0, -1),
                      dense(2, 16, 4, 1700, 1300, 128, bf16).window(64, 64)),
    case_name);

// Global tokens widen the window: the first G positions (and every stride-th with a stride) see
// every key and are seen by every query, causal limits still applying. G larger than the sequence,
// G alone (no window: nothing changes), a stride of 1 (all global) and strides around the tile.
INSTANTIATE_TEST_SUITE_P(
    GlobalTokens, AttentionCuda,
    ::testing::Values(
        dense(2, 8, 8, 2048, 2048, 128, f16).window(128, 128).globals(16),
        dense(1, 8, 8, 4097, 4097, 64, bf16).causal().window(256, 0).globals(64),
        dense(2, 4, 4, 300, 300, 128, f16).window(10, 10).globals(1000),
        dense(1, 4, 4, 1000, 1000, 128, f16).globals(7),
        dense(1, 4, 4, 1000, 1000, 64, bf16).causal().globals(7),
        dense(1, 8, 8, 1000, 1000, 128, bf16).causal().window(0, 0).globals(1),
        dense(1, 8, 8, 4097, 4097, 128, f16).window(64, 64).globals(0, 512),
        dense(1, 8, 8, 4097, 4097, 64, bf16).causal().window(100, 0).globals(4, 1000),
        dense(1, 4, 4, 1000, 1000, 128, f16).window(3, 3).globals(0, 1),
        dense(1, 4, 4, 1000, 1000, 64, f16).causal().window(5, 5).globals(0, 3),
        dense(1, 4, 4, 1000, 1000, 128, bf16).window(20, 0).globals(2, 64),
        dense(1, 4, 4, 1000, 1000, 128, f16).window(20, 20).globals(0, 65),
        dense(1, 4, 4, 1000, 1000, 64, f16).window(20, 20).globals(0, 5000),
        dense(1, 8, 8, 2048, 2048, 128, f16).causal().window(200, 0).globals(30, 700).compensated(),
        dense(1, 4, 4, 1000, 1000, 64, bf16).window(50, 50).globals(100).compensated(),
        // 128-row blocks
        dense(2, 16, 16, 2048, 2048, 128, f16).window(100, 100).globals(16),
        dense(2, 16, 16, 2048, 2048, 64, bf16).causal().window(128, 0).globals(8, 256),
        dense(2, 16, 16, 2048, 2048, 128, bf16).window(0, 0).globals(200)),
    case_name);

// Sq != Sk with masks, positions bottom-right aligned. A window with Sq > Sk leaves rows that see
// no key even without causal (out 0, lse -inf); global keys are seen by every such row again.
INSTANTIATE_TEST_SUITE_P(
    MaskedSeqlenMismatch, AttentionCuda,
    ::testing::Values(dense(2, 8, 8, 100, 1000, 128, f16).window(50, 50),
                      dense(2, 8, 8, 1000, 100, 128, f16).causal().window(20, 0),
                      dense(1, 8, 8, 1000, 100, 64, bf16).window(10, 10),
                      dense(1, 4, 4, 1000, 100, 128, f16).window(10, 10).globals(3),
                      dense(1, 4, 4, 100, 4097, 128, bf16).causal().window(512, 0).globals(0, 1024),
                      dense(1, 4, 4, 4097, 17, 64, f16).causal().window(8, 0).globals(2),
                      dense(2, 8, 8, 1, 4097, 128, f16).causal().window(1000, 0).globals(64),
                      dense(1, 8, 8, 1000, 100, 64, bf16).window(10, 10).compensated()),
    case_name);

// Packed batches with masks (positions per sequence), and GQA / MQA.
INSTANTIATE_TEST_SUITE_P(
    MaskedVarlenAndGroups, AttentionCuda,
    ::testing::Values(
        varlen(16, 4, 64, bf16, kLens).causal().window(128, 0),
        varlen(8, 8, 128, f16, kLens, {2048, 513, 17, 1}).window(64, 64).globals(5),
        varlen(8, 2, 128, f16, {1, 0, 513, 300}, {17, 300, 0, 2048})
            .causal()
            .window(100, 0)
            .globals(0, 256),
        varlen(8, 8, 64, f16, kLens).window(0, 0).compensated(),
        varlen(8, 2, 128, bf16, kLens).causal().window(300, 0).globals(16).compensated(),
        dense(2, 32, 8, 2048, 2048, 128, f16).causal().window(256, 0).globals(32),
        dense(1, 16, 1, 4097, 4097, 64, bf16).window(300, 300),
        dense(1, 32, 8, 2048, 2048, 128, bf16).window(100, 0).globals(0, 300).compensated()),
    case_name);

// Masks with large logits and strided views.
INSTANTIATE_TEST_SUITE_P(
    MaskedOther, AttentionCuda,
    ::testing::Values(
        dense(1, 8, 8, 2048, 2048, 128, f16).causal().window(200, 0).globals(8).q_times(30),
        dense(1, 8, 8, 1000, 1000, 64, bf16)
            .window(30, 30)
            .globals(0, 128)
            .q_times(30)
            .compensated(),
        dense(2, 8, 2, 100, 1000, 128, f16).window(30, 30).in(Layout::padded),
        dense(2, 8, 2, 100, 1000, 128, f16).window(30, 30).globals(4).in(Layout::padded),
        dense(1, 8, 8, 4097, 4097, 64, bf16)
            .causal()
            .window(500, 0)
            .globals(3)
            .in(Layout::packed_qkv)),
    case_name);

// Long sequences, sampled rows: the causal sliding window S16384 W1024 of the benchmarks, with and
// without global tokens, both precisions.
INSTANTIATE_TEST_SUITE_P(
    LongMasked, AttentionCuda,
    ::testing::Values(
        dense(1, 16, 16, 16384, 16384, 128, bf16).causal().window(1024, 0),
        dense(1, 16, 16, 16384, 16384, 128, f16).causal().window(1024, 0).globals(128),
        dense(1, 16, 4, 16384, 16384, 64, f16).window(512, 512).globals(0, 4096),
        dense(1, 8, 8, 16384, 16384, 128, bf16).causal().window(1024, 0).compensated(),
        dense(2, 16, 16, 8192, 8192, 128, f16).window(1024, 1024).globals(64, 2048),
        dense(1, 16, 16, 16384, 4096, 128, f16).causal().window(1024, 0)),
    case_name);

// ---- head dim 256 -------------------------------------------------------------------------------

// Head dim 256: the sm_90a kernel's 80-key tiles on Hopper from 1024 keys (64 with a mask or fewer
// keys; 1040, 1041 and 1120 keys put a tile edge on the last key and one past it); under
// GPUATTN_KERNEL=sm80 (and off Hopper) the sm_80 kernel's 64 x 64 configuration with swizzled
// shared memory, and in compensated precision (on every GPU) its O split over 2 CTAs per row block.
// Lengths that are multiples of no tile, Sq != Sk both ways, GQA / MQA, varlen with length-1 and
// empty sequences, strided views, large logits, grids that fill the GPU several times over. The
// dense kernel stages O through the last key tile's stage and hands its one Q buffer back early
// (kEarlyQ): a persistent grid of 1-tile items and items without keys (64-key tiles, 512 items)
// and a persistent varlen call with an empty key sequence exercise its held stage halves.
INSTANTIATE_TEST_SUITE_P(
    HeadDim256, AttentionCuda,
    ::testing::Values(
        dense(2, 8, 8, 1, 1, 256, f16), dense(3, 4, 4, 17, 17, 256, bf16).causal(),
        dense(2, 8, 8, 1000, 1000, 256, f16).causal(), dense(1, 8, 8, 4097, 4097, 256, bf16),
        dense(2, 8, 8, 100, 1000, 256, f16).causal(),
        dense(1, 8, 8, 1000, 100, 256, bf16).causal(),  // rows without keys
        dense(2, 8, 8, 1, 4097, 256, f16).causal().no_lse(),
        dense(2, 16, 4, 2048, 2048, 256, f16).causal(), dense(1, 16, 1, 1000, 1000, 256, bf16),
        dense(2, 16, 16, 2048, 2048, 256, bf16), dense(4, 16, 16, 4096, 4096, 256, f16).causal(),
        varlen(8, 2, 256, f16, kLens).causal(),
        varlen(8, 8, 256, bf16, {1, 0, 513, 300}, {17, 300, 0, 2048}),
        dense(1, 8, 8, 2048, 2048, 256, f16).q_times(30),
        dense(2, 8, 2, 100, 1000, 256, bf16).causal().in(Layout::padded),
        dense(1, 8, 8, 1000, 1000, 256, f16).causal().in(Layout::packed_qkv),
        dense(2, 4, 4, 160, 1040, 256, f16), dense(1, 4, 4, 81, 1041, 256, bf16).causal(),
        dense(1, 4, 4, 1200, 1120, 256, f16).causal(), dense(1, 4, 4, 1040, 1039, 256, bf16),
        dense(4, 16, 16, 1000, 60, 256, f16).causal(),  // 512 items: 1 tile or no key
        varlen(8, 8, 256, bf16, {1, 0, 513, 2048}, {2048, 300, 0, 1000}).causal()),
    case_name);

// Compensated precision at head dim 256 (the sm_80 kernel's O split on every GPU).
INSTANTIATE_TEST_SUITE_P(
    HeadDim256Compensated, AttentionCuda,
    ::testing::Values(dense(2, 4, 4, 17, 17, 256, f16).compensated(),
                      dense(1, 8, 8, 1000, 1000, 256, bf16).causal().compensated(),
                      dense(1, 8, 8, 4097, 4097, 256, f16).compensated().q_times(30),
                      dense(1, 8, 8, 1000, 100, 256, f16).causal().compensated(),
                      dense(2, 16, 4, 2048, 2048, 256, bf16).causal().compensated(),
                      varlen(8, 2, 256, f16, kLens, {17, 1, 2048, 513}).causal().compensated(),
                      dense(1, 8, 8, 1000, 1000, 256, bf16).compensated().in(Layout::padded)),
    case_name);

// Window and global-token masks at head dim 256, both precisions.
INSTANTIATE_TEST_SUITE_P(
    HeadDim256Masked, AttentionCuda,
    ::testing::Values(
        dense(2, 8, 8, 1000, 1000, 256, f16).window(100, 100),
        dense(1, 8, 8, 4097, 4097, 256, bf16).causal().window(1024, 0).globals(64),
        dense(1, 4, 4, 1000, 1000, 256, f16).window(20, 20).globals(0, 65),
        dense(1, 8, 8, 1000, 100, 256, bf16).window(10, 10).globals(3),
        dense(2, 16, 16, 2048, 2048, 256, f16).causal().window(256, 0).globals(16, 700),
        varlen(8, 2, 256, bf16, kLens).causal().window(128, 0).globals(5),
        dense(1, 8, 8, 2048, 2048, 256, f16).causal().window(300, 0).globals(8).compensated(),
        varlen(8, 8, 256, f16, kLens, {2048, 513, 17, 1}).window(64, 64).compensated()),
    case_name);

// ---- grids of many row blocks -------------------------------------------------------------------

// Several hundred 128-row blocks, about 3 or more per SM of a 132-SM H200 (B2 H16 S1500: 2 * 16 *
// 12 = 384; the sm_80 kernel's 2 CTAs per SM: 1.5 waves), so that a persistent CTA runs several
// work items in turn and a CTA-per-item grid runs several waves: per-item state (Q buffers,
// barrier phases, running max and sum, the next item's loads) must not leak into the next item.
// Every mask kind, lengths that are multiples of no tile, GQA 16:4, Sq != Sk both ways (items whose
// rows see no key between items that do), and one varlen batch with lengths 1 and 0 (q and k) and
// a sequence whose keys are all missing. The narrower windows fit the full check (every row).
const std::vector<int> kManyLensQ = {1500, 1, 0, 1300, 700, 129};
const std::vector<int> kManyLensK = {1400, 17, 300, 0, 1000, 129};

INSTANTIATE_TEST_SUITE_P(
    ManyRowBlocks, AttentionCuda,
    ::testing::Values(
        // dense and causal
        dense(2, 16, 4, 1500, 1500, 128, f16), dense(2, 16, 4, 1500, 1500, 128, bf16).causal(),
        dense(2, 16, 4, 1900, 1100, 128, f16).causal(),  // rows 0..799 see no key: 6 empty blocks
        // sliding windows, causal and not
        dense(2, 16, 4, 1500, 1500, 128, f16).causal().window(150, 0),
        dense(2, 16, 4, 1500, 1500, 64, bf16).window(100, 100),
        dense(2, 16, 4, 1300, 1700, 128, bf16).window(150, 150),
        dense(2, 16, 4, 1700, 1300, 64, f16).window(64, 64),  // rows 0..335 see no key
        // window + global tokens: the first row block (global rows see every key) runs much longer
        dense(2, 16, 4, 1500, 1500, 64, f16).window(64, 64).globals(100),
        dense(2, 16, 4, 1500, 1500, 128, bf16).causal().window(256, 0).globals(64),
        // strided global tokens
        dense(2, 16, 4, 1500, 1500, 128, f16).window(32, 32).globals(0, 300),
        dense(2, 16, 4, 1500, 1500, 64, bf16).causal().window(128, 0).globals(8, 500),
        // varlen: 12 row blocks per head for the longest of 6 sequences, 32 per head hold rows
        varlen(16, 4, 128, f16, kManyLensQ), varlen(16, 4, 128, bf16, kManyLensQ).causal(),
        // dense non-causal (persistent on sm_90a) with a k length of 0: items without key tiles
        // (zeros stored from registers, no Q loaded) between items with tiles in one CTA
        varlen(16, 4, 64, f16, kManyLensQ, kManyLensK),
        varlen(16, 4, 64, f16, kManyLensQ, kManyLensK).causal().window(200, 0),
        varlen(16, 4, 128, f16, kManyLensQ, kManyLensK).window(32, 32),
        varlen(16, 4, 128, bf16, kManyLensQ, kManyLensK).causal().window(200, 0),
        varlen(8, 2, 256, bf16, kLens).causal().window(128, 0),
        varlen(16, 4, 64, bf16, kManyLensQ, kManyLensK).window(32, 32).globals(100, 300),
        // compensated, head dim 256
        dense(2, 16, 4, 1500, 1500, 128, f16).causal().window(150, 0).globals(16).compensated(),
        dense(2, 16, 4, 1500, 1500, 64, bf16).compensated(),
        dense(2, 16, 4, 1500, 1500, 256, bf16).causal().window(200, 0).globals(0, 300)),
    case_name);

// Short work items on persistent CTAs (sm_90a dense kernels at head dims 64 and 128, several
// items a CTA): items of 1, 2 and 3 key tiles in every order (causal, dynamic schedule), 1-tile
// items only, items whose rows see no key between items that do (Sq > Sk causal), Sk > Sq, GQA
// 16:4, the 4-stage causal D64 kernel (causal under 2048 rows; late P V wait since session 57)
// and the 3-consumer one (dense grids that fill the GPU), and varlen batches with length-1 and
// empty sequences. (The twenty-second session's item chains, not landed, were checked on these.)
const std::vector<int> kShortLensQ = {300, 1, 129, 0, 257, 1000, 128, 77};
const std::vector<int> kShortLensK = {300, 129, 1, 500, 0, 1000, 383, 77};

INSTANTIATE_TEST_SUITE_P(
    ShortItems, AttentionCuda,
    ::testing::Values(dense(16, 16, 4, 300, 300, 128, f16).causal(),
                      dense(8, 16, 4, 1000, 100, 128, bf16),
                      dense(8, 16, 4, 1300, 700, 128, f16).causal(),
                      dense(4, 16, 4, 700, 1300, 128, bf16).causal(),
                      dense(8, 16, 16, 1000, 1000, 64, bf16).causal(),
                      dense(16, 16, 4, 300, 300, 64, f16).causal(),
                      dense(8, 16, 4, 1000, 200, 64, f16), dense(4, 16, 16, 1000, 1000, 64, bf16),
                      varlen(32, 4, 128, bf16, kShortLensQ, kShortLensK).causal(),
                      varlen(32, 4, 128, f16, kShortLensQ, kShortLensK),
                      varlen(32, 8, 64, f16, kShortLensQ, kShortLensK),
                      varlen(32, 8, 64, bf16, kShortLensQ).causal()),
    case_name);

// ---- the split-KV decode kernel (decode_16x64)
// ---------------------------------------------------

// Under the automatic dispatch, a standard-precision dense or causal call with at most 64 query
// rows per KV head takes decode_16x64 on every GPU; GPUATTN_KERNEL=sm80 / sm90_* take their own
// kernels (ctest's sm80. copies run these cases there), so the pick is checked only where the
// variable is unset or auto.
void expect_decode_kernel(const AttentionArgs& args) {
  const char* env = std::getenv("GPUATTN_KERNEL");
  if (env != nullptr && std::string(env) != "auto") return;
  const FwdParams fp = make_fwd_params(args);
  EXPECT_EQ(cuda_forward_kernel(fp), FwdKernel::decode_16x64)
      << "picked " << tile_config(cuda_forward_kernel(fp)).name;
}

class DecodeCuda : public AttentionCuda {};

TEST_P(DecodeCuda, MatchesReference) {
  Problem p(GetParam(), seed_of(current_test_name()));
  p.expect_matches_reference(run_once(p));
  expect_decode_kernel(p.device_args());
}

// Decode shapes: one query row (GQA 32:8 as in compare_torch, MQA 16:1 and 64:1, whose 64 rows
// take 4 row blocks), a few rows with causal bottom-right alignment (Sq > Sk leaves rows without a
// key: out 0, lse -inf), a single key, 2^16 keys over many splits (64) and 12000 over 47, every
// head dim, varlen batches with empty key and query sequences, large logits, strided views and
// no lse.
INSTANTIATE_TEST_SUITE_P(
    Decode, DecodeCuda,
    ::testing::Values(
        dense(8, 32, 8, 1, 4096, 128, bf16), dense(2, 16, 1, 1, 1000, 64, f16),
        dense(2, 64, 1, 1, 4097, 128, bf16).causal(), dense(3, 8, 2, 4, 777, 256, f16).causal(),
        dense(2, 4, 4, 16, 70, 128, bf16).causal(), dense(1, 4, 2, 8, 5, 64, f16).causal(),
        dense(1, 8, 8, 1, 1, 64, f16), dense(1, 2, 2, 1, 65536, 128, f16),
        dense(4, 16, 16, 2, 3000, 256, bf16),
        // 4 units of 188 key tiles: 47 splits on an H200 (264 slots), between 32
        // and 64, so the merge's lanes take a second split where one exists
        dense(1, 8, 4, 1, 12000, 64, bf16), dense(2, 32, 4, 1, 2049, 64, bf16).q_times(30),
        dense(2, 8, 2, 3, 1500, 128, f16).causal().no_lse(),
        dense(2, 8, 2, 1, 1000, 128, f16).in(Layout::padded),
        dense(2, 4, 4, 16, 16, 64, bf16).causal().in(Layout::packed_qkv),
        varlen(8, 2, 128, f16, {1, 1, 1, 1}, {1, 4097, 0, 300}),
        varlen(16, 4, 64, bf16, {3, 0, 1}, {100, 50, 2000}).causal(),
        varlen(8, 8, 256, f16, {2, 1}, {513, 17}).causal().q_times(30),
        // head dim 64 past one wave of the 3-stage kernel (576 and 640 units: more
        // than an H200's 528 slots), which the dispatch gives these and not the
        // smaller ones above (those take the lean kernel: DecodePlan::lean)
        dense(48, 12, 12, 1, 700, 64, f16), dense(40, 16, 16, 2, 333, 64, bf16).causal()),
    case_name);

// ---- random cases ------------------------------------------------------------------------------

// A random case for RandomCasesMatchReference: both 16-bit types, every head dim, GQA and MQA
// (up to 32 query heads), dense batches (Sq == Sk, Sq != Sk, decode-like Sq of 1-4) or varlen
// ones (sequences of 0 and 1 rows among them, a NaN-filled key sequence behind a query-less
// one), lengths at the kernels' tile edges, causal, windows with and without global tokens,
// compensated precision, logits x30, no lse, padded and packed-qkv layouts. Small enough that
// the reference checks every query row (pick_rows: at most kFullCheckSteps).
Case random_case(Dice& d) {
  for (;;) {
    const DType t = d.chance(0.5) ? f16 : bf16;
    const int D = d.one_of({64, 128, 256});
    const int hkv = d.one_of({1, 2, 3, 4});
    const int hq = hkv * d.one_of({1, 1, 2, 3, 4, 8});
    Case c;
    if (d.chance(0.35)) {
      const int n = d.between(1, 5);
      const bool same = d.chance(0.4), decode = d.chance(0.2);
      std::vector<int> lq, lk;
      for (int i = 0; i < n; ++i) {
        lq.push_back(d.chance(0.12) ? 0 : decode ? d.between(1, 4) : d.length(1, 700));
        lk.push_back(same ? lq.back() : d.chance(0.12) ? 0 : d.length(1, 1500));
      }
      if (*std::max_element(lq.begin(), lq.end()) == 0) lq[0] = 1;
      if (*std::max_element(lk.begin(), lk.end()) == 0) lk[0] = 1;
      c = varlen(hq, hkv, D, t, lq, lk);
      for (int i = 0; i < n; ++i) {  // keys no query reads, NaN: a kernel must not reach them
        if (lq[static_cast<std::size_t>(i)] == 0 && lk[static_cast<std::size_t>(i)] > 0 &&
            d.chance(0.5)) {
          c = c.nan_kv(i);
          break;
        }
      }
    } else {
      const int B = d.between(1, 3);
      const int shape = d.between(0, 9);
      const int sq = shape < 2 ? d.between(1, 4) : d.length(1, 1500);
      const int sk = shape >= 2 && shape < 6 ? sq : d.length(1, 2500);
      c = dense(B, hq, hkv, sq, sk, D, t);
    }
    if (d.chance(0.5)) c = c.causal();
    if (d.chance(0.25)) {
      const auto side = [&] { return d.chance(0.3) ? -1 : d.chance(0.2) ? 0 : d.between(0, 400); };
      // Drawn right side first, each in its own statement: the order is then the same on every
      // compiler (as arguments, it was GCC's right-to-left, which these cases keep).
      const int right = side(), left = side();
      c = c.window(left, right);
      if (d.chance(0.4)) {
        const int stride = d.chance(0.5) ? d.between(16, 300) : 0;
        c = c.globals(d.between(0, 40), stride);
      }
    }
    if (d.chance(0.15)) c = c.compensated();
    if (d.chance(0.1)) c = c.q_times(30);
    if (d.chance(0.2)) c = c.no_lse();
    const bool packable = c.Hq == c.Hkv && c.Sq == c.Sk && c.lens_q == c.lens_k;
    if (packable && d.chance(0.3)) {
      c = c.in(Layout::packed_qkv);
    } else if (d.chance(0.3)) {
      c = c.in(Layout::padded);
    }
    std::int64_t total_q = 0;
    for (int b = 0; b < c.B; ++b)
      total_q += c.varlen() ? c.lens_q[static_cast<std::size_t>(b)] : c.Sq;
    // The reference's steps (pick_rows), bounded from above: every key of every row and head.
    if (double(total_q) * c.Sk * (1.0 + double(c.Hq) * c.D) <= kFullCheckSteps) return c;
  }
}

// GPUATTN_FUZZ_CASES random cases (default 48) drawn from GPUATTN_FUZZ_SEED (a fixed default, so
// that every run checks the same cases; another seed explores), each through MatchesReference's
// checks: poisoned outputs, every element written, every row against the fp64 reference, the
// kernel the dispatch must pick. A failure names the case and how to replay it
// (tests/common/random_cases.h).
TEST_F(AttentionCudaTest, RandomCasesMatchReference) {
  const FuzzRun run = FuzzRun::from_env(kDefaultFuzzSeed, 48);
  Dice dice(run.seed);
  for (int i = 0; i < run.cases; ++i) {
    const Case c = random_case(dice);
    SCOPED_TRACE(run.where(i) + ": " + c.name());
    Problem p(c, run.case_seed(i));
    p.expect_matches_reference(run_once(p));
    expect_forced_kernel(p.device_args());
  }
}

// ---- determinism and streams --------------------------------------------------------------------

TEST_F(AttentionCudaTest, SameInputsGiveBitwiseIdenticalOutputs) {
  for (const Case& c :
       {dense(2, 16, 4, 2048, 2048, 128, f16).causal(),
        varlen(8, 2, 64, bf16, kLens, {17, 1, 2048, 513}).causal().compensated(),
        dense(2, 16, 16, 4097, 4097, 128, bf16).causal().window(700, 0).globals(16, 1000),
        dense(1, 8, 8, 1000, 1000, 256, f16).causal().compensated(),
        dense(8, 32, 8, 1, 4096, 128, bf16)}) {  // decode: splits merged by whichever ends last
    SCOPED_TRACE(c.name());
    Problem p(c, seed_of(current_test_name() + "/" + c.name()));
    const Problem::Outputs first = run_once(p);
    const Problem::Outputs second = run_once(p);
    EXPECT_EQ(std::memcmp(first.out.data(), second.out.data(), first.out.bytes()), 0)
        << "out differs between two runs on the same inputs";
    EXPECT_EQ(std::memcmp(first.lse.data(), second.lse.data(), first.lse.bytes()), 0)
        << "lse differs between two runs on the same inputs";
    p.expect_matches_reference(first);
  }
}

// Calls with more row blocks than SMs run persistently, and causal and masked ones take their work
// items from a zeroed counter (decode calls: the splits' counts; and their partial results); a
// call captured into a graph allocates and zeroes its own in the graph. Captured into a CUDA
// graph (after a first direct call, which makes the library's memory pool and sets the kernels'
// attributes) and replayed twice, each replay must start from a zeroed counter: a stale one would
// skip every item and leave the poison in the output. Both replays must equal a direct call bit
// for bit and match the reference.
TEST_F(AttentionCudaTest, CapturedInACudaGraphAndReplayed) {
  for (const Case& c : {dense(2, 16, 4, 2048, 2048, 128, f16).causal(),
                        dense(1, 16, 16, 4097, 4097, 128, bf16).window(512, 512).globals(64, 0),
                        dense(4, 16, 4, 1, 8192, 128, f16)}) {  // decode: counts and partials
    SCOPED_TRACE(c.name());
    Problem p(c, seed_of(current_test_name() + "/" + c.name()));
    const Problem::Outputs direct = run_once(p);
    Stream stream;
    AttentionArgs a = p.device_args();
    a.stream = stream.get();
    a.backend = Backend::cuda;
    cudaGraph_t graph = nullptr;
    TEST_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
    attention_forward(a);
    TEST_CUDA_CHECK(cudaStreamEndCapture(stream.get(), &graph));
    cudaGraphExec_t exec = nullptr;
    TEST_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 2; ++replay) {
      SCOPED_TRACE("replay " + std::to_string(replay));
      p.poison_outputs(stream.get());
      TEST_CUDA_CHECK(cudaGraphLaunch(exec, stream.get()));
      const Problem::Outputs r = p.download(stream.get());
      EXPECT_EQ(std::memcmp(r.out.data(), direct.out.data(), r.out.bytes()), 0)
          << "out of the graph replay differs from the direct call";
      p.expect_matches_reference(r);
    }
    TEST_CUDA_CHECK(cudaGraphExecDestroy(exec));
    TEST_CUDA_CHECK(cudaGraphDestroy(graph));
  }
}

// Two persistent calls in flight at once on two streams, three times over, with no wait in
// between: each stream's work-item counter is its own (one shared counter would hand items of one
// call to the other's CTAs, which would skip them).
TEST_F(AttentionCudaTest, ConcurrentStreamsKeepTheirOwnSchedules) {
  Problem causal(dense(2, 16, 4, 2048, 2048, 128, f16).causal(),
                 seed_of(current_test_name() + "/causal"));
  Problem window(dense(1, 16, 16, 4097, 4097, 64, bf16).causal().window(1024, 0).globals(32, 0),
                 seed_of(current_test_name() + "/window"));
  TEST_CUDA_CHECK(cudaDeviceSynchronize());  // inputs are in place
  Stream s1, s2;
  AttentionArgs a1 = causal.device_args(), a2 = window.device_args();
  a1.stream = s1.get();
  a2.stream = s2.get();
  a1.backend = a2.backend = Backend::cuda;
  for (int round = 0; round < 3; ++round) {
    causal.poison_outputs(s1.get());
    window.poison_outputs(s2.get());
    attention_forward(a1);
    attention_forward(a2);
    attention_forward(a1);
    attention_forward(a2);
  }
  TEST_CUDA_CHECK(cudaGetLastError());
  causal.expect_matches_reference(causal.download(s1.get()));
  window.expect_matches_reference(window.download(s2.get()));
}

// Outside graph capture, the counters of causal, masked and split decode calls come from an array
// the library keeps per stream, which every call leaves zeroed (sm80::LaunchCounters); a call
// captured into a graph gets its own, zeroed in the graph. A graph captured from stream s1 and
// replayed on s2 while direct calls of the same problems run on s1: had the replay used s1's
// array, the two would share counts (items skipped or taken twice, a decode unit merged before
// its splits are in) and leave poison or partial sums in an output. Every output must equal a
// direct call's bit for bit.
TEST_F(AttentionCudaTest, GraphReplaysBesideDirectCallsOnTheCaptureStream) {
  const std::vector<Case> cases = {
      dense(2, 16, 4, 2048, 2048, 128, f16).causal(),
      dense(1, 16, 16, 4097, 4097, 64, bf16).causal().window(1024, 0).globals(32, 0),
      dense(4, 16, 4, 1, 8192, 128, f16)};  // decode: counts and partials
  std::vector<std::unique_ptr<Problem>> graphed, direct;
  std::vector<Problem::Outputs> expected;
  for (const Case& c : cases) {
    const std::uint64_t seed = seed_of(current_test_name() + "/" + c.name());
    graphed.push_back(std::make_unique<Problem>(c, seed));
    direct.push_back(std::make_unique<Problem>(c, seed));
    expected.push_back(run_once(*direct.back()));  // also: the first call outside any capture
  }
  Stream s1, s2;
  const auto args = [](const Problem& p, cudaStream_t stream) {
    AttentionArgs a = p.device_args();
    a.stream = stream;
    a.backend = Backend::cuda;
    return a;
  };
  cudaGraph_t graph = nullptr;
  TEST_CUDA_CHECK(cudaStreamBeginCapture(s1.get(), cudaStreamCaptureModeThreadLocal));
  for (const auto& p : graphed) attention_forward(args(*p, s1.get()));
  TEST_CUDA_CHECK(cudaStreamEndCapture(s1.get(), &graph));
  cudaGraphExec_t exec = nullptr;
  TEST_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    for (std::size_t i = 0; i < cases.size(); ++i) {
      graphed[i]->poison_outputs(s2.get());
      direct[i]->poison_outputs(s1.get());
    }
    TEST_CUDA_CHECK(cudaGraphLaunch(exec, s2.get()));
    for (const auto& p : direct) attention_forward(args(*p, s1.get()));
    TEST_CUDA_CHECK(cudaGraphLaunch(exec, s2.get()));  // its counters are zeroed in the graph again
    for (const auto& p : direct) attention_forward(args(*p, s1.get()));
    for (std::size_t i = 0; i < cases.size(); ++i) {
      SCOPED_TRACE(cases[i].name());
      const Problem::Outputs g = graphed[i]->download(s2.get());
      const Problem::Outputs d = direct[i]->download(s1.get());
      EXPECT_EQ(std::memcmp(g.out.data(), expected[i].out.data(), g.out.bytes()), 0)
          << "out of the graph replay differs from the direct call";
      EXPECT_EQ(std::memcmp(d.out.data(), expected[i].out.data(), d.out.bytes()), 0)
          << "out of the direct call beside the replay differs from the first direct call";
    }
  }
  TEST_CUDA_CHECK(cudaGraphExecDestroy(exec));
  TEST_CUDA_CHECK(cudaGraphDestroy(graph));
}

// A process's first library call may itself be the one captured into a graph: the library's
// one-time setup (its memory pool, which a split decode call's workspace and a masked call's
// schedule come from; kernel attributes; the sm_90a probe) must not be refused by the capture, nor
// a probe refused and remembered as "no sm_90a". Only a fresh process shows it: each case runs as
// the only test of a copy of this binary (FirstCallCapturedChild), its call the process's first,
// captured in global mode (torch.cuda.graph's default), the strictest.
TEST_F(AttentionCudaTest, FirstCallOfAProcessMayBeCaptured) {
  for (int which = 0; which < 3; ++which) {
    SCOPED_TRACE("case " + std::to_string(which));
    const FreshRun r = run_in_fresh_process("AttentionCudaTest.FirstCallCapturedChild",
                                            {"GPUATTN_TEST_FIRST_CALL_CASE=" + std::to_string(which)});
    EXPECT_TRUE(r.passed_one()) << "the child test did not pass; its output:\n" << r.output;
  }
}

TEST_F(AttentionCudaTest, FirstCallCapturedChild) {
  const char* const which_s = std::getenv("GPUATTN_TEST_FIRST_CALL_CASE");
  if (which_s == nullptr) {
    GTEST_SKIP() << "runs in the processes FirstCallOfAProcessMayBeCaptured starts";
  }
  // A split decode call (its partial results' workspace from the pool, its counts zeroed in the
  // graph), a persistent causal one, and a masked one (a window with global tokens).
  const std::vector<Case> cases = {
      dense(4, 16, 4, 1, 8192, 128, f16), dense(2, 16, 4, 2048, 2048, 128, f16).causal(),
      dense(1, 8, 8, 1500, 1500, 128, bf16).window(256, 256).globals(16, 0)};
  const Case& c = cases.at(static_cast<std::size_t>(std::atoi(which_s)));
  SCOPED_TRACE(c.name());
  Problem p(c, seed_of(current_test_name() + "/" + c.name()));
  Stream stream;
  TEST_CUDA_CHECK(cudaDeviceSynchronize());  // inputs are in place
  AttentionArgs a = p.device_args();
  a.stream = stream.get();
  a.backend = Backend::cuda;
  cudaGraph_t graph = nullptr;
  TEST_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal));
  try {
    attention_forward(a);
  } catch (const std::exception& e) {
    cudaStreamEndCapture(stream.get(), &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    FAIL() << "the captured call threw: " << e.what();
  }
  TEST_CUDA_CHECK(cudaStreamEndCapture(stream.get(), &graph));
  cudaGraphExec_t exec = nullptr;
  TEST_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 2; ++replay) {
    SCOPED_TRACE("replay " + std::to_string(replay));
    p.poison_outputs(stream.get());
    TEST_CUDA_CHECK(cudaGraphLaunch(exec, stream.get()));
    p.expect_matches_reference(p.download(stream.get()));
  }
  TEST_CUDA_CHECK(cudaGraphExecDestroy(exec));
  TEST_CUDA_CHECK(cudaGraphDestroy(graph));
  // On Hopper the dense calls took the sm_90a kernels: the probe made inside the capture answered
  // (asked only now, after the captured call).
  const FwdKernel kernel = cuda_forward_kernel(make_fwd_params(a));
  if (sm80::compute_capability_major() == 9 && c.Sq > 1) {
    EXPECT_EQ(std::string(tile_config(kernel).name).rfind("sm90_ws", 0), 0u)
        << tile_config(kernel).name;
  }
}

// Every kernel that counts leaves the stream's counters zeroed (sm80::LaunchCounters): read back
// after a causal call, a masked one (its searcher warp takes the items), a varlen causal one whose
// shortest sequences leave row blocks empty, and a decode call, each on a stream of its own. A
// counter left at 1 would make the next call on the stream skip an item or merge early (and trap).
TEST_F(AttentionCudaTest, CallsLeaveTheStreamCountersZeroed) {
  const Case masked =
      dense(1, 16, 16, 4097, 4097, 64, bf16).causal().window(1024, 0).globals(32, 0);
  for (const Case& c : {dense(2, 16, 4, 2048, 2048, 128, f16).causal(), masked,
                        varlen(16, 4, 128, bf16, {2000, 1, 1500, 3}).causal(),
                        dense(4, 16, 4, 1, 8192, 128, f16)}) {
    SCOPED_TRACE(c.name());
    Problem p(c, seed_of(current_test_name() + "/" + c.name()));
    TEST_CUDA_CHECK(cudaDeviceSynchronize());  // inputs are in place
    Stream stream;
    AttentionArgs a = p.device_args();
    a.stream = stream.get();
    a.backend = Backend::cuda;
    for (int call = 0; call < 2; ++call) attention_forward(a);
    TEST_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    constexpr int kRead = 256;  // an array's least size: every count these calls took
    const int* kept = sm80::stream_counters(stream.get(), kRead);
    ASSERT_NE(kept, nullptr);
    std::vector<int> left(kRead, -1);
    TEST_CUDA_CHECK(cudaMemcpy(left.data(), kept, kRead * sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT_EQ(left, std::vector<int>(kRead, 0)) << "a counter was not left zeroed";
    p.expect_matches_reference(p.download(stream.get()));
  }
}

// The memset nodes of a graph (what zeroes a captured call's own counters).
int memset_nodes(cudaGraph_t graph) {
  std::size_t n = 0;
  TEST_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  TEST_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &n));
  int memsets = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    TEST_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeMemset) ++memsets;
  }
  return memsets;
}

// AttentionArgs::counters, the caller's zeroed counters: a captured call that has them holds no
// memset node (without them it zeroes counters of its own in the graph: one memset node), its
// replays equal a direct call bit for bit, and it leaves the counters zero. Too few counters for
// the call (a decode call needs one per KV head and row block) is an error naming both counts,
// out untouched; so are a wrong dtype, shape or stride, and counters on the host.
TEST_F(AttentionCudaTest, CallerCountersKeepMemsetNodesOutOfGraphs) {
  struct Use {
    Case c;
    int needed;  // counters the call takes
  };
  for (const Use& u : {Use{dense(2, 16, 4, 2048, 2048, 128, f16).causal(), 1},
                       Use{dense(4, 16, 4, 1, 8192, 128, f16), 4 * 4}}) {  // decode
    SCOPED_TRACE(u.c.name());
    Problem p(u.c, seed_of(current_test_name() + "/" + u.c.name()));
    const Problem::Outputs direct = run_once(p);
    constexpr int kCounters = 64;
    DeviceBuffer counters(kCounters * sizeof(std::int32_t));
    const std::vector<std::int32_t> zeros(kCounters, 0);
    counters.upload(zeros.data());
    const auto counters_view = [&](std::int64_t n, std::int64_t stride, DType dtype) {
      int device = 0;
      TEST_CUDA_CHECK(cudaGetDevice(&device));
      TensorView t = TensorView::contiguous(counters.get(), dtype, Device::cuda, {n}, device);
      t.stride[0] = stride;
      return t;
    };
    Stream stream;
    AttentionArgs a = p.device_args();
    a.stream = stream.get();
    a.backend = Backend::cuda;
    // Off Hopper, or under GPUATTN_KERNEL=sm80, the prefill call runs a kernel without counters
    // (and the decode call too under a forced kernel): then neither graph has a memset node. On
    // Hopper under the automatic dispatch both calls take counters.
    int major = 0, device = 0;
    TEST_CUDA_CHECK(cudaGetDevice(&device));
    TEST_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    const bool automatic = std::getenv("GPUATTN_KERNEL") == nullptr;
    int without = -1;
    for (const bool with : {false, true}) {
      SCOPED_TRACE(with ? "with counters" : "without");
      a.counters = with ? counters_view(kCounters, 1, DType::i32) : TensorView{};
      cudaGraph_t graph = nullptr;
      TEST_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
      attention_forward(a);
      TEST_CUDA_CHECK(cudaStreamEndCapture(stream.get(), &graph));
      const int memsets = memset_nodes(graph);
      if (with) {
        EXPECT_EQ(memsets, 0);
      } else {
        without = memsets;
        EXPECT_LE(memsets, 1);
        if (automatic && major == 9) EXPECT_EQ(memsets, 1) << "the call took no counters";
      }
      cudaGraphExec_t exec = nullptr;
      TEST_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
      for (int replay = 0; replay < 2; ++replay) {
        p.poison_outputs(stream.get());
        TEST_CUDA_CHECK(cudaGraphLaunch(exec, stream.get()));
        const Problem::Outputs r = p.download(stream.get());
        EXPECT_EQ(std::memcmp(r.out.data(), direct.out.data(), r.out.bytes()), 0)
            << "out of replay " << replay << " differs from the direct call";
      }
      TEST_CUDA_CHECK(cudaGraphExecDestroy(exec));
      TEST_CUDA_CHECK(cudaGraphDestroy(graph));
      std::vector<std::int32_t> left(kCounters, -1);
      TEST_CUDA_CHECK(cudaMemcpy(left.data(), counters.get(), kCounters * sizeof(std::int32_t),
                                 cudaMemcpyDeviceToHost));
      EXPECT_EQ(left, zeros) << "the counters are not left zeroed";
    }
    // Rejected: too few for the call, and malformed views; out keeps its poison.
    const auto rejected = [&](const TensorView& t, std::initializer_list<std::string> words) {
      AttentionArgs bad = p.device_args();
      bad.backend = Backend::cuda;
      bad.counters = t;
      p.poison_outputs();
      TEST_CUDA_CHECK(cudaDeviceSynchronize());
      const auto before = p.output_snapshot();
      const std::string msg = error_of([&] { attention_forward(bad); });
      for (const std::string& w : words) {
        EXPECT_NE(msg.find(w), std::string::npos) << "'" << msg << "' lacks '" << w << "'";
      }
      TEST_CUDA_CHECK(cudaDeviceSynchronize());
      EXPECT_TRUE(p.output_snapshot() == before) << "out changed by a rejected call";
    };
    if (without == 1 && u.needed > 1) {
      rejected(
          counters_view(u.needed - 1, 1, DType::i32),
          {"counters holds " + std::to_string(u.needed - 1), "needs " + std::to_string(u.needed)});
    }
    rejected(counters_view(kCounters, 1, DType::f32), {"counters has dtype float32"});
    rejected(counters_view(kCounters, 2, DType::i32), {"counters stride is 2"});
    HostTensor host(DType::i32, {kCounters});
    rejected(host.view(), {"counters", "host"});
  }
}

// Streams destroyed right after their calls were queued, each followed at once by a new stream
// (CUDA may hand out a destroyed stream's handle again while its work still runs): the counter
// arrays are kept by cudaStreamGetId, which is never reused, so a new stream's calls never share
// counters with the calls still running on the old one.
TEST_F(AttentionCudaTest, NewStreamsDoNotShareCountersOfDestroyedOnes) {
  const std::vector<Case> cases = {dense(2, 16, 4, 2048, 2048, 128, f16).causal(),
                                   dense(4, 16, 4, 1, 8192, 128, f16)};
  constexpr int kStreams = 4;
  std::vector<std::unique_ptr<Problem>> problems;
  for (int i = 0; i < kStreams; ++i) {
    for (const Case& c : cases) {
      problems.push_back(
          std::make_unique<Problem>(c, seed_of(current_test_name() + "/" + c.name())));
    }
  }
  TEST_CUDA_CHECK(cudaDeviceSynchronize());  // inputs are in place
  std::set<cudaStream_t> handles;
  for (int i = 0; i < kStreams; ++i) {
    Stream stream;
    handles.insert(stream.get());
    for (std::size_t c = 0; c < cases.size(); ++c) {
      Problem& p = *problems[i * cases.size() + c];
      p.poison_outputs(stream.get());
      AttentionArgs a = p.device_args();
      a.stream = stream.get();
      a.backend = Backend::cuda;
      attention_forward(a);
    }
  }  // each stream destroyed with its calls in flight
  TEST_CUDA_CHECK(cudaDeviceSynchronize());
  for (const auto& p : problems) p->expect_matches_reference(p->download());
  // Whether the driver handed a destroyed stream's handle out again (it need not): without a
  // reuse this run checked the results only, not the keying.
  std::printf("[ note     ] %zu distinct stream handles over %d streams\n", handles.size(),
              kStreams);
}

// Poison, kernel and read-back are all ordered on a created non-blocking stream and only that
// stream is waited for: work issued to the default stream instead would race with the read-back.
TEST_F(AttentionCudaTest, RunsOnTheGivenStream) {
  const Case c = dense(2, 32, 32, 4096, 4096, 128, f16).causal();
  Problem p(c, seed_of(current_test_name()));
  TEST_CUDA_CHECK(cudaDeviceSynchronize());  // inputs are in place
  Stream stream;
  p.poison_outputs(stream.get());
  AttentionArgs a = p.device_args();
  a.stream = stream.get();
  a.backend = Backend::cuda;
  attention_forward(a);
  TEST_CUDA_CHECK(cudaGetLastError());
  const Problem::Outputs r = p.download(stream.get());
  EXPECT_EQ(cudaStreamQuery(stream.get()), cudaSuccess);
  p.expect_matches_reference(r);
}

// With AttentionArgs::pdl, decode kernels launch with programmatic dependent launch (cuda/pdl.h):
// on sm_90+ a decode call may be scheduled while the kernel ahead of it in the stream still runs,
// and every decode CTA lets its dependents start as soon as it starts. Here the second call's keys
// are the first call's output, poisoned with NaN before it: a decode kernel that touched memory
// before its griddepcontrol.wait would read rows the first call has not written yet (NaN out).
TEST_F(AttentionCudaTest, DecodeCallsWaitForTheKernelAhead) {
  if (!sm80::pdl_enabled()) {
    GTEST_SKIP() << "PDL is off here: a device below sm_90, a CUDA runtime below 12.3 or "
                    "GPUATTN_PDL=0";
  }
  // On an sm_90 device this build's sm_90a code runs, which carries the wait: PDL is used.
  if (sm80::compute_capability_major() == 9) ASSERT_TRUE(decode::pdl_active());
  constexpr int B = 16, Hq = 32, Hkv = 8, Sk = 8192, D = 128;  // first call: ~0.1 ms
  constexpr int Hq2 = 4, Sk2 = B * Hq;                         // second: keys = first's out rows
  Stream stream;
  const auto dev = [](const HostTensor& t, const DeviceBuffer& b) {
    TensorView v = t.view(Device::cuda, b.get());
    v.device_index = 0;
    TEST_CUDA_CHECK(cudaGetDevice(&v.device_index));
    return v;
  };
  HostTensor q1(f16, {B, 1, Hq, D}), kv1(f16, {B, Sk, Hkv, D}), x(f16, {B, 1, Hq, D});
  HostTensor q2(f16, {1, 1, Hq2, D}), v2(f16, {1, Sk2, 1, D}), out2(f16, {1, 1, Hq2, D});
  q1.randomize(seed_of(current_test_name() + "/q1"));
  q2.randomize(seed_of(current_test_name() + "/q2"));
  v2.randomize(seed_of(current_test_name() + "/v2"));
  x.poison();
  out2.poison();
  DeviceBuffer dq1(q1.bytes()), dkv1(kv1.bytes()), dx(x.bytes()), dq2(q2.bytes()), dv2(v2.bytes()),
      dout2(out2.bytes());
  dq1.upload(q1.data());
  dq2.upload(q2.data());
  dv2.upload(v2.data());
  // The first call's keys and values: every element 0x3c3c (1.0586 in fp16), set on the device.
  TEST_CUDA_CHECK(cudaMemset(dkv1.get(), 0x3c, kv1.bytes()));
  dx.upload(x.data());
  dout2.upload(out2.data());

  AttentionArgs first;
  first.q = dev(q1, dq1);
  first.k = dev(kv1, dkv1);
  first.v = first.k;
  first.out = dev(x, dx);
  first.backend = Backend::cuda;
  first.stream = stream.get();
  first.pdl = true;
  AttentionArgs second;
  second.q = dev(q2, dq2);
  second.k = dev(x, dx);
  second.k.rank = 4;  // the first call's out [B, 1, Hq, D] read as keys [1, B * Hq, 1, D]
  second.k.shape = {1, Sk2, 1, D};
  second.k.stride = {std::int64_t{Sk2} * D, D, D, 1};
  second.v = dev(v2, dv2);
  second.out = dev(out2, dout2);
  second.backend = Backend::cuda;
  second.stream = stream.get();
  second.pdl = true;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    TEST_CUDA_CHECK(cudaMemcpyAsync(dx.get(), x.data(), x.bytes(), cudaMemcpyHostToDevice,
                                    stream.get()));  // NaN again
    attention_forward(first);
    attention_forward(second);
    TEST_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    HostTensor got_x(f16, {B, 1, Hq, D}), got(f16, {1, 1, Hq2, D});
    dx.download(got_x.data());
    dout2.download(got.data());
    for (std::int64_t i = 0; i < got_x.numel(); ++i) {
      ASSERT_TRUE(std::isfinite(got_x.get(i))) << "first call's out element " << i;
    }
    AttentionArgs host;
    host.q = q2.view();
    host.k = got_x.view();
    host.k.rank = 4;
    host.k.shape = second.k.shape;
    host.k.stride = second.k.stride;
    host.v = v2.view();
    host.out = out2.view();
    const ReferenceResult ref = reference_attention(host);
    for (int h = 0; h < Hq2; ++h) {
      for (int d = 0; d < D; ++d) {
        const double want = ref.out[static_cast<std::size_t>(h) * D + d];
        const double o = got.get(static_cast<std::int64_t>(h) * D + d);
        ASSERT_TRUE(std::isfinite(o)) << "second call read unwritten keys: head " << h;
        ASSERT_LE(std::fabs(o - want), max_abs_tol(f16) * std::max(1.0, std::fabs(want)))
            << "head " << h << " col " << d;
      }
    }
  }
}
// With pdl_cache_ready the decode kernel issues the first tiles' older keys before it waits for
// the kernel ahead, and Q and each sequence's newest key after. Here a paged cache of one-key pages
// (a pool of ready random rows, then the rows a first decode call writes as its output, poisoned
// with NaN before it) gives the second call its older keys from the ready rows and its newest key
// and its query from the first call's output. A kernel that read the newest key or Q before its
// wait would read NaN. One and three tiles (the newest key in the first tile or the third: the
// ones issued ahead of the wait at head dim 64), at head dims 64 and 128, each also behind a
// leftpad_k of 3 (the table's first 3 entries -1): the early loads then start at logical key 3,
// a kernel that ignored the pad would read entry -1 or keys shifted by it (a wrong result), and
// one that counted the newest key from the table's end rather than the attended keys would issue
// it before its wait (NaN where the calls overlap). The control: the same call with an older key
// (its first attended one) from the first call's output must read NaN in some round, or the calls
// never overlapped and the test proved nothing.
TEST_F(AttentionCudaTest, DecodeReadsReadyKeysBeforeTheWaitAndTheNewestAfter) {
  if (!sm80::pdl_enabled() || !decode::pdl_active()) {
    GTEST_SKIP() << "PDL is off here, or the decode kernel that runs here carries no wait: a "
                    "device below sm_90, a CUDA runtime below 12.3 or GPUATTN_PDL=0";
  }
  // First call: one split a unit (B x Hkv units fill a wave: no workspace, nothing freed between
  // the calls), ~200 MB each of K and V at head dim 128: ~0.1 ms on an H200.
  constexpr int B = 48, Hq = 32, Hkv = 8, Sk = 2048, R = 512;
  const int X = B * Hq;  // the first call's output rows: pool rows [R, R + X)
  const auto dev = [](const HostTensor& t, void* ptr) {
    TensorView v = t.view(Device::cuda, ptr);
    TEST_CUDA_CHECK(cudaGetDevice(&v.device_index));
    return v;
  };
  for (const int D : {64, 128}) {
    HostTensor q1(f16, {B, 1, Hq, D}), k1(f16, {B, Sk, Hkv, D}), v1(f16, {B, Sk, Hkv, D});
    // The overlap needs a first call on the decode kernel, which lets its dependents start early;
    // under GPUATTN_KERNEL=sm80 (ctest's sm80. copy) it runs the sm_80 kernel, which does not.
    AttentionArgs probe;
    probe.q = q1.view(Device::cuda, reinterpret_cast<void*>(256));
    probe.k = k1.view(Device::cuda, reinterpret_cast<void*>(256));
    probe.v = v1.view(Device::cuda, reinterpret_cast<void*>(256));
    // Addresses never dereferenced (the probe only picks a kernel), apart so that out does not
    // overlap the inputs, which make_fwd_params refuses.
    probe.out = q1.view(Device::cuda, reinterpret_cast<void*>(std::uintptr_t{1} << 40));
    if (cuda_forward_kernel(make_fwd_params(probe)) != FwdKernel::decode_16x64) {
      GTEST_SKIP() << "the first call runs "
                   << tile_config(cuda_forward_kernel(make_fwd_params(probe))).name
                   << ", not decode_16x64 (GPUATTN_KERNEL names another kernel): no early start "
                      "of the second call to test";
    }
    q1.randomize(seed_of(current_test_name() + "/q1"));
    k1.randomize(seed_of(current_test_name() + "/k1"));
    v1.randomize(seed_of(current_test_name() + "/v1"));
    // Each case without leftpad_k and with pad = 3: the call then attends to logical keys pad ..
    // pad + Sk2 - 1 of its table, whose first pad entries are unset (-1, never to be read), and
    // reads its pages from key0 = pad in place, the early start's ranged loads among them.
    for (const int Sk2 : {50, 150}) {
      for (const int pad : {0, 3}) {
        SCOPED_TRACE("D " + std::to_string(D) + " keys " + std::to_string(Sk2) + " pad " +
                     std::to_string(pad));
        Stream stream;
        HostTensor pool(f16, {R + X, 1, 1, D}), out2(f16, {1, 1, 1, D});
        HostTensor table(DType::i32, {1, pad + Sk2}), control(DType::i32, {1, pad + Sk2}),
            used(DType::i32, {1}), start(DType::i32, {1});
        pool.randomize(seed_of(current_test_name() + "/pool"));
        for (std::int64_t i = std::int64_t{R} * D; i < pool.numel(); ++i) {
          pool.set(i, std::numeric_limits<float>::quiet_NaN());
        }
        // After the pad's entries, keys 0..Sk2-2 from ready rows (every third), the newest from
        // output row 7; q from row 5. The control's key 0 (entry pad, the first it reads) is
        // output row 9.
        std::vector<std::int32_t> entries(pad + Sk2, -1);
        for (int j = 0; j + 1 < Sk2; ++j) entries[pad + j] = (3 * j) % R;
        entries[pad + Sk2 - 1] = R + 7;
        std::memcpy(table.data(), entries.data(), entries.size() * 4);
        std::memcpy(control.data(), entries.data(), entries.size() * 4);
        static_cast<std::int32_t*>(control.data())[pad] = R + 9;
        static_cast<std::int32_t*>(used.data())[0] = pad + Sk2;
        static_cast<std::int32_t*>(start.data())[0] = pad;
        DeviceBuffer dq1(q1.bytes()), dk1(k1.bytes()), dv1(v1.bytes()), dpool(pool.bytes()),
            dout2(out2.bytes()), dtable(table.bytes()), dcontrol(control.bytes()),
            dused(used.bytes()), dstart(start.bytes());
        dq1.upload(q1.data());
        dk1.upload(k1.data());
        dv1.upload(v1.data());
        dpool.upload(pool.data());
        dtable.upload(table.data());
        dcontrol.upload(control.data());
        dused.upload(used.data());
        dstart.upload(start.data());
        auto* x = static_cast<std::uint16_t*>(dpool.get()) + std::int64_t{R} * D;
        const auto* poison = static_cast<const std::uint16_t*>(pool.data()) + std::int64_t{R} * D;
        HostTensor nan_out(f16, {1, 1, 1, D});
        nan_out.poison();

        AttentionArgs first;
        first.q = dev(q1, dq1.get());
        first.k = dev(k1, dk1.get());
        first.v = dev(v1, dv1.get());
        first.out = dev(HostTensor(f16, {B, 1, Hq, D}), x);
        first.backend = Backend::cuda;
        first.stream = stream.get();
        first.pdl = true;
        AttentionArgs second;
        second.q = dev(HostTensor(f16, {1, 1, 1, D}), x + 5 * D);
        second.k = dev(pool, dpool.get());
        second.v = second.k;
        second.out = dev(out2, dout2.get());
        second.block_table = dev(table, dtable.get());
        second.seqused_k = dev(used, dused.get());
        if (pad > 0) second.leftpad_k = dev(start, dstart.get());  // pad 0: the call without it
        second.causal = true;
        second.check_indices = false;
        second.backend = Backend::cuda;
        second.stream = stream.get();
        second.pdl = true;
        second.pdl_cache_ready = true;
        // Read in place by the decode kernel whatever GPUATTN_KERNEL names, not from a gathered
        // copy (whose gather, not the decode kernel, would be the kernel behind the first call).
        ASSERT_EQ(cuda_forward_kernel(make_fwd_params(second)), FwdKernel::decode_16x64);
        AttentionArgs broken = second;  // the promise broken: key 0 is the first call's too
        broken.block_table = dev(control, dcontrol.get());
        // Both calls, the first's output and the second's poisoned first; the second's output back.
        const auto run = [&](const AttentionArgs& call, HostTensor& got, HostTensor& got_pool) {
          TEST_CUDA_CHECK(cudaMemcpyAsync(x, poison, std::size_t(X) * D * 2, cudaMemcpyHostToDevice,
                                          stream.get()));
          TEST_CUDA_CHECK(cudaMemcpyAsync(dout2.get(), nan_out.data(), nan_out.bytes(),
                                          cudaMemcpyHostToDevice, stream.get()));
          attention_forward(first);
          attention_forward(call);
          TEST_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
          dpool.download(got_pool.data());
          dout2.download(got.data());
        };
        int overlapped = 0;
        for (int round = 0; round < 3; ++round) {
          SCOPED_TRACE("round " + std::to_string(round));
          HostTensor got_pool(f16, {R + X, 1, 1, D}), got(f16, {1, 1, 1, D});
          run(second, got, got_pool);
          // The reference from what the pool holds now: q = row R + 5, the attended keys and
          // values by the table (entries pad.., the pad's own never read).
          HostTensor q2(f16, {1, 1, 1, D}), k2(f16, {1, Sk2, 1, D});
          for (int d = 0; d < D; ++d) {
            q2.set(d, got_pool.get(std::int64_t{R + 5} * D + d));
            for (int j = 0; j < Sk2; ++j) {
              k2.set(std::int64_t{j} * D + d, got_pool.get(std::int64_t{entries[pad + j]} * D + d));
            }
          }
          for (std::int64_t i = 0; i < k2.numel(); ++i) {
            ASSERT_TRUE(std::isfinite(k2.get(i))) << "the first call left key element " << i;
          }
          AttentionArgs host;
          host.q = q2.view();
          host.k = k2.view();
          host.v = k2.view();
          host.out = out2.view();
          host.causal = true;
          const ReferenceResult ref = reference_attention(host);
          for (int d = 0; d < D; ++d) {
            const double want = ref.out[static_cast<std::size_t>(d)];
            const double o = got.get(d);
            ASSERT_TRUE(std::isfinite(o)) << "the second call read its newest key or q early";
            ASSERT_LE(std::fabs(o - want), max_abs_tol(f16) * std::max(1.0, std::fabs(want)))
                << "col " << d;
          }
          HostTensor got_broken(f16, {1, 1, 1, D}), pool_broken(f16, {R + X, 1, 1, D});
          run(broken, got_broken, pool_broken);
          for (int d = 0; d < D; ++d) {
            if (!std::isfinite(got_broken.get(d))) {
              ++overlapped;
              break;
            }
          }
        }
        EXPECT_GT(overlapped, 0)
            << "the control never read its early key before the first call "
               "wrote it: the calls did not overlap, and the test proved nothing";
      }
    }
  }
}

// ---- validation of device arguments: a clear gpuattn::Error, outputs untouched -----------------

// Whether `msg` contains `word` delimited by non-identifier characters.
bool names(const std::string& msg, const std::string& word) {
  auto ident = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  for (std::size_t at = msg.find(word); at != std::string::npos; at = msg.find(word, at + 1)) {
    const bool left = at == 0 || !ident(msg[at - 1]);
    const std::size_t end = at + word.size();
    const bool right = end == msg.size() || !ident(msg[end]);
    if (left && right) return true;
  }
  return false;
}

class AttentionCudaValidation : public AttentionCudaTest {
 protected:
  void SetUp() override {
    AttentionCudaTest::SetUp();
    if (IsSkipped()) return;
    // A small varlen GQA problem with lse: every kind of argument (q, k, v, out, lse, cu_seqlens).
    // total_q = 30 (lengths 10, 5, 15), total_k = 39 (12, 7, 20).
    problem_.emplace(varlen(4, 2, 64, f16, {10, 5, 15}, {12, 7, 20}), seed_of(current_test_name()));
    problem_->poison_outputs();
    TEST_CUDA_CHECK(cudaDeviceSynchronize());
    TEST_CUDA_CHECK(cudaGetDevice(&device_));
    before_ = problem_->output_snapshot();
  }

  // `a` must be rejected with a gpuattn::Error whose message names each of `words`, leaving out
  // and lse as they were, no CUDA error pending and the caller's current device unchanged.
  // Returns the message.
  std::string expect_rejected(const AttentionArgs& a, std::initializer_list<const char*> words) {
    const std::string msg = error_of([&] { attention_forward(a); });
    for (const char* w : words) {
      EXPECT_TRUE(names(msg, w)) << "the message does not name " << w << ": " << msg;
    }
    const cudaError_t pending = cudaGetLastError();
    EXPECT_EQ(pending, cudaSuccess)
        << "a rejected call left a CUDA error pending: " << cudaGetErrorName(pending);
    int device = -1;
    TEST_CUDA_CHECK(cudaGetDevice(&device));
    EXPECT_EQ(device, device_) << "a rejected call changed the current device";
    TEST_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(problem_->output_snapshot() == before_) << "out/lse changed by a rejected call";
    return msg;
  }

  static DeviceBuffer device_cu(const std::vector<std::int32_t>& cu) {
    DeviceBuffer d(cu.size() * sizeof(std::int32_t));
    d.upload(cu.data());
    return d;
  }

  std::optional<Problem> problem_;
  int device_ = 0;
  std::vector<unsigned char> before_;
};

// cu_seqlens on the device are validated too (on a host copy) before anything is launched.
TEST_F(AttentionCudaValidation, RejectsBadDeviceCuSeqlens) {
  {
    SCOPED_TRACE("cu_seqlens_q decreases");
    const DeviceBuffer bad = device_cu({0, 20, 10, 30});
    AttentionArgs a = problem_->device_args();
    a.cu_seqlens_q.data = bad.get();
    a.max_seqlen_q = 20;
    const std::string msg = expect_rejected(a, {"cu_seqlens_q"});
    EXPECT_NE(msg.find("decreas"), std::string::npos) << msg;
  }
  {
    SCOPED_TRACE("cu_seqlens_k ends at 35, k has 39 rows");
    const DeviceBuffer bad = device_cu({0, 12, 19, 35});
    AttentionArgs a = problem_->device_args();
    a.cu_seqlens_k.data = bad.get();
    expect_rejected(a, {"cu_seqlens_k"});
  }
  {
    SCOPED_TRACE("cu_seqlens_q starts at 3");
    const DeviceBuffer bad = device_cu({3, 13, 18, 30});
    AttentionArgs a = problem_->device_args();
    a.cu_seqlens_q.data = bad.get();
    expect_rejected(a, {"cu_seqlens_q"});
  }
  {
    SCOPED_TRACE("a k sequence of 20 rows with max_seqlen_k = 12");
    AttentionArgs a = problem_->device_args();
    a.max_seqlen_k = 12;
    const std::string msg = expect_rejected(a, {});
    EXPECT_NE(msg.find("max_seqlen"), std::string::npos) << msg;
  }
}

// A TensorView that says cuda but points at malloc'ed host memory.
TEST_F(AttentionCudaValidation, RejectsHostPointerInCudaTensor) {
  struct Target {
    const char* name;
    TensorView AttentionArgs::*member;
  };
  const Target targets[] = {{"q", &AttentionArgs::q},
                            {"k", &AttentionArgs::k},
                            {"v", &AttentionArgs::v},
                            {"out", &AttentionArgs::out},
                            {"lse", &AttentionArgs::lse},
                            {"cu_seqlens_q", &AttentionArgs::cu_seqlens_q},
                            {"cu_seqlens_k", &AttentionArgs::cu_seqlens_k}};
  for (const Target& t : targets) {
    SCOPED_TRACE(t.name);
    AttentionArgs a = problem_->device_args();
    TensorView& view = a.*(t.member);
    ASSERT_TRUE(view.is_contiguous());
    // A host copy of the device contents, so that only the pointer's kind is wrong.
    HostTensor host(view.dtype, {view.numel()});
    TEST_CUDA_CHECK(cudaMemcpy(host.data(), view.data, host.bytes(), cudaMemcpyDeviceToHost));
    const HostTensor copy = host;
    view.data = host.data();
    expect_rejected(a, {t.name});
    EXPECT_EQ(std::memcmp(host.data(), copy.data(), host.bytes()), 0)
        << "the host buffer was written";
  }
}

TEST_F(AttentionCudaValidation, RejectsCpuBackendWithDeviceTensors) {
  AttentionArgs a = problem_->device_args();
  a.backend = Backend::cpu;
  expect_rejected(a, {"cpu"});
}

TEST_F(AttentionCudaValidation, RejectsNonexistentDeviceIndex) {
  int count = 0;
  TEST_CUDA_CHECK(cudaGetDeviceCount(&count));
  AttentionArgs a = problem_->device_args();
  for (TensorView* t : {&a.q, &a.k, &a.v, &a.out, &a.lse, &a.cu_seqlens_q, &a.cu_seqlens_k}) {
    t->device_index = count;
  }
  expect_rejected(a, {});
}

}  // namespace
}  // namespace gpuattn::testing
