// sequence_parallel_attention: validation of the shards, then ring attention or the all-gather
// strategy, written once over RankExec (host or CUDA) and Comm (host, peer copies or NCCL).
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/fwd_params.h"
#include "dist/comm.h"
#include "dist/rank_exec.h"
#include "gpuattn/distributed.h"

namespace gpuattn {
namespace {

using dist::Accumulator;
using dist::RankExec;

// An internal call begun from a shard's arguments: its shape differs from the shard's (a zigzag
// half, a ring step, a gathered head group), so the shard's counters, sized for the shard's call
// (attention_counters_needed), are not passed on; the call takes the library's own.
AttentionArgs internal_call(const AttentionArgs& shard) {
  AttentionArgs a = shard;
  a.counters = TensorView{};
  return a;
}

// The shape every shard shares.
struct Shape {
  int batch = 0, rows = 0, hq = 0, hkv = 0, head_dim = 0;
  DType dtype = DType::f16;
  bool causal = false;
  float scale = 0.f;
  Precision precision = Precision::standard;
  int window_left = -1, window_right = -1, global_tokens = 0, global_stride = 0;
  bool masked() const {
    return window_left != -1 || window_right != -1 || global_tokens != 0 || global_stride != 0;
  }
};

std::string shard_name(int i) {
  return "sequence_parallel_attention: shards[" + std::to_string(i) + "]";
}

[[noreturn]] void fail(ErrorCode code, const std::string& what) {
  throw Error(code, what);
}

void reject_unsupported(const AttentionArgs& a, int i) {
  const std::string who = shard_name(i);
  const char* why = " is not supported by sequence-parallel calls (dense shards only)";
  if (a.cu_seqlens_q.present() || a.cu_seqlens_k.present()) {
    fail(ErrorCode::not_supported, who + ".cu_seqlens_q/k: varlen" + why);
  }
  if (a.seqused_k.present()) fail(ErrorCode::not_supported, who + ".seqused_k" + why);
  if (a.leftpad_k.present()) fail(ErrorCode::not_supported, who + ".leftpad_k" + why);
  if (a.block_table.present())
    fail(ErrorCode::not_supported, who + ".block_table: paged K/V" + why);
  if (a.k_scale.present() || a.v_scale.present() || a.k.dtype == DType::i8 ||
      a.k.dtype == DType::e4m3) {
    fail(ErrorCode::not_supported, who + ".k_scale: a quantized KV cache" + why);
  }
  if (!(std::isfinite(a.softcap) && a.softcap >= 0.f)) {  // a bad value first, as a call names it
    fail(ErrorCode::invalid_argument, who + ".softcap " + std::to_string(a.softcap) +
                                          " must be finite and >= 0 (0: no soft-capping)");
  }
  if (a.softcap != 0.f) {
    fail(ErrorCode::not_supported,
         who + ".softcap: soft-capping is not supported by sequence-parallel calls");
  }
  if (a.alibi_slopes.present()) fail(ErrorCode::not_supported, who + ".alibi_slopes: ALiBi" + why);
  const MaskSpec& m = a.mask;  // windows and global tokens: check_masks
  if (m.block_sparse.layout.present() || m.block_sparse.block_q != 0 ||
      m.block_sparse.block_k != 0) {
    fail(ErrorCode::not_supported, who + ".mask.block_sparse" + why);
  }
}

template <typename T>
void same(const char* field, T value, T first, int i) {
  if (value != first) {
    fail(ErrorCode::invalid_argument, shard_name(i) + "." + field + " is " + std::to_string(value) +
                                          " but shards[0]'s is " + std::to_string(first) +
                                          ": every rank must hold the same shape");
  }
}

Shape validate(const RankGroup::Impl& g, const SequenceParallelArgs& args) {
  const int n_local = static_cast<int>(g.local_ranks.size());
  if (static_cast<int>(args.shards.size()) != n_local) {
    fail(ErrorCode::invalid_argument,
         "sequence_parallel_attention: " + std::to_string(args.shards.size()) +
             " shards for a group that drives " + std::to_string(n_local) +
             " rank(s) in this process (one shard per local rank)");
  }
  if (args.layout != ShardLayout::contiguous && args.layout != ShardLayout::zigzag) {
    fail(ErrorCode::invalid_argument, "sequence_parallel_attention: layout " +
                                          std::to_string(static_cast<int>(args.layout)) +
                                          " is not a ShardLayout");
  }
  if (args.strategy != SeqParallelStrategy::ring &&
      args.strategy != SeqParallelStrategy::all_gather &&
      args.strategy != SeqParallelStrategy::head_parallel &&
      args.strategy != SeqParallelStrategy::automatic) {
    fail(ErrorCode::invalid_argument, "sequence_parallel_attention: strategy " +
                                          std::to_string(static_cast<int>(args.strategy)) +
                                          " is not a SeqParallelStrategy");
  }
  Shape first;
  for (int i = 0; i < n_local; ++i) {
    const AttentionArgs& a = args.shards[i];
    reject_unsupported(a, i);
    FwdParams p;
    try {
      p = make_fwd_params(a);
    } catch (const Error& e) {
      throw Error(e.code(), shard_name(i) + ": " + e.what());
    }
    if (p.device != g.device) {
      fail(ErrorCode::invalid_argument, shard_name(i) + ": tensors are on " + to_string(p.device) +
                                            " but the group's ranks are " + to_string(g.device) +
                                            " ranks");
    }
    if (g.device == Device::cuda && p.device_index != g.devices[i]) {
      fail(ErrorCode::invalid_argument,
           shard_name(i) + ": tensors are on cuda:" + std::to_string(p.device_index) +
               " but local rank " + std::to_string(i) + " (global rank " +
               std::to_string(g.local_ranks[i]) + ") is cuda:" + std::to_string(g.devices[i]));
    }
    if (p.seqlen_q != p.seqlen_k) {
      fail(ErrorCode::invalid_argument, shard_name(i) + ": q holds " + std::to_string(p.seqlen_q) +
                                            " rows but k holds " + std::to_string(p.seqlen_k) +
                                            ": a rank holds the same rows of q, k and v");
    }
    Shape s;
    s.batch = p.batch;
    s.rows = p.seqlen_q;
    s.hq = p.hq;
    s.hkv = p.hkv;
    s.head_dim = p.head_dim;
    s.dtype = p.dtype;
    s.causal = p.causal;
    s.scale = p.scale;
    s.precision = p.precision;
    s.window_left = a.mask.window_left;
    // A right window on a causal call changes nothing (causal already stops at the query's own
    // position): plain causal, which every strategy runs, the ring included.
    s.window_right = p.causal && a.mask.window_right >= 0 ? -1 : a.mask.window_right;
    s.global_tokens = a.mask.global_tokens;
    s.global_stride = a.mask.global_stride;
    if (i == 0) {
      first = s;
      continue;
    }
    same("batch", s.batch, first.batch, i);
    same("rows", s.rows, first.rows, i);
    same("q heads", s.hq, first.hq, i);
    same("kv heads", s.hkv, first.hkv, i);
    same("head dim", s.head_dim, first.head_dim, i);
    same("causal", static_cast<int>(s.causal), static_cast<int>(first.causal), i);
    same("precision", static_cast<int>(s.precision), static_cast<int>(first.precision), i);
    same("mask.window_left", s.window_left, first.window_left, i);
    same("mask.window_right", s.window_right, first.window_right, i);
    same("mask.global_tokens", s.global_tokens, first.global_tokens, i);
    same("mask.global_stride", s.global_stride, first.global_stride, i);
    if (s.dtype != first.dtype) {
      fail(ErrorCode::invalid_argument, shard_name(i) + ": dtype " + to_string(s.dtype) +
                                            " but shards[0] is " + to_string(first.dtype));
    }
    if (s.scale != first.scale) {
      fail(ErrorCode::invalid_argument, shard_name(i) + ": softmax scale " +
                                            std::to_string(s.scale) + " but shards[0]'s is " +
                                            std::to_string(first.scale));
    }
  }
  if (args.layout == ShardLayout::zigzag && first.rows % 2 != 0) {
    fail(ErrorCode::invalid_argument,
         "sequence_parallel_attention: a zigzag split holds two equal chunks a rank, but the "
         "shards hold " +
             std::to_string(first.rows) + " rows (odd)");
  }
  const int W = g.world_size;
  if (args.strategy == SeqParallelStrategy::head_parallel &&
      (first.hq % W != 0 || first.hkv % W != 0)) {
    fail(ErrorCode::invalid_argument,
         "sequence_parallel_attention: head_parallel splits the heads over the " +
             std::to_string(W) + " ranks, but the shards have " + std::to_string(first.hq) +
             " q heads and " + std::to_string(first.hkv) +
             " kv heads (each must be a multiple of " + std::to_string(W) + ")");
  }
  return first;
}

// ---- views -------------------------------------------------------------------------------------

TensorView slice(TensorView t, int dim, std::int64_t start, std::int64_t len) {
  t.data = static_cast<char*>(t.data) +
           start * t.stride[dim] * static_cast<std::int64_t>(element_size(t.dtype));
  t.shape[dim] = len;
  return t;
}

TensorView dense(void* data, DType dtype, const AttentionArgs& like, std::int64_t b, std::int64_t s,
                 std::int64_t h, std::int64_t d) {
  return TensorView::contiguous(data, dtype, like.q.device, {b, s, h, d}, like.q.device_index);
}

// ---- the per-rank state of one call ------------------------------------------------------------

struct Rank {
  int local = 0;
  int rank = 0;  // global
  const AttentionArgs* shard = nullptr;
  std::unique_ptr<RankExec> exec;
};

std::size_t elems(const Shape& s, int heads) {
  return static_cast<std::size_t>(s.batch) * s.rows * heads * s.head_dim;
}

std::vector<Rank> make_ranks(const RankGroup::Impl& g, const SequenceParallelArgs& args,
                             dist::Comm& comm) {
  std::vector<Rank> ranks(args.shards.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    Rank& r = ranks[i];
    r.local = static_cast<int>(i);
    r.rank = g.local_ranks[i];
    r.shard = &args.shards[i];
    if (g.device == Device::cpu) {
      r.exec = dist::make_host_exec(r.shard->num_threads != 0 ? r.shard->num_threads
                                                              : g.threads_per_rank);
    } else {
      r.exec = dist::make_cuda_exec(g.devices[i], r.shard->stream, comm.stream(r.local),
                                    g.events[2 * i], g.events[2 * i + 1]);
    }
  }
  return ranks;
}

// Packs the rank's k then v into `buf` ([2, B, S, Hkv, D], contiguous).
void pack_kv(Rank& r, const Shape& s, void* buf) {
  const std::size_t half = elems(s, s.hkv) * element_size(s.dtype);
  r.exec->copy(r.shard->k, dense(buf, s.dtype, *r.shard, s.batch, s.rows, s.hkv, s.head_dim));
  r.exec->copy(r.shard->v, dense(static_cast<char*>(buf) + half, s.dtype, *r.shard, s.batch, s.rows,
                                 s.hkv, s.head_dim));
}

TensorView k_of(const Rank& r, const Shape& s, void* buf) {
  return dense(buf, s.dtype, *r.shard, s.batch, s.rows, s.hkv, s.head_dim);
}
TensorView v_of(const Rank& r, const Shape& s, void* buf) {
  const std::size_t half = elems(s, s.hkv) * element_size(s.dtype);
  return dense(static_cast<char*>(buf) + half, s.dtype, *r.shard, s.batch, s.rows, s.hkv,
               s.head_dim);
}

// A group of operations that is always closed: an exception between group_start and group_end
// (a failed NCCL call) must not leave the thread's NCCL group open for every later call.
class Group {
 public:
  explicit Group(dist::Comm& comm) : comm_(comm) { comm_.group_start(); }
  void end() {
    open_ = false;
    comm_.group_end();
  }
  ~Group() {
    if (!open_) return;
    try {
      comm_.group_end();
    } catch (...) {  // already unwinding from the first error
    }
  }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

