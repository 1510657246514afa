// Shared test helpers: host tensors with random contents, poisoning, comparison vs the reference.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpuattn/attention.h"
#include "gpuattn/numeric.h"
#include "gpuattn/reference.h"

namespace gpuattn::testing {

// `t` (a TensorView or a test's own view with rank / shape / stride) with each size-1 dim but the
// last 2^40 elements apart: the same elements, through strides that no kernel may use (they are
// past what a TMA map holds).
template <class View>
void spread_unit_dims(View& t) {
  for (int d = 0; d + 1 < t.rank; ++d) {
    if (t.shape[d] == 1) t.stride[d] = std::int64_t{1} << 40;
  }
}

// splitmix64: the next 64 random bits of `state`.
inline std::uint64_t next_random(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The random fills' table: 65536 samples of N(0, 1) * scale, fresh for every seed. Drawing and
// converting a sample per element cost ~20 ns; the big GPU cases fill ~1e8 elements.
inline std::vector<float> normal_table(std::uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> table(1u << 16);
  for (float& t : table) t = dist(rng) * scale;
  return table;
}
// A table's values in the storage bits of a 16-bit dtype (f16 or bf16).
inline std::vector<std::uint16_t> table_bits16(const std::vector<float>& table, DType dtype) {
  std::vector<std::uint16_t> bits(table.size());
  for (std::size_t i = 0; i < table.size(); ++i) {
    bits[i] = dtype == DType::bf16 ? float_to_bf16(table[i]) : float_to_f16(table[i]);
  }
  return bits;
}
// store(i, k) for i in [0, n): k a table index, 16 bits of next_random(state) each (4 a draw).
template <class Store>
void pick_from_table(std::int64_t n, std::uint64_t& state, Store store) {
  std::uint64_t r = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (i % 4 == 0) r = next_random(state);
    store(i, static_cast<std::uint32_t>((r >> (16 * (i % 4))) & 0xffffu));
  }
}

// A contiguous host tensor owning its storage; data() is 16-byte aligned.
struct HostTensor {
  DType dtype = DType::f16;
  std::vector<std::int64_t> shape;
  std::vector<std::uint64_t> storage;  // 8-byte units; data() is 16-byte aligned by the allocator

  HostTensor() = default;
  HostTensor(DType t, std::vector<std::int64_t> s) : dtype(t), shape(std::move(s)) {
    storage.assign((numel() * element_size(t) + 15) / 8 + 2, 0);
  }
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
  void* data() {
    auto p = reinterpret_cast<std::uintptr_t>(storage.data());
    return reinterpret_cast<void*>((p + 15) & ~std::uintptr_t(15));
  }
  const void* data() const { return const_cast<HostTensor*>(this)->data(); }
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * element_size(dtype); }

