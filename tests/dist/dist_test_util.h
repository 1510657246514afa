// A sequence-parallel problem for the tests: global q, k, v of random values, cut into shards by a
// layout, the shards' outputs put back in global order, and the comparison with the fp64
// reference over the whole sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "common/test_util.h"
#include "gpuattn/distributed.h"

namespace gpuattn::testing {

struct SpProblem {
  int world = 2;
  int batch = 1, rows = 16, hq = 4, hkv = 2, head_dim = 64;  // rows: per rank
  DType dtype = DType::f32;
  bool causal = false;
  ShardLayout layout = ShardLayout::contiguous;
  SeqParallelStrategy strategy = SeqParallelStrategy::ring;
  std::uint64_t seed = 1;

  std::int64_t seq() const { return static_cast<std::int64_t>(world) * rows; }
};

// The global tensors and each rank's shards (host memory, contiguous).
struct SpData {
  HostTensor q, k, v;                              // [B, S, H, D]
  std::vector<HostTensor> sq, sk, sv, sout, slse;  // per rank; out poisoned, lse NaN
};

// Copies rows `rows` (global order) of a [B, S, H, D] tensor into a new [B, rows, H, D] one.
inline HostTensor gather_rows(const HostTensor& t, const std::vector<std::int64_t>& rows) {
  const std::int64_t B = t.shape[0], S = t.shape[1], row = t.shape[2] * t.shape[3];
  const std::int64_t n = static_cast<std::int64_t>(rows.size());
  HostTensor out(t.dtype, {B, n, t.shape[2], t.shape[3]});
  const std::size_t es = element_size(t.dtype);
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t i = 0; i < n; ++i) {
      std::memcpy(static_cast<char*>(out.data()) + ((b * n + i) * row) * es,
                  static_cast<const char*>(t.data()) + ((b * S + rows[i]) * row) * es,
                  static_cast<std::size_t>(row) * es);
    }
  }
  return out;
}

inline SpData make_data(const SpProblem& p) {
  SpData d;
  const std::int64_t S = p.seq();
  d.q = HostTensor(p.dtype, {p.batch, S, p.hq, p.head_dim});
  d.k = HostTensor(p.dtype, {p.batch, S, p.hkv, p.head_dim});
  d.v = HostTensor(p.dtype, {p.batch, S, p.hkv, p.head_dim});
  d.q.randomize(p.seed);
  d.k.randomize(p.seed + 1);
  d.v.randomize(p.seed + 2);
  for (int r = 0; r < p.world; ++r) {
    const auto rows = shard_rows(p.layout, p.world, r, S);
    d.sq.push_back(gather_rows(d.q, rows));
    d.sk.push_back(gather_rows(d.k, rows));
    d.sv.push_back(gather_rows(d.v, rows));
    d.sout.emplace_back(p.dtype, std::vector<std::int64_t>{p.batch, p.rows, p.hq, p.head_dim});
    d.sout.back().poison();
    d.slse.emplace_back(DType::f32, std::vector<std::int64_t>{p.batch, p.hq, p.rows});
    d.slse.back().poison();
  }
  return d;
}

// The shards' outputs and lse put back in global order: out [B, S, Hq, D], lse [B, Hq, S].
struct Assembled {
  HostTensor out;
  std::vector<float> lse;
};
inline Assembled assemble(const SpProblem& p, const std::vector<HostTensor>& outs,
                          const std::vector<HostTensor>& lses) {
  const std::int64_t S = p.seq();
  Assembled a{HostTensor(p.dtype, {p.batch, S, p.hq, p.head_dim}),
              std::vector<float>(static_cast<std::size_t>(p.batch * p.hq * S))};
  for (int r = 0; r < p.world; ++r) {
    const auto rows = shard_rows(p.layout, p.world, r, S);
    for (int b = 0; b < p.batch; ++b) {
      for (int i = 0; i < p.rows; ++i) {
        for (int h = 0; h < p.hq; ++h) {
          for (int e = 0; e < p.head_dim; ++e) {
            a.out.set(
                ((b * S + rows[i]) * p.hq + h) * p.head_dim + e,
                outs[r].get(((static_cast<std::int64_t>(b) * p.rows + i) * p.hq + h) * p.head_dim +
                            e));
          }
          a.lse[static_cast<std::size_t>((b * p.hq + h) * S + rows[i])] =
              lses[r].get((static_cast<std::int64_t>(b) * p.hq + h) * p.rows + i);
        }
      }
    }
  }
  return a;
}

// Compares with the fp64 reference of the whole sequence (causal over global positions), on every
// row, or (every > 1) on every `every`-th row plus the two rows each side of every chunk boundary
// (the fp64 reference of long sequences costs minutes on one host thread).
inline Comparison compare_global(const SpProblem& p, const SpData& d, const Assembled& a,
                                 std::int64_t every = 1, const MaskSpec& mask = {}) {
  HostTensor out_unused(p.dtype, {p.batch, p.seq(), p.hq, p.head_dim});
  AttentionArgs args = tensor_args(d.q, d.k, d.v, out_unused);
  args.causal = p.causal;
  args.mask = mask;
  const std::int64_t S = p.seq(), chunk = S / (2 * p.world);
  std::vector<std::int64_t> rows;
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t i = 0; i < S; ++i) {
      const std::int64_t c = chunk > 0 ? i % chunk : 0;
      if (every <= 1 || i % every == 0 || c < 2 || c >= chunk - 2) rows.push_back(b * S + i);
    }
  }
  const ReferenceResult ref = reference_attention(args, rows);
  return compare(ref, a.out, p.hq, p.head_dim, &a.lse, [&](std::int64_t row, int h) {
    const std::int64_t b = row / S, i = row % S;
    return (b * p.hq + h) * S + i;
  });
}

}  // namespace gpuattn::testing