 private:
  dist::Comm& comm_;
  bool open_ = true;
};

// ---- ring --------------------------------------------------------------------------------------

// Which part of the rank's queries sees which part of the block that came from rank `src`.
struct StepWork {
  bool run = false;
  int q0 = 0, q_rows = 0;  // query rows of this rank
  int k_rows = 0;          // the first k_rows keys of the block
  bool causal = false;
};

StepWork step_work(const Shape& s, ShardLayout layout, int rank, int src) {
  StepWork w{true, 0, s.rows, s.rows, false};
  if (!s.causal) return w;
  if (src == rank) {
    w.causal = true;  // the rank's own block: its rows are in global order (both layouts)
    return w;
  }
  if (layout == ShardLayout::contiguous) {
    w.run = src < rank;  // earlier blocks entirely, later ones not at all
    return w;
  }
  const int c = s.rows / 2;
  if (src < rank) {
    w.k_rows = c;  // chunk src precedes both of this rank's chunks; chunk 2W-1-src follows both
  } else {
    w.q0 = c;  // only the late chunk 2W-1-rank follows the block's chunks src and 2W-1-src
    w.q_rows = c;
  }
  return w;
}

void run_ring(const RankGroup::Impl& g, const SequenceParallelArgs& args, const Shape& s) {
  dist::Comm& comm = *g.comm;
  std::vector<Rank> ranks = make_ranks(g, args, comm);
  const int W = g.world_size;
  const std::size_t kv_bytes = 2 * elems(s, s.hkv) * element_size(s.dtype);
  struct State {
    void* buf[2];
    Accumulator acc;
    void* part;
    float* part_lse;
  };
  std::vector<State> st(ranks.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    RankExec& ex = *ranks[i].exec;
    State& t = st[i];
    t.buf[0] = ex.alloc(kv_bytes);
    t.buf[1] = ex.alloc(kv_bytes);
    t.acc = {static_cast<float*>(ex.alloc(elems(s, s.hq) * sizeof(float))),
             static_cast<float*>(
                 ex.alloc(static_cast<std::size_t>(s.batch) * s.hq * s.rows * sizeof(float))),
             s.batch,
             s.rows,
             s.hq,
             s.head_dim};
    t.part = ex.alloc(elems(s, s.hq) * element_size(s.dtype));
    t.part_lse =
        static_cast<float*>(ex.alloc(static_cast<std::size_t>(s.batch) * s.hq * s.rows * 4));
    pack_kv(ranks[i], s, t.buf[0]);
  }
  for (int step = 0; step < W; ++step) {
    const int cur = step % 2, nxt = 1 - cur;
    if (step + 1 < W) {  // the next block travels while this one is used
      for (Rank& r : ranks) r.exec->transfers_after_compute();
      Group group(comm);
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        const int rk = ranks[i].rank;
        comm.send(ranks[i].local, st[i].buf[cur], kv_bytes, (rk + 1) % W);
        comm.recv(ranks[i].local, st[i].buf[nxt], kv_bytes, (rk + W - 1) % W);
      }
      group.end();
    }
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      Rank& r = ranks[i];
      State& t = st[i];
      const int src = (r.rank + W - step) % W;
      const StepWork w = step_work(s, args.layout, r.rank, src);
      if (!w.run) continue;
      AttentionArgs a = internal_call(*r.shard);
      a.mask.window_right = -1;  // unmasked calls only (a causal one's right window is moot)
      a.q = slice(r.shard->q, 1, w.q0, w.q_rows);
      a.k = slice(k_of(r, s, t.buf[cur]), 1, 0, w.k_rows);
      a.v = slice(v_of(r, s, t.buf[cur]), 1, 0, w.k_rows);
      a.out = dense(t.part, s.dtype, *r.shard, s.batch, w.q_rows, s.hq, s.head_dim);
      a.lse = TensorView::contiguous(t.part_lse, DType::f32, r.shard->q.device,
                                     {s.batch, s.hq, w.q_rows}, r.shard->q.device_index);
      a.causal = w.causal;
      r.exec->attention(a);
      r.exec->merge(t.acc, w.q0, a.out, t.part_lse, step == 0);
    }
    if (step + 1 < W) {
      for (Rank& r : ranks) r.exec->compute_after_transfers();
    }
  }
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    ranks[i].exec->finish(st[i].acc, ranks[i].shard->out, ranks[i].shard->lse);
  }
}

