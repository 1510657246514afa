// The compute side of one local rank in a distributed call: buffers, copies, attention, the merge
// of partial results by their log-sum-exp, and the ordering between its compute and its transfers.
// One implementation on the host (synchronous) and one on CUDA (the shard's stream for compute,
// the transport's stream for transfers, events between them).
#pragma once

#include <cstddef>
#include <memory>

#include "gpuattn/distributed.h"

namespace gpuattn::dist {

// A rank's fp32 accumulator of its output, contiguous: o [B, S, H, D], lse [B, H, S].
struct Accumulator {
  float* o = nullptr;
  float* lse = nullptr;
  int batch = 0, rows = 0, heads = 0, head_dim = 0;
};

class RankExec {
 public:
  virtual ~RankExec() = default;
  // Scratch memory living until the exec is destroyed (16-byte aligned).
  virtual void* alloc(std::size_t bytes) = 0;
  // Host memory to and from scratch; download waits for the compute posted so far.
  virtual void upload(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void download(void* dst, const void* src, std::size_t bytes) = 0;
  // dst = src, two 4-dimensional views of the same shape and dtype, any strides.
  virtual void copy(const TensorView& src, const TensorView& dst) = 0;
  // attention_forward on this rank (its stream or threads filled in).
  virtual void attention(AttentionArgs args) = 0;
  // Folds a partial result into acc's rows [row0, row0 + part rows): part [B, n, H, D] (contiguous,
  // the call's dtype) with part_lse [B, H, n] (contiguous fp32). first: acc's rows are not yet
  // written; they become the part.
  virtual void merge(const Accumulator& acc, int row0, const TensorView& part,
                     const float* part_lse, bool first) = 0;
  // out = acc (converted to out's dtype), lse = acc.lse when lse is present.
  virtual void finish(const Accumulator& acc, const TensorView& out, const TensorView& lse) = 0;
  // The transfers posted from now on start after the compute posted so far ...
  virtual void transfers_after_compute() = 0;
  // ... and the compute posted from now on after the transfers posted so far.
  virtual void compute_after_transfers() = 0;
};

// A host rank computing with `num_threads` threads.
std::unique_ptr<RankExec> make_host_exec(int num_threads);
// A CUDA rank: `device`, compute on `stream`, transfers on `comm_stream`; the two events are the
// group's for this rank (cudaEvent_t). Its scratch is freed, stream-ordered, on destruction, after
// the transfers.
std::unique_ptr<RankExec> make_cuda_exec(int device, void* stream, void* comm_stream,
                                         void* compute_event, void* comm_event);

}  // namespace gpuattn::dist