  float get(std::int64_t i) const {
    switch (dtype) {
      case DType::f16: return f16_to_float(static_cast<const std::uint16_t*>(data())[i]);
      case DType::bf16: return bf16_to_float(static_cast<const std::uint16_t*>(data())[i]);
      case DType::f32: return static_cast<const float*>(data())[i];
      case DType::i32: return static_cast<float>(static_cast<const std::int32_t*>(data())[i]);
      case DType::u8: return static_cast<float>(static_cast<const std::uint8_t*>(data())[i]);
      case DType::i8: return static_cast<float>(static_cast<const std::int8_t*>(data())[i]);
      case DType::e4m3: return e4m3_to_float(static_cast<const std::uint8_t*>(data())[i]);
    }
    return 0.f;
  }
  void set(std::int64_t i, float v) {
    switch (dtype) {
      case DType::f16: static_cast<std::uint16_t*>(data())[i] = float_to_f16(v); break;
      case DType::bf16: static_cast<std::uint16_t*>(data())[i] = float_to_bf16(v); break;
      case DType::f32: static_cast<float*>(data())[i] = v; break;
      case DType::i32: static_cast<std::int32_t*>(data())[i] = static_cast<std::int32_t>(v); break;
      case DType::u8: static_cast<std::uint8_t*>(data())[i] = static_cast<std::uint8_t>(v); break;
      case DType::i8: static_cast<std::int8_t*>(data())[i] = float_to_i8(v); break;
      case DType::e4m3: static_cast<std::uint8_t*>(data())[i] = float_to_e4m3(v); break;
    }
  }
  // Normal(0, 1) * scale, fresh for every seed: picked from normal_table(seed, scale).
  void randomize(std::uint64_t seed, float scale = 1.f) {
    const std::vector<float> table = normal_table(seed, scale);
    std::uint64_t state = seed ^ 0x6a09e667f3bcc909ull;
    if (dtype == DType::f16 || dtype == DType::bf16) {
      const std::vector<std::uint16_t> bits = table_bits16(table, dtype);
      auto* e = static_cast<std::uint16_t*>(data());
      pick_from_table(numel(), state, [&](std::int64_t i, std::uint32_t k) { e[i] = bits[k]; });
      return;
    }
    pick_from_table(numel(), state, [&](std::int64_t i, std::uint32_t k) { set(i, table[k]); });
  }
  // Fill with NaN so that any element the kernel does not write fails the comparison.
  void poison() {
    if (dtype == DType::f16 || dtype == DType::bf16) {
      const std::uint16_t nan =
          dtype == DType::f16 ? float_to_f16(std::nanf("")) : float_to_bf16(std::nanf(""));
      std::fill_n(static_cast<std::uint16_t*>(data()), numel(), nan);
      return;
    }
    for (std::int64_t i = 0; i < numel(); ++i) set(i, std::numeric_limits<float>::quiet_NaN());
  }
  TensorView view(Device dev = Device::cpu, void* ptr = nullptr) const {
    if (shape.size() > static_cast<std::size_t>(TensorView::kMaxRank)) {
      throw std::logic_error("HostTensor::view: rank " + std::to_string(shape.size()) +
                             " exceeds TensorView::kMaxRank (" +
                             std::to_string(TensorView::kMaxRank) + ")");
    }
    TensorView t;
    t.data = ptr ? ptr : const_cast<void*>(data());
    t.dtype = dtype;
    t.device = dev;
    t.rank = static_cast<int>(shape.size());
    std::int64_t st = 1;
    for (int d = t.rank - 1; d >= 0; --d) {
      t.shape[d] = shape[d];
      t.stride[d] = st;
      st *= shape[d];
    }
    return t;
  }
};

// AttentionArgs viewing q, k, v, out (and lse where given), every other field at its default.
inline AttentionArgs tensor_args(const HostTensor& q, const HostTensor& k, const HostTensor& v,
                                 const HostTensor& out, const HostTensor* lse = nullptr) {
  AttentionArgs a;
  a.q = q.view();
  a.k = k.view();
  a.v = v.view();
  a.out = out.view();
  if (lse) a.lse = lse->view();
  return a;
}

inline MaskSpec make_mask(int left, int right, int global_tokens = 0, int global_stride = 0) {
  MaskSpec m;
  m.window_left = left;
  m.window_right = right;
  m.global_tokens = global_tokens;
  m.global_stride = global_stride;
  return m;
}