// ---- all-gather --------------------------------------------------------------------------------

// The global rows of rank `src`'s local rows [local0, local0 + len): (local0, global0, len) runs.
struct Run {
  int local0;
  std::int64_t global0;  // W x rows may pass int's range
  int len;
};
std::vector<Run> runs_of(ShardLayout layout, int W, int src, int rows) {
  if (layout == ShardLayout::contiguous) return {{0, static_cast<std::int64_t>(src) * rows, rows}};
  const int c = rows / 2;
  return {{0, static_cast<std::int64_t>(src) * c, c},
          {c, static_cast<std::int64_t>(2 * W - 1 - src) * c, c}};
}

void run_all_gather(const RankGroup::Impl& g, const SequenceParallelArgs& args, const Shape& s) {
  dist::Comm& comm = *g.comm;
  std::vector<Rank> ranks = make_ranks(g, args, comm);
  const int W = g.world_size;
  const std::size_t kv_bytes = 2 * elems(s, s.hkv) * element_size(s.dtype);
  const std::int64_t S = static_cast<std::int64_t>(W) * s.rows;
  std::vector<void*> send(ranks.size()), recv(ranks.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    send[i] = ranks[i].exec->alloc(kv_bytes);
    recv[i] = ranks[i].exec->alloc(kv_bytes * W);
    pack_kv(ranks[i], s, send[i]);
    ranks[i].exec->transfers_after_compute();
  }
  {
    Group group(comm);
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      comm.all_gather(ranks[i].local, send[i], recv[i], kv_bytes);
    }
    group.end();
  }
  // Every rank's scratch before any rank writes its output: an allocation that fails leaves
  // every out and lse untouched.
  std::vector<TensorView> ks(ranks.size()), vs(ranks.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    Rank& r = ranks[i];
    RankExec& ex = *r.exec;
    ex.compute_after_transfers();
    const std::size_t full =
        static_cast<std::size_t>(s.batch) * S * s.hkv * s.head_dim * element_size(s.dtype);
    ks[i] = TensorView::contiguous(ex.alloc(full), s.dtype, r.shard->q.device,
                                   {s.batch, S, s.hkv, s.head_dim}, r.shard->q.device_index);
    vs[i] = ks[i];
    vs[i].data = ex.alloc(full);
  }
  // Every rank's calls, checked before any rank computes: a call over the gathered keys is not the
  // shard's own (Sk is the keys before its rows, strides those of the gathered copy), so the
  // shard's check did not cover it, and a refusal after rank 0 wrote its rows would leave a
  // half-written output. Causal: each run of a rank's queries sees the keys up to its own last
  // row (bottom-right alignment of Sq query rows to the first `keys` keys); otherwise all of them.
  std::vector<std::vector<AttentionArgs>> calls(ranks.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const Rank& r = ranks[i];
    for (const Run& run : runs_of(args.layout, W, r.rank, s.rows)) {
      if (!s.causal && run.local0 != 0) break;  // non-causal: one call over every row
      const int q_rows = s.causal ? run.len : s.rows;
      const std::int64_t keys = s.causal ? run.global0 + run.len : S;
      AttentionArgs a = internal_call(*r.shard);
      a.q = slice(r.shard->q, 1, run.local0, q_rows);
      a.out = slice(r.shard->out, 1, run.local0, q_rows);
      if (r.shard->lse.present()) a.lse = slice(r.shard->lse, 2, run.local0, q_rows);
      a.k = slice(ks[i], 1, 0, keys);
      a.v = slice(vs[i], 1, 0, keys);
      try {
        check_attention_args(a);
      } catch (const Error& e) {
        throw Error(e.code(), shard_name(static_cast<int>(i)) +
                                  ": all_gather's call over the gathered keys (rows " +
                                  std::to_string(run.local0) + ".." +
                                  std::to_string(run.local0 + q_rows - 1) + " against " +
                                  std::to_string(keys) + " keys): " + e.what() +
                                  " (nothing was written; ring or head_parallel may take it)");
      }
      calls[i].push_back(a);
    }
  }
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    Rank& r = ranks[i];
    RankExec& ex = *r.exec;
    for (int src = 0; src < W; ++src) {
      void* block = static_cast<char*>(recv[i]) + static_cast<std::size_t>(src) * kv_bytes;
      for (const Run& run : runs_of(args.layout, W, src, s.rows)) {
        ex.copy(slice(k_of(r, s, block), 1, run.local0, run.len),
                slice(ks[i], 1, run.global0, run.len));
        ex.copy(slice(v_of(r, s, block), 1, run.local0, run.len),
                slice(vs[i], 1, run.global0, run.len));
      }
    }
    for (const AttentionArgs& a : calls[i]) ex.attention(a);
  }
}

