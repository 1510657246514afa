// CPU backend: tiled, threaded fp32 attention forward with online softmax (memory O(N)).
//
// A work item is (batch b, query head h, block of kBlockM query rows). Its thread converts the Q
// block to fp32 once (pre-scaled by scale * log2(e), so the softmax runs on exp2), then walks the
// key tiles the block can see (MaskPolicy::key_range, and tile_any_visible inside it: tiles no row
// of the block sees, e.g. tiles whose layout blocks are all off for these rows, are never
// loaded): each K/V tile is converted to fp32 once, S = Q K^T and
// O += P V run through one small register-blocked GEMM, and the softmax is online (running max m
// and sum l per row, accumulators rescaled when m grows). Tiles that are not fully visible are
// masked per element. Nothing of size Sq x Sk is ever stored.
//
// Every output row and LSE entry is written exactly once, after its last key tile, from
// thread-local buffers that were all allocated before the first write: an error (allocation,
// thread creation) can never leave `out` half-written. Results do not depend on the thread count:
// each item is computed by one thread in a fixed order.
#include "cpu/cpu_attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <limits>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "gpuattn/numeric.h"

namespace gpuattn {
namespace {

// Tile sizes: with D = 128 the Q, K^T, V, score and accumulator tiles of one thread take ~160 KB,
// which stays in L2. Tuned for speed; they only change the order of fp32 summation.
constexpr int kBlockM = 64;  // query rows per work item
constexpr int kBlockN = 64;  // keys per tile
// Register block of the GEMM micro-kernel: kMicroM x kMicroN accumulators (8 SSE / 4 AVX
// registers).
constexpr int kMicroM = 4;
constexpr int kMicroN = 8;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Storage types: load to fp32, store from fp32 (round to nearest even).
struct F32 {
  using T = float;
  static float load(T x) { return x; }
  static T store(float x) { return x; }
};
struct F16 {
  using T = std::uint16_t;
  static float load(T x) { return f16_to_float(x); }
  static T store(float x) { return float_to_f16(x); }
};
struct BF16 {
  using T = std::uint16_t;
  static float load(T x) { return bf16_to_float(x); }
  static T store(float x) { return float_to_bf16(x); }
};

// 8-bit K/V of a quantized cache (FwdParams::k_scale): loaded to fp32, then scaled per KV head.
struct I8 {
  using T = std::int8_t;
  static float load(T x) { return x; }
};
struct E4M3 {
  using T = std::uint8_t;
  static float load(T x) { return e4m3_to_float(x); }
};

int round_up(int x, int m) {
  return (x + m - 1) / m * m;
}

// C[M x N] += A[M x K] * B[K x N], row-major with leading dimensions lda/ldb/ldc.
// M % kMicroM == 0 and N % kMicroN == 0. The K loop runs in order, so every element of C is a plain
// sequential fp32 sum; the inner loops have fixed trip counts and vectorize at -O3.
void gemm_acc(int M, int N, int K, const float* __restrict A, int lda, const float* __restrict B,
              int ldb, float* __restrict C, int ldc) {
  for (int i0 = 0; i0 < M; i0 += kMicroM) {
    for (int j0 = 0; j0 < N; j0 += kMicroN) {
      float c[kMicroM][kMicroN];
      for (int i = 0; i < kMicroM; ++i) {
        for (int j = 0; j < kMicroN; ++j) c[i][j] = C[(i0 + i) * ldc + j0 + j];
      }
      for (int k = 0; k < K; ++k) {
        const float* b = B + k * ldb + j0;
        for (int i = 0; i < kMicroM; ++i) {
          const float a = A[(i0 + i) * lda + k];
          for (int j = 0; j < kMicroN; ++j) c[i][j] += a * b[j];
        }
      }
      for (int i = 0; i < kMicroM; ++i) {
        for (int j = 0; j < kMicroN; ++j) C[(i0 + i) * ldc + j0 + j] = c[i][j];
      }
    }
  }
}

// Compensated O += P V: Kahan summation per output element, `comp` holding the running error.
void gemm_acc_kahan(int M, int N, int K, const float* __restrict P, int ldp,
                    const float* __restrict V, int ldv, float* __restrict acc,
                    float* __restrict comp, int ldc) {
  for (int r = 0; r < M; ++r) {
    float* a = acc + r * ldc;
    float* e = comp + r * ldc;
    for (int c = 0; c < K; ++c) {
      const float pc = P[r * ldp + c];
      if (pc == 0.f) continue;  // masked key: adding zero changes nothing
      const float* v = V + c * ldv;
      for (int d = 0; d < N; ++d) {
        const float y = pc * v[d] - e[d];
        const float t = a[d] + y;
        e[d] = (t - a[d]) - y;
        a[d] = t;
      }
    }
  }
}

// Per-thread buffers, allocated before any work starts.
struct Workspace {
  Workspace(int d, bool compensated)
      : q(kBlockM * d),
        kt(d * kBlockN),
        v(kBlockN * d),
        s(kBlockM * kBlockN),
        acc(kBlockM * d),
        comp(compensated ? kBlockM * d : 0),
        m(kBlockM),
        l(kBlockM),
        lc(kBlockM),
        vis(kBlockM),
        seen(kBlockM) {}
  std::vector<float> q;     // [kBlockM, D], pre-scaled by scale * log2(e); padding rows are 0
  std::vector<float> kt;    // [D, kBlockN], K tile transposed
  std::vector<float> v;     // [kBlockN, D]
  std::vector<float> s;     // [kBlockM, kBlockN], scores, then probabilities
  std::vector<float> acc;   // [kBlockM, D], unnormalized output
  std::vector<float> comp;  // [kBlockM, D], Kahan compensation of acc (compensated only)
  std::vector<float> m;     // running max (log2 domain)
  std::vector<float> l;     // running softmax denominator
  std::vector<float> lc;    // Kahan compensation of l
  std::vector<int> vis;     // visible keys of each row so far (0 at the end: out 0, lse -inf)
  std::vector<int> seen;    // visible keys of each row within the current tile
};

struct WorkItem {
  int b, h, i0, rows;
  double cost;  // visible query-key pairs, for longest-first scheduling
};

// E: the storage type of q and out; KV: that of k and v (E, or an 8-bit quantized cache).
template <class E, class KV>
void process_item(const FwdParams& p, const WorkItem& it, Workspace& w) {
  using T = typename E::T;
  using TKV = typename KV::T;
  const T* q = static_cast<const T*>(p.q);
  const TKV* k = static_cast<const TKV*>(p.k);
  const TKV* v = static_cast<const TKV*>(p.v);
  T* o = static_cast<T*>(p.o);
  const int D = p.head_dim;
  const int b = it.b, h = it.h, hk = p.kv_head(h);
  const int lq = p.len_q(b), lk = p.keys_used(b);
  const int rows = it.rows;
  const int mpad = round_up(rows, kMicroM);
  const bool kahan = p.precision == Precision::compensated;
  const float kscale = p.kv_quantized() ? p.k_scale_of(hk) : 1.f;
  const float vscale = p.kv_quantized() ? p.v_scale_of(hk) : 1.f;

  // Q block -> fp32, rows beyond `rows` zero so the padded GEMM rows stay finite. An FP8 call's q
  // is E4M3 bytes, element x standing for x * q_scale[h]. The softmax scale goes on the scores
  // after the GEMM, as on the GPU: folded into q, a large scale overflowed q x scale to inf (NaN
  // out) where every score was small.
  for (int r = 0; r < mpad; ++r) {
    float* qr = &w.q[r * D];
    if (r < rows && p.q_quantized()) {
      const auto* src = static_cast<const std::uint8_t*>(p.q) + p.q_offset(b, it.i0 + r, h);
      const float qs = p.q_scale_of(h);
      for (int d = 0; d < D; ++d) qr[d] = E4M3::load(src[d]) * qs;
    } else if (r < rows) {
      const T* src = q + p.q_offset(b, it.i0 + r, h);
      for (int d = 0; d < D; ++d) qr[d] = E::load(src[d]);
    } else {
      std::fill(qr, qr + D, 0.f);
    }
  }
  const MaskPolicy mask = p.mask(h);
  // ALiBi's slope in the scores' log2 units (0: none).
  const float alibi =
      p.has_alibi() ? static_cast<float>(p.alibi_slope(b, h) * 1.4426950408889634) : 0.f;
  const int i_last = it.i0 + rows - 1;
  std::fill(w.vis.begin(), w.vis.end(), 0);
  const KeyRange keys = mask.key_range(it.i0, i_last, lq, lk);
  std::fill(w.m.begin(), w.m.end(), kNegInf);
  std::fill(w.l.begin(), w.l.end(), 0.f);
  std::fill(w.lc.begin(), w.lc.end(), 0.f);
  std::fill(w.acc.begin(), w.acc.begin() + mpad * D, 0.f);
  if (kahan) std::fill(w.comp.begin(), w.comp.begin() + mpad * D, 0.f);

  // Key tiles outside the block's key range, or inside it but seen by no row, are never loaded.
  // 64-bit steps: a last tile within kBlockN of 2^31 - 1 keys wrapped an int step negative.
  for (std::int64_t j0_step = keys.begin; j0_step < keys.end; j0_step += kBlockN) {
    const int j0 = static_cast<int>(j0_step);
    const int bc = std::min(kBlockN, keys.end - j0);
    const int j_last = j0 + bc - 1;
    if (!mask.tile_any_visible(it.i0, i_last, j0, j_last, lq, lk)) continue;
    const bool full = mask.tile_fully_visible(it.i0, i_last, j0, j_last, lq, lk);
    const int npad = round_up(bc, kMicroN);
    for (int c = 0; c < bc; ++c) {
      const TKV* ks = k + p.k_offset(b, j0 + c, hk);
      const TKV* vs = v + p.v_offset(b, j0 + c, hk);
      float* vd = &w.v[c * D];
      if constexpr (std::is_same_v<KV, E>) {
        for (int d = 0; d < D; ++d) w.kt[d * kBlockN + c] = KV::load(ks[d]);
        for (int d = 0; d < D; ++d) vd[d] = KV::load(vs[d]);
      } else {
        for (int d = 0; d < D; ++d) w.kt[d * kBlockN + c] = KV::load(ks[d]) * kscale;
        for (int d = 0; d < D; ++d) vd[d] = KV::load(vs[d]) * vscale;
      }
    }
    for (int c = bc; c < npad; ++c) {
      for (int d = 0; d < D; ++d) w.kt[d * kBlockN + c] = 0.f;
    }

    // S = Q K^T x scale x log2(e) (log2 domain).
    std::fill(w.s.begin(), w.s.begin() + mpad * kBlockN, 0.f);
    gemm_acc(mpad, npad, D, w.q.data(), D, w.kt.data(), kBlockN, w.s.data(), kBlockN);
    for (int r = 0; r < rows; ++r) {
      float* sr = &w.s[r * kBlockN];
      if (p.has_softcap()) {  // softcap x tanh(q.k x scale / softcap), before the mask
        for (int c = 0; c < bc; ++c) sr[c] = std::tanh(sr[c] * p.softcap_pre) * p.scale_log2;
      } else {
        for (int c = 0; c < bc; ++c) sr[c] *= p.scale_log2;
      }
      if (alibi != 0.f) {  // -slope x |i + lk - lq - j| (log2 units), before the mask
        const std::int64_t d0 = std::int64_t{it.i0} + r + lk - lq - j0;  // distance to key j0
        for (int c = 0; c < bc; ++c) {
          sr[c] -= alibi * static_cast<float>(std::llabs(d0 - c));
        }
      }
    }

    // Mask: scores of keys a row does not see become -inf (exp2 turns them into 0).
    for (int r = 0; r < mpad; ++r) {
      if (r >= rows) {
        w.seen[r] = 0;
      } else if (full) {
        w.seen[r] = bc;
      } else {
        float* sr = &w.s[r * kBlockN];
        int n = 0;
        for (int c = 0; c < bc; ++c) {
          if (mask.visible(it.i0 + r, j0 + c, lq, lk)) {
            ++n;
          } else {
            sr[c] = kNegInf;
          }
        }
        w.seen[r] = n;
      }
      w.vis[r] += w.seen[r];
    }

    // Online softmax: P = exp2(S - m_new), rescale the running state by exp2(m_old - m_new).
    for (int r = 0; r < mpad; ++r) {
      float* sr = &w.s[r * kBlockN];
      if (w.seen[r] == 0) {  // padding row, or every key of this tile is masked for it
        std::fill(sr, sr + bc, 0.f);
        continue;
      }
      float mt = kNegInf;
      for (int c = 0; c < bc; ++c) mt = std::max(mt, sr[c]);
      const float m_new = std::max(w.m[r], mt);
      // All visible scores -inf (infinite inputs): subtract 0 instead so exp2 gives 0, not NaN.
      const float m_ref = m_new == kNegInf ? 0.f : m_new;
      const float alpha = std::exp2(w.m[r] - m_ref);
      w.m[r] = m_new;
      float sum = 0.f;
      for (int c = 0; c < bc; ++c) {
        sr[c] = std::exp2(sr[c] - m_ref);
        sum += sr[c];
      }
      float* ar = &w.acc[r * D];
      if (alpha != 1.f) {
        for (int d = 0; d < D; ++d) ar[d] *= alpha;
      }
      if (kahan) {
        float* er = &w.comp[r * D];
        if (alpha != 1.f) {
          for (int d = 0; d < D; ++d) er[d] *= alpha;
        }
        float l = w.l[r] * alpha, lc = w.lc[r] * alpha;
        for (int c = 0; c < bc; ++c) {
          if (sr[c] == 0.f) continue;  // masked key (or an underflow): adding zero changes nothing
          const float y = sr[c] - lc;
          const float t = l + y;
          lc = (t - l) - y;
          l = t;
        }
        w.l[r] = l;
        w.lc[r] = lc;
      } else {
        w.l[r] = w.l[r] * alpha + sum;
      }
    }

    // O += P V.
    if (kahan) {
      gemm_acc_kahan(mpad, D, bc, w.s.data(), kBlockN, w.v.data(), D, w.acc.data(), w.comp.data(),
                     D);
    } else {
      gemm_acc(mpad, D, bc, w.s.data(), kBlockN, w.v.data(), D, w.acc.data(), D);
    }
  }

  // Epilogue: each output row (and LSE entry) written once.
  for (int r = 0; r < rows; ++r) {
    const std::int64_t i = it.i0 + r;
    T* dst = o + p.o_offset(b, i, h);
    if (w.vis[r] == 0) {  // sees no key: out = 0, lse = -inf
      for (int d = 0; d < D; ++d) dst[d] = E::store(0.f);
      if (p.lse) p.lse[p.lse_offset(b, i, h)] = kNegInf;
      continue;
    }
    const float* ar = &w.acc[r * D];
    double l = w.l[r];
    if (kahan) {
      l -= w.lc[r];
      const float inv = static_cast<float>(1.0 / l);
      const float* er = &w.comp[r * D];
      for (int d = 0; d < D; ++d) dst[d] = E::store((ar[d] - er[d]) * inv);
    } else {
      const float inv = static_cast<float>(1.0 / l);
      for (int d = 0; d < D; ++d) dst[d] = E::store(ar[d] * inv);
    }
    if (p.lse) {
      constexpr double kLn2 = 0.6931471805599453;
      p.lse[p.lse_offset(b, i, h)] = static_cast<float>(w.m[r] * kLn2 + std::log(l));
    }
  }
}

// Keys in the tiles the item will load, per row: the cost of a block-sparse item (an exact count
// of its visible keys would cost O(key blocks) per row).
double tile_keys(const MaskPolicy& mask, int i0, int rows, int lq, int lk) {
  const int i_last = i0 + rows - 1;
  const KeyRange keys = mask.key_range(i0, i_last, lq, lk);
  double n = 0;
  for (std::int64_t j0_step = keys.begin; j0_step < keys.end; j0_step += kBlockN) {
    const int j0 = static_cast<int>(j0_step);
    const int j_last = static_cast<int>(std::min<std::int64_t>(j0_step + kBlockN, keys.end) - 1);
    if (mask.tile_any_visible(i0, i_last, j0, j_last, lq, lk)) n += j_last - j0 + 1;
  }
  return n;
}

std::vector<WorkItem> make_work_items(const FwdParams& p) {
  std::vector<WorkItem> items;
  const bool per_head = p.has_block_layout() && p.block_head_stride != 0;
  for (int b = 0; b < p.batch; ++b) {
    const int lq = p.len_q(b), lk = p.keys_used(b);
    for (std::int64_t i0_step = 0; i0_step < lq; i0_step += kBlockM) {  // 64-bit: see above
      const int i0 = static_cast<int>(i0_step);
      const int rows = std::min(kBlockM, lq - i0);
      // Constant per row plus visible keys (block layouts: keys of the tiles loaded): enough to
      // order the work.
      double cost = 16.0 * rows;
      if (!p.has_block_layout()) {
        for (int i = i0; i < i0 + rows; ++i) cost += p.visible_keys(i, lq, lk, 0);
      } else if (!per_head) {
        cost += rows * tile_keys(p.mask(0), i0, rows, lq, lk);
      }
      for (int h = 0; h < p.hq; ++h) {
        const double c =
            per_head ? 16.0 * rows + rows * tile_keys(p.mask(h), i0, rows, lq, lk) : cost;
        items.push_back({b, h, i0, rows, c});
      }
    }
  }
  // Longest first, so that the last items to finish are short ones (causal, varlen). Stable: the
  // heads of one block (sharing K/V) stay next to each other.
  std::stable_sort(items.begin(), items.end(),
                   [](const WorkItem& x, const WorkItem& y) { return x.cost > y.cost; });
  return items;
}

template <class E, class KV = E>
void run(const FwdParams& p) {
  const std::vector<WorkItem> items = make_work_items(p);
  if (items.empty()) return;
  std::size_t nthreads = p.num_threads > 0 ? static_cast<std::size_t>(p.num_threads)
                                           : std::max(1u, std::thread::hardware_concurrency());
  nthreads = std::min(nthreads, items.size());

  // All allocation happens here, before the first output write.
  std::vector<Workspace> ws;
  ws.reserve(nthreads);
  for (std::size_t t = 0; t < nthreads; ++t) {
    ws.emplace_back(p.head_dim, p.precision == Precision::compensated);
  }
  std::vector<std::thread> threads;
  threads.reserve(nthreads - 1);

  std::atomic<std::size_t> next{0};
  auto worker = [&](Workspace& w) {
    for (std::size_t idx; (idx = next.fetch_add(1, std::memory_order_relaxed)) < items.size();) {
      process_item<E, KV>(p, items[idx], w);
    }
  };
  for (std::size_t t = 1; t < nthreads; ++t) {
    try {
      threads.emplace_back([&worker, &w = ws[t]] { worker(w); });
    } catch (const std::exception&) {
      break;  // could not start another thread: the ones running (and this one) share the work
    }
  }
  worker(ws[0]);
  for (std::thread& t : threads) t.join();
}

// q/out of E's type, k/v of p.kv_dtype.
template <class E>
void run_kv(const FwdParams& p) {
  if (p.kv_dtype == DType::i8) return run<E, I8>(p);
  if (p.kv_dtype == DType::e4m3) return run<E, E4M3>(p);
  run<E>(p);
}

}  // namespace

void cpu_attention_forward(const FwdParams& p) {
  switch (p.dtype) {
    case DType::f32: run_kv<F32>(p); return;
    case DType::f16: run_kv<F16>(p); return;
    case DType::bf16: run_kv<BF16>(p); return;
    case DType::i32:
    case DType::u8:
    case DType::i8:
    case DType::e4m3: break;
  }
  throw Error(ErrorCode::not_supported,
              std::string("gpuattn::cpu_attention_forward: dtype ") + to_string(p.dtype));
}

}  // namespace gpuattn