// An int32 vector as a host tensor [n] (seqused_k, cache_seqlens).
inline HostTensor int32s(const std::vector<int>& v) {
  HostTensor t(DType::i32, {static_cast<std::int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i) static_cast<std::int32_t*>(t.data())[i] = v[i];
  return t;
}

inline HostTensor make_cu_seqlens(const std::vector<int>& lens) {
  HostTensor t(DType::i32, {static_cast<std::int64_t>(lens.size()) + 1});
  auto* p = static_cast<std::int32_t*>(t.data());
  p[0] = 0;
  for (std::size_t i = 0; i < lens.size(); ++i) p[i + 1] = p[i] + lens[i];
  return t;
}

// A paged copy of a dense K or V cache [B, Sk, Hkv, D] (AttentionArgs::block_table): pages of
// page_size keys laid out in a pool [num_pages, page_size, Hkv, D] in a shuffled order, with
// `extra` pages of random values no sequence uses; table [B, ceil(Sk / page_size)] lists each
// sequence's pages. Entries past a sequence's `used` keys (all of them used when `used` is empty),
// and those wholly before its `start` key (leftpad_k; none when `start` is empty), are -1 (never
// read), so a kernel that reads them fails. k and v share one table: call page_cache for both
// with the same seed.
struct PagedCache {
  HostTensor k, v, table;
};
inline PagedCache page_cache(const HostTensor& k, const HostTensor& v, int page_size,
                             const std::vector<int>& used, int extra, std::uint64_t seed,
                             const std::vector<int>& start = {}) {
  const std::int64_t B = k.shape[0], Sk = k.shape[1], row = k.shape[2] * k.shape[3];
  const std::int64_t per_seq = (Sk + page_size - 1) / page_size, pages = B * per_seq + extra;
  std::vector<std::int64_t> order(static_cast<std::size_t>(pages));
  for (std::int64_t i = 0; i < pages; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  PagedCache c{HostTensor(k.dtype, {pages, page_size, k.shape[2], k.shape[3]}),
               HostTensor(v.dtype, {pages, page_size, v.shape[2], v.shape[3]}),
               HostTensor(DType::i32, {B, per_seq})};
  c.k.randomize(seed + 1);  // unused pages and slots hold values too
  c.v.randomize(seed + 2);
  const std::size_t es = element_size(k.dtype), row_bytes = static_cast<std::size_t>(row) * es;
  auto* table = static_cast<std::int32_t*>(c.table.data());
  for (std::int64_t b = 0; b < B; ++b) {
    const std::int64_t keys = used.empty() ? Sk : used[static_cast<std::size_t>(b)];
    const std::int64_t first = start.empty() ? 0 : start[static_cast<std::size_t>(b)];
    for (std::int64_t i = 0; i < per_seq; ++i) {
      const std::int64_t page = order[static_cast<std::size_t>(b * per_seq + i)];
      const bool read = i * page_size < keys && (i + 1) * page_size > first;
      table[b * per_seq + i] = read ? static_cast<std::int32_t>(page) : -1;
      for (std::int64_t s = 0; s < page_size && i * page_size + s < Sk; ++s) {
        const std::int64_t src = (b * Sk + i * page_size + s) * row,
                           dst = (page * page_size + s) * row;
        std::memcpy(static_cast<char*>(c.k.data()) + dst * es,
                    static_cast<const char*>(k.data()) + src * es, row_bytes);
        std::memcpy(static_cast<char*>(c.v.data()) + dst * es,
                    static_cast<const char*>(v.data()) + src * es, row_bytes);
      }
    }
  }
  return c;
}

struct Comparison {
  double rel_err = 0;          // ||out - ref|| / ||ref||
  double max_abs = 0;          // max |out - ref|
  double cosine = 1;           // <out, ref> / (||out|| ||ref||)
  double lse_rel = 0;          // max |lse - ref| / max(1, |ref|)  (0 when lse not compared)
  std::int64_t nonfinite = 0;  // NaN/inf in out (poison left behind, or overflow)
};

// Compares `out` ([total_q, Hq, D] packed rows, any of the api layouts flattened row-major) and
// optionally `lse` against the reference rows. `lse_index(row, h)` maps to the lse buffer index.
template <class LseIndex>
Comparison compare(const ReferenceResult& ref, const HostTensor& out, int hq, int d,
                   const std::vector<float>* lse, LseIndex lse_index) {
  Comparison c;
  double num = 0, den = 0, dot = 0, n_out = 0;
  for (std::size_t ri = 0; ri < ref.rows.size(); ++ri) {
    const std::int64_t row = ref.rows[ri];
    for (int h = 0; h < hq; ++h) {
      for (int k = 0; k < d; ++k) {
        const double o = out.get((row * hq + h) * d + k);
        const double r = ref.out[(ri * hq + h) * d + k];
        if (!std::isfinite(o)) {
          ++c.nonfinite;
          continue;
        }
        num += (o - r) * (o - r);
        den += r * r;
        dot += o * r;
        n_out += o * o;
        c.max_abs = std::max(c.max_abs, std::fabs(o - r));
      }
      if (lse) {
        const double l = (*lse)[static_cast<std::size_t>(lse_index(row, h))];
        const double r = ref.lse[ri * hq + h];
        double e;
        if (std::isinf(r)) {
          e = (std::isinf(l) && (l < 0) == (r < 0)) ? 0.0 : std::numeric_limits<double>::infinity();
        } else {
          e = std::isfinite(l) ? std::fabs(l - r) / std::max(1.0, std::fabs(r))
                               : std::numeric_limits<double>::infinity();
        }
        c.lse_rel = std::max(c.lse_rel, e);
      }
    }
  }
  c.rel_err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  c.cosine = (den > 0 && n_out > 0) ? dot / std::sqrt(den * n_out) : (den == n_out ? 1.0 : 0.0);
  return c;
}

}  // namespace gpuattn::testing