// ---- head parallel ------------------------------------------------------------------------------

// A [B, H, S] lse view as the 4-dimensional [1, B, H, S] that RankExec::copy takes.
TensorView lift(TensorView t) {
  for (int d = 3; d > 0; --d) {
    t.shape[d] = t.shape[d - 1];
    t.stride[d] = t.stride[d - 1];
  }
  t.shape[0] = 1;
  t.stride[0] = 0;
  t.rank = 4;
  return t;
}

void run_head_parallel(const RankGroup::Impl& g, const SequenceParallelArgs& args, const Shape& s) {
  dist::Comm& comm = *g.comm;
  std::vector<Rank> ranks = make_ranks(g, args, comm);
  const int W = g.world_size;
  const int hq = s.hq / W, hkv = s.hkv / W;  // heads a rank computes
  const std::int64_t S = static_cast<std::int64_t>(W) * s.rows;
  const std::size_t es = element_size(s.dtype);
  const std::size_t B = static_cast<std::size_t>(s.batch), rows = s.rows, D = s.head_dim;
  // The message to each peer: its heads of this rank's q, k, v rows; back: this rank's heads of
  // the peer's out rows and lse.
  const std::size_t qc = B * rows * hq * D * es, kc = B * rows * hkv * D * es, fwd = qc + 2 * kc;
  const std::size_t oc = B * rows * hq * D * es,
                    back = oc + (B * hq * rows * sizeof(float) + 15) / 16 * 16;  // 16-byte aligned
  struct State {
    void *send, *recv;
    TensorView q, k, v, out, lse;  // this rank's heads over the whole sequence
  };
  std::vector<State> st(ranks.size());
  auto chunk = [&](const Rank& r, void* base, std::size_t offset, int heads) {
    return dense(static_cast<char*>(base) + offset, s.dtype, *r.shard, s.batch, s.rows, heads,
                 s.head_dim);
  };
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const Rank& r = ranks[i];
    RankExec& ex = *r.exec;
    st[i].send = ex.alloc(fwd * W);
    st[i].recv = ex.alloc(fwd * W);
    for (int p = 0; p < W; ++p) {
      void* base = static_cast<char*>(st[i].send) + p * fwd;
      ex.copy(slice(r.shard->q, 2, p * hq, hq), chunk(r, base, 0, hq));
      ex.copy(slice(r.shard->k, 2, p * hkv, hkv), chunk(r, base, qc, hkv));
      ex.copy(slice(r.shard->v, 2, p * hkv, hkv), chunk(r, base, qc + kc, hkv));
    }
    ex.transfers_after_compute();
  }
  auto all_to_all = [&](std::size_t bytes) {
    Group group(comm);
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      for (int p = 0; p < W; ++p) {
        comm.send(ranks[i].local, static_cast<char*>(st[i].send) + p * bytes, bytes, p);
        comm.recv(ranks[i].local, static_cast<char*>(st[i].recv) + p * bytes, bytes, p);
      }
    }
    group.end();
  };
  all_to_all(fwd);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const Rank& r = ranks[i];
    RankExec& ex = *r.exec;
    State& t = st[i];
    ex.compute_after_transfers();
    auto full = [&](int heads) {
      return dense(ex.alloc(B * S * heads * D * es), s.dtype, *r.shard, s.batch, S, heads,
                   s.head_dim);
    };
    t.q = full(hq);
    t.k = full(hkv);
    t.v = full(hkv);
    t.out = full(hq);
    t.lse = TensorView::contiguous(ex.alloc(B * hq * S * sizeof(float)), DType::f32,
                                   r.shard->q.device, {s.batch, hq, S}, r.shard->q.device_index);
    for (int src = 0; src < W; ++src) {
      void* base = static_cast<char*>(t.recv) + src * fwd;
      for (const Run& run : runs_of(args.layout, W, src, s.rows)) {
        ex.copy(slice(chunk(r, base, 0, hq), 1, run.local0, run.len),
                slice(t.q, 1, run.global0, run.len));
        ex.copy(slice(chunk(r, base, qc, hkv), 1, run.local0, run.len),
                slice(t.k, 1, run.global0, run.len));
        ex.copy(slice(chunk(r, base, qc + kc, hkv), 1, run.local0, run.len),
                slice(t.v, 1, run.global0, run.len));
      }
    }
    AttentionArgs a = internal_call(*r.shard);
    a.q = t.q;
    a.k = t.k;
    a.v = t.v;
    a.out = t.out;
    a.lse = t.lse;
    ex.attention(a);
    // Back: each peer's rows of this rank's heads.
    t.send = ex.alloc(back * W);
    t.recv = ex.alloc(back * W);
    for (int dst = 0; dst < W; ++dst) {
      void* base = static_cast<char*>(t.send) + dst * back;
      const TensorView lse_chunk =
          TensorView::contiguous(static_cast<char*>(base) + oc, DType::f32, r.shard->q.device,
                                 {1, s.batch, hq, s.rows}, r.shard->q.device_index);
      for (const Run& run : runs_of(args.layout, W, dst, s.rows)) {
        ex.copy(slice(t.out, 1, run.global0, run.len),
                slice(chunk(r, base, 0, hq), 1, run.local0, run.len));
        ex.copy(slice(lift(t.lse), 3, run.global0, run.len),
                slice(lse_chunk, 3, run.local0, run.len));
      }
    }
    ex.transfers_after_compute();
  }
  all_to_all(back);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const Rank& r = ranks[i];
    RankExec& ex = *r.exec;
    ex.compute_after_transfers();
    for (int p = 0; p < W; ++p) {
      void* base = static_cast<char*>(st[i].recv) + p * back;
      ex.copy(chunk(r, base, 0, hq), slice(r.shard->out, 2, p * hq, hq));
      if (r.shard->lse.present()) {
        ex.copy(TensorView::contiguous(static_cast<char*>(base) + oc, DType::f32, r.shard->q.device,
                                       {1, s.batch, hq, s.rows}, r.shard->q.device_index),
                slice(lift(r.shard->lse), 2, p * hq, hq));
      }
    }
  }
}

