// Multi-GPU attention: one attention call over a sequence split across several ranks (sequence
// parallelism), either by passing K/V blocks around a ring (ring attention) or by gathering K/V on
// every rank first. A rank is one GPU (or, for the CPU backend and the tests, one host worker).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpuattn/attention.h"

namespace gpuattn {

// How the rows of a sequence of S tokens are split over W ranks (every rank holds S / W rows; the
// same split applies to q, k, v, out and lse).
enum class ShardLayout : std::uint8_t {
  // Rank r holds rows [r * S / W, (r + 1) * S / W).
  contiguous,
  // The sequence is cut into 2W chunks of S / (2W) rows; rank r holds chunk r followed by chunk
  // 2W - 1 - r. Under a causal mask every rank then does the same work (with a contiguous split,
  // the last rank does about 2W - 1 times the first's).
  zigzag,
};

enum class SeqParallelStrategy : std::uint8_t {
  // Ring attention: each rank computes its queries against its own K/V block, then against the
  // block of the rank before it, and so on, while the next block travels around the ring (the
  // transfer of step t + 1 overlaps the attention of step t); the partial results are merged by
  // their log-sum-exp in fp32. Memory beyond the inputs: two K/V blocks and an fp32 copy of the
  // rank's output.
  ring,
  // Every rank gathers the whole K/V first (one all-gather), then runs one attention call (two for
  // a causal zigzag split). Memory beyond the inputs: the whole K/V, twice.
  all_gather,
  // Head parallel (DeepSpeed-Ulysses): an all-to-all turns the split by rows into a split by
  // heads (rank r gets query heads [r Hq / W, (r + 1) Hq / W) and their K/V heads over the whole
  // sequence), each rank runs one attention call over the whole sequence, and a second all-to-all
  // returns each rank's rows of every head. Needs Hq and Hkv multiples of W. Every rank does the
  // same work whatever the layout and mask; each moves 4 (W - 1) / W of its q/k/v/out shards.
  // Memory beyond the inputs: about 3x the rank's q, k, v and out.
  head_parallel,
  // head_parallel when Hq and Hkv are multiples of W, else ring (all_gather for a causal call with
  // a window or global tokens). On 4 H200s (bf16, Hq32 D128, causal, S 32K-256K) head_parallel
  // took 0.83-0.92x the time of the next best strategy (bench/results/2026-11-22-h200-s18).
  automatic,
};

const char* to_string(ShardLayout l);
const char* to_string(SeqParallelStrategy s);

// The global rows that rank `rank` of `world_size` holds, in its local order, for a sequence of
// `seq_len` rows (which the layout must divide: W for contiguous, 2W for zigzag).
std::vector<std::int64_t> shard_rows(ShardLayout layout, int world_size, int rank,
                                     std::int64_t seq_len);

// How the ranks of a group reach each other.
enum class Transport : std::uint8_t {
  nccl,       // NCCL point-to-point and collectives (NVLink, PCIe or the network)
  peer_copy,  // CUDA peer-to-peer copies between the devices of one process (no NCCL; devices may
              // repeat, so that a whole group runs on one GPU, as the tests do)
  host,       // host memory (the CPU backend's ranks)
};
const char* to_string(Transport t);

// A set of ranks that run distributed calls together. Copies share the group. Not thread safe: one
// call at a time (the calls of a process drive all of its ranks). Two NCCL groups over the same
// GPUs must not run calls at the same time either: their communicators' kernels may queue in a
// different order on each device and wait on each other for good (NCCL's rule for concurrent
// communicators); call them one after the other.
class RankGroup {
 public:
  // Every rank in this process, one per entry of `devices` (CUDA ordinals; rank i is devices[i]).
  // nccl: the devices must differ (one NCCL communicator per device, ncclCommInitAll). peer_copy:
  // any devices, repeats allowed.
  static RankGroup local_cuda(const std::vector<int>& devices,
                              Transport transport = Transport::nccl);
  // `world_size` ranks in this process on the CPU backend (host tensors), each computing with
  // `threads_per_rank` threads (0: hardware concurrency).
  static RankGroup local_cpu(int world_size, int threads_per_rank = 0);
  // One rank of a group of one process per GPU (on one host or several sharing a file system):
  // rank 0 writes NCCL's unique id to `bootstrap_path` (atomically, by a rename), the other ranks
  // wait for the file for up to `timeout_s` seconds. Every rank must call it with the same path and
  // world size; the file is left behind (remove it between runs).
  static RankGroup nccl_from_file(const std::string& bootstrap_path, int rank, int world_size,
                                  int device, double timeout_s = 120.0);

  int world_size() const;
  // The ranks this process drives, in the order their shards are passed to a call.
  const std::vector<int>& local_ranks() const;
  // The CUDA ordinal of each local rank (empty for CPU groups): where its shards must live.
  const std::vector<int>& devices() const;
  Transport transport() const;
  Device device() const;

  struct Impl;
  Impl& impl() const { return *impl_; }

 private:
  explicit RankGroup(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

// One sequence-parallel attention call.
//
// shards[i] is local rank i's part (local_ranks()[i]), an ordinary dense AttentionArgs on that
// rank's device: q and out [B, S_local, Hq, D], k and v [B, S_local, Hkv, D], lse (optional)
// [B, Hq, S_local], holding the rows shard_rows(layout, W, rank, W * S_local) of the global
// sequence. Every shard has the same B, S_local, heads, head dim and dtype, and the same causal,
// softmax_scale and precision; the result is exactly attention over the whole sequence (causal
// over global positions), each rank's rows of it in its out and lse. Each shard's `stream` orders
// its rank's work (CUDA: the call returns before the kernels finish, like attention_forward); the
// CPU backend uses each shard's num_threads (0: the group's threads_per_rank). A shard's counters
// (AttentionArgs::counters) are not used: the calls the strategies run have other shapes than the
// shard's, and take the library's counters.
// A sliding window and global tokens (MaskSpec, the same on every shard) are over global
// positions, as for one call over the whole sequence; they run on head_parallel, and on all_gather
// for causal calls (ErrorCode::not_supported on the ring, or on a non-causal all_gather call).
// Not supported (ErrorCode::not_supported, naming the field): varlen, seqused_k, paged K/V and a
// block-sparse layout. A zigzag split needs an even S_local; head_parallel needs Hq and Hkv
// multiples of the world size. A shard's out may be its own q (in place), but no shard's out may
// share memory with another shard's q, k or v, nor with its own k or v: other ranks read those
// while it is written (all_gather then gives wrong rows; nothing checks this).
struct SequenceParallelArgs {
  std::vector<AttentionArgs> shards;
  ShardLayout layout = ShardLayout::contiguous;
  SeqParallelStrategy strategy = SeqParallelStrategy::automatic;
};

// The strategy a call runs: `strategy` itself, or for automatic the choice for hq and hkv heads
// over world_size ranks, with a window or global tokens (masked) or not, causal or not.
SeqParallelStrategy resolve_strategy(SeqParallelStrategy strategy, int hq, int hkv, int world_size,
                                     bool masked = false, bool causal = false);

// Validates every shard (and, across processes, that every rank passed the same shapes and that
// none failed its own validation: one small all-gather on the device's default stream and a
// synchronization, so such calls cannot be captured into a CUDA graph), then computes. Throws
// gpuattn::Error naming the offending shard and value; on an error no out or lse is written.
void sequence_parallel_attention(const RankGroup& group, const SequenceParallelArgs& args);

}  // namespace gpuattn
