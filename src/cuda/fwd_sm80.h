// Launchers of the sm_80+ forward kernel, one per (dtype, head dim); each is instantiated in its
// own .cu file so that the build compiles them in parallel. `kernel` is the tile configuration the
// dispatch chose (select_fwd_config, core/tile_config.h): one of the sm80_* kernels.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <optional>

#include "core/fwd_params.h"
#include "core/tile_config.h"

namespace gpuattn::sm80 {

void fwd_f16_hdim64(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);
void fwd_f16_hdim128(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);
void fwd_f16_hdim256(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);  // 64x64 only
void fwd_bf16_hdim64(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);
void fwd_bf16_hdim128(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);
void fwd_bf16_hdim256(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);  // 64x64 only

int num_sms();  // of the current device, cached per device (fwd_launch.cu)
// Opt-in shared memory per block of the current device, cached per device (fwd_launch.cu): 163 KB
// on an A100, 227 KB on an H100, 99 KB on sm_86/sm_89.
int max_smem_per_block();
int compute_capability_major();  // of the current device, cached per device (fwd_launch.cu)

// This library's memory pool of the current device, created on first use; it keeps what it has
// reserved (release threshold: all), so a launch's buffers cost no driver allocation after the
// first. LaunchBuffer and the distributed layer's scratch come from it (fwd_launch.cu).
cudaMemPool_t launch_pool();

// Device memory for one kernel launch on `stream` (a persistent kernel's work-item counter, the
// decode path's counts and partial results), from a pool of this library's per device,
// stream-ordered: allocated (its first `zeroed` bytes set to 0) on the stream before the launch,
// freed on it after, so concurrent launches on other streams, and CUDA graphs captured from them,
// each get their own (fwd_launch.cu). Never null: 0 bytes asked give 16.
class LaunchBuffer {
 public:
  LaunchBuffer(cudaStream_t stream, std::size_t bytes, std::size_t zeroed);
  ~LaunchBuffer();
  LaunchBuffer(const LaunchBuffer&) = delete;
  LaunchBuffer& operator=(const LaunchBuffer&) = delete;
  template <typename U>
  U* as() const {
    return static_cast<U*>(ptr_);
  }

 private:
  cudaStream_t stream_;
  void* ptr_ = nullptr;
};

// `count` zeroed ints for one launch on `stream` that the kernel must leave zeroed again (a
// persistent kernel's work-item counter, the decode splits' counts: the CTA that takes the last
// item, or counts in last, resets its int). Outside graph capture they come from an array kept
// for the stream (see stream_counters), so the launch needs no memset node: ~1 us less a call on
// an H200 (bench/results/2026-11-29-h200-s31, call 3: small decode calls 17.5 -> 16.5 us, causal
// S512 prefill 0.98-0.99x the time); while the stream is capturing, from a LaunchBuffer zeroed
// for that launch, so that each graph gets its own. A call that passed its own
// (AttentionArgs::counters, p.counters) uses those: fewer than `count` is an invalid_argument.
class LaunchCounters {
 public:
  LaunchCounters(cudaStream_t stream, std::size_t count, const FwdParams& p);
  LaunchCounters(const LaunchCounters&) = delete;
  LaunchCounters& operator=(const LaunchCounters&) = delete;
  int* get() const { return ptr_; }

 private:
  std::optional<LaunchBuffer> buffer_;
  int* ptr_ = nullptr;
};

// The zeroed ints kept for `stream` (at least `count`; a larger array, zeroed once on the stream,
// when a launch needs more: the smaller ones stay allocated), or nullptr while the stream is
// capturing or when this process has kept arrays for kMaxCounterStreams streams already. They
// stay allocated for the life of the process (a destroyed stream's too: a few hundred bytes
// each). Keyed by the device and cudaStreamGetId, which CUDA never gives to another stream, so a
// stream destroyed with work in flight cannot hand its array to a new stream with the same
// handle. Launches on one stream run one after the other, so the stream's launches each have the
// array to themselves, provided every kernel leaves its ints zeroed; a graph captured from the
// stream never holds this array (see LaunchCounters).
int* stream_counters(cudaStream_t stream, std::size_t count);
constexpr int kMaxCounterStreams = 1024;

}  // namespace gpuattn::sm80