// Across processes, each rank validates its own shards; then one all-gather of every rank's
// verdict and shape, which every rank joins even when its own validation failed, so that no rank
// is left waiting in a transfer: a rank that failed, or passed another shape, is named on all.
void check_across_processes(const RankGroup::Impl& g, const SequenceParallelArgs& args,
                            const Shape& s, bool valid) {
  constexpr int kFields = 16;
  static const char* const names[kFields] = {"",
                                             "batch",
                                             "rows",
                                             "q heads",
                                             "kv heads",
                                             "head dim",
                                             "dtype",
                                             "causal",
                                             "softmax scale",
                                             "precision",
                                             "layout",
                                             "strategy",
                                             "mask.window_left",
                                             "mask.window_right",
                                             "mask.global_tokens",
                                             "mask.global_stride"};
  std::uint32_t scale_bits = 0;
  std::memcpy(&scale_bits, &s.scale, 4);
  const std::int64_t mine[kFields] = {valid ? 1 : 0,
                                      s.batch,
                                      s.rows,
                                      s.hq,
                                      s.hkv,
                                      s.head_dim,
                                      static_cast<int>(s.dtype),
                                      s.causal,
                                      scale_bits,
                                      static_cast<int>(s.precision),
                                      static_cast<int>(args.layout),
                                      static_cast<int>(args.strategy),
                                      s.window_left,
                                      s.window_right,
                                      s.global_tokens,
                                      s.global_stride};
  // On the device's default stream: the shards may be what failed.
  const int rank = g.local_ranks[0];
  std::unique_ptr<RankExec> ex =
      dist::make_cuda_exec(g.devices[0], nullptr, g.comm->stream(0), g.events[0], g.events[1]);
  const int W = g.world_size;
  void* send = ex->alloc(sizeof(mine));
  void* recv = ex->alloc(sizeof(mine) * W);
  ex->upload(send, mine, sizeof(mine));
  ex->transfers_after_compute();
  {
    Group group(*g.comm);
    g.comm->all_gather(0, send, recv, sizeof(mine));
    group.end();
  }
  ex->compute_after_transfers();
  std::vector<std::int64_t> all(static_cast<std::size_t>(kFields) * W);
  ex->download(all.data(), recv, sizeof(mine) * W);
  if (!valid) return;  // the caller throws this rank's own error
  const std::string who = "sequence_parallel_attention (rank " + std::to_string(rank) + "): rank ";
  for (int r = 0; r < W; ++r) {
    if (all[r * kFields] == 0) {
      fail(ErrorCode::invalid_argument,
           who + std::to_string(r) +
               "'s shards failed its own validation (its error names the "
               "value); no rank computed");
    }
    for (int f = 1; f < kFields; ++f) {
      if (all[r * kFields + f] != mine[f]) {
        fail(ErrorCode::invalid_argument, who + std::to_string(r) + " passed " + names[f] + " " +
                                              std::to_string(all[r * kFields + f]) +
                                              " but this rank " + std::to_string(mine[f]) +
                                              ": every rank must make the same call");
      }
    }
  }
}

}  // namespace

