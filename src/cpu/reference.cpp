// fp64 reference: the oracle every backend is tested against. Plain loops over rows, heads and
// keys, no tiling: each q, k and v row converted to fp64 once, every product and sum in fp64.
#include "gpuattn/reference.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/fwd_params.h"
#include "gpuattn/numeric.h"

namespace gpuattn {
namespace {

// n elements of a type of 1- or 2-byte codes at e, through a table of every code's value (kConv's,
// taken once).
template <typename Code, float (*kConv)(Code)>
void load_codes(const Code* e, int n, double* out) {
  static const std::vector<float> table = [] {
    std::vector<float> v(std::size_t{1} << (8 * sizeof(Code)));
    for (std::size_t c = 0; c < v.size(); ++c) v[c] = kConv(static_cast<Code>(c));
    return v;
  }();
  for (int d = 0; d < n; ++d) out[d] = table[e[d]];
}

// Elements [off, off + n) of a tensor as doubles: the reference multiplies and sums in fp64. The
// last dim is contiguous in every layout, so a row of D is n consecutive elements. fp16 and E4M3
// go through tables of their 65536 / 256 values (load_codes): per element, the conversion's
// branches (fp16) and ldexp (E4M3: ~6 ns an element, 0.9 us a key of a D64 row, most of an FP8
// test's time) were most of the reference's time.
void load_row(const void* base, DType t, std::int64_t off, int n, double* out) {
  switch (t) {
    case DType::f16:
      return load_codes<std::uint16_t, f16_to_float>(static_cast<const std::uint16_t*>(base) + off,
                                                     n, out);
    case DType::e4m3:
      return load_codes<std::uint8_t, e4m3_to_float>(static_cast<const std::uint8_t*>(base) + off,
                                                     n, out);
    case DType::bf16: {
      const auto* e = static_cast<const std::uint16_t*>(base) + off;
      for (int d = 0; d < n; ++d) out[d] = bf16_to_float(e[d]);
      return;
    }
    default:
      for (int d = 0; d < n; ++d) out[d] = element_to_float(base, t, off + d);
  }
}

}  // namespace

ReferenceResult reference_attention(const AttentionArgs& args,
                                    const std::vector<std::int64_t>& rows) {
  const FwdParams p = make_fwd_params(args);
  if (p.device != Device::cpu) {
    throw Error(ErrorCode::invalid_argument,
                "gpuattn::reference_attention: tensors must be host (cpu) tensors");
  }
  ReferenceResult r;
  if (rows.empty()) {
    r.rows.resize(static_cast<std::size_t>(p.total_q));
    for (std::int64_t i = 0; i < p.total_q; ++i) r.rows[static_cast<std::size_t>(i)] = i;
  } else {
    r.rows = rows;
  }
  const int D = p.head_dim;
  const std::size_t n = r.rows.size();
  r.out.assign(n * p.hq * D, 0.0);
  r.lse.assign(n * p.hq, -std::numeric_limits<double>::infinity());

  // Scores and visible keys of the row, grown to the longest sequence a checked row is in (a
  // varlen call's seqlen_k is only the caller's bound, max_seqlen_k: up to 2^31 - 1).
  std::vector<double> s;
  std::vector<int> keys;
  std::vector<double> acc(static_cast<std::size_t>(D));
  std::vector<double> qd(static_cast<std::size_t>(D)), kv(static_cast<std::size_t>(D));
  for (std::size_t ri = 0; ri < n; ++ri) {
    const std::int64_t row = r.rows[ri];
    if (row < 0 || row >= p.total_q) {
      throw Error(ErrorCode::invalid_argument, "gpuattn::reference_attention: row " +
                                                   std::to_string(row) + " outside [0, " +
                                                   std::to_string(p.total_q) + ")");
    }
    int b;
    std::int64_t i;
    if (p.is_varlen()) {
      const std::int32_t* cu = p.cu_seqlens_q;
      b = static_cast<int>(std::upper_bound(cu, cu + p.batch + 1, row) - cu) - 1;
      while (b + 1 < p.batch && cu[b + 1] == cu[b]) ++b;  // skip empty sequences
      i = row - cu[b];
    } else {
      b = static_cast<int>(row / p.seqlen_q);
      i = row % p.seqlen_q;
    }
    const int lq = p.len_q(b), lk = p.keys_used(b);
    if (keys.size() < static_cast<std::size_t>(lk)) {
      keys.resize(static_cast<std::size_t>(lk));
      s.resize(static_cast<std::size_t>(lk));
    }
    for (int h = 0; h < p.hq; ++h) {
      // Visible keys of the row for this head (the block layout may differ per head).
      const MaskPolicy mask = p.mask(h);
      int nvis = 0;
      for (int j = 0; j < lk; ++j) {
        if (mask.visible(static_cast<int>(i), j, lq, lk)) keys[nvis++] = j;
      }
      if (nvis == 0) continue;  // out 0, lse -inf
      const int hk = p.kv_head(h);
      // A quantized cache's elements stand for x * scale.
      const double ks = p.kv_quantized() ? p.k_scale_of(hk) : 1.0;
      const double vs = p.kv_quantized() ? p.v_scale_of(hk) : 1.0;
      load_row(p.q, p.q_quantized() ? DType::e4m3 : p.dtype, p.q_offset(b, i, h), D, qd.data());
      // An FP8 call's q element x stands for x * q_scale[h].
      const double qs = p.q_quantized() ? p.q_scale_of(h) : 1.0;
      // ALiBi: -slope x |i + lk - lq - j| on every score, after the scale and the soft-cap.
      const double slope = p.has_alibi() ? static_cast<double>(p.alibi_slope(b, h)) : 0.0;
      const std::int64_t pos = i + lk - lq;  // the row's key position
      double m = -std::numeric_limits<double>::infinity();
      for (int t = 0; t < nvis; ++t) {
        load_row(p.k, p.kv_dtype, p.k_offset(b, keys[t], hk), D, kv.data());
        // q . k as 4 partial sums over d mod 4, added at the end: one chain of D dependent adds
        // made the dot product wait on the adder's latency.
        double dot4[4] = {0, 0, 0, 0};
        int d = 0;
        for (; d + 4 <= D; d += 4) {
          for (int u = 0; u < 4; ++u) dot4[u] += qd[d + u] * kv[d + u];
        }
        for (; d < D; ++d) dot4[0] += qd[d] * kv[d];
        const double dot = (dot4[0] + dot4[1]) + (dot4[2] + dot4[3]);
        s[t] = dot * qs * ks * static_cast<double>(p.scale);
        if (p.has_softcap()) {  // softcap x tanh(score / softcap), softcap exactly
          const double cap = static_cast<double>(p.softcap);
          s[t] = cap * std::tanh(s[t] / cap);
        }
        if (slope != 0.0) s[t] -= slope * static_cast<double>(std::llabs(pos - keys[t]));
        m = std::max(m, s[t]);
      }
      double sum = 0;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int t = 0; t < nvis; ++t) {
        const double e = std::exp(s[t] - m);
        sum += e;
        load_row(p.v, p.kv_dtype, p.v_offset(b, keys[t], hk), D, kv.data());
        for (int d = 0; d < D; ++d) acc[d] += e * vs * kv[d];
      }
      double* o = &r.out[(ri * p.hq + h) * D];
      for (int d = 0; d < D; ++d) o[d] = acc[d] / sum;
      r.lse[ri * p.hq + h] = m + std::log(sum);
    }
  }
  return r;
}

}  // namespace gpuattn