SeqParallelStrategy resolve_strategy(SeqParallelStrategy strategy, int hq, int hkv, int world_size,
                                     bool masked, bool causal) {
  if (strategy != SeqParallelStrategy::automatic) return strategy;
  if (world_size > 0 && hq % world_size == 0 && hkv % world_size == 0) {
    return SeqParallelStrategy::head_parallel;
  }
  return masked && causal ? SeqParallelStrategy::all_gather : SeqParallelStrategy::ring;
}

void sequence_parallel_attention(const RankGroup& group, const SequenceParallelArgs& args) {
  const RankGroup::Impl& g = group.impl();
  Shape s;
  if (static_cast<int>(g.local_ranks.size()) < g.world_size) {
    std::optional<Error> local_error;
    try {
      s = validate(g, args);
    } catch (const Error& e) {
      local_error = e;
    }
    check_across_processes(g, args, s, !local_error);
    if (local_error) throw *local_error;
  } else {
    s = validate(g, args);
  }
  if (g.world_size == 1) {  // nothing to exchange: the plain call
    AttentionArgs one = args.shards[0];
    if (g.device == Device::cpu && one.num_threads == 0) one.num_threads = g.threads_per_rank;
    attention_forward(one);
    return;
  }
  const SeqParallelStrategy strategy =
      resolve_strategy(args.strategy, s.hq, s.hkv, g.world_size, s.masked(), s.causal);
  // A window or global tokens are over global positions: head_parallel computes each head over
  // the whole sequence in global order, and a causal all_gather call's keys start at position 0
  // and end at its queries' last row, so that bottom-right alignment puts every query at its
  // global position. The ring's blocks, and a non-causal all_gather call, cannot be aligned so.
  if (s.masked() && strategy == SeqParallelStrategy::ring) {
    fail(ErrorCode::not_supported,
         "sequence_parallel_attention: a sliding window or global tokens run on head_parallel "
         "(heads a multiple of the ranks) or, for causal calls, all_gather, not on the ring");
  }
  if (s.masked() && strategy == SeqParallelStrategy::all_gather && !s.causal) {
    fail(ErrorCode::not_supported,
         "sequence_parallel_attention: all_gather takes a sliding window or global tokens on "
         "causal calls only (head_parallel takes them on any)");
  }
  switch (strategy) {
    case SeqParallelStrategy::automatic:  // resolved above
    case SeqParallelStrategy::ring: run_ring(g, args, s); break;
    case SeqParallelStrategy::all_gather: run_all_gather(g, args, s); break;
    case SeqParallelStrategy::head_parallel: run_head_parallel(g, args, s); break;
  }
}

}  // namespace gpuattn
