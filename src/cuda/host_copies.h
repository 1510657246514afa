// Host copies of the small device arrays a checked call reads before any kernel runs
// (AttentionArgs::check_indices: cu_seqlens, seqused_k, leftpad_k, block tables, cache_seqlens,
// rotary offsets, quantization scales).
//
// A device-to-host copy into pageable memory returns only once it is done: each one drains the
// stream and then copies through the driver's staging, a round trip of its own (H200: 5-8 us for a
// second 4-byte-a-sequence array behind the first, 2026-12-02-h200-s66). Into page-locked memory
// the copies queue on the stream, and the call's one synchronization waits for all of them. The
// page-locked staging is the calling thread's, kept between calls and reused (it grows to the
// largest call's copies; freed when the thread ends).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace gpuattn {

// One HostCopies a call, alive from its first copy until its values have been read. Objects of
// one thread nest: one made while another is alive must be destroyed first, and the outer one
// must not queue copies while the inner one lives (the inner one hands its staging back on
// destruction, and the outer one's next copies take it again).
class HostCopies {
 public:
  // `fn`: the public entry point an error names (a stream that is capturing a CUDA graph, where
  // the synchronization cannot be made).
  HostCopies(cudaStream_t stream, const char* fn);
  HostCopies(const HostCopies&) = delete;
  HostCopies& operator=(const HostCopies&) = delete;
  // Waits for copies still in flight (an error between a copy and wait()) before the staging is
  // handed to a later call.
  ~HostCopies();

  // Queues a copy of `count` elements at `device`; the host copy is readable
  // after wait(). `what` names the array in the capture error. The first copy refuses a
  // capturing stream.
  template <typename T>
  const T* copy(const T* device, std::size_t count, const char* what) {
    return static_cast<const T*>(queue(device, sizeof(T) * count, sizeof(T) * count, 1, what));
  }
  // `rows` rows of `width` elements, `pitch` elements apart at `device`, packed on the host.
  template <typename T>
  const T* copy_rows(const T* device, std::size_t width, std::size_t pitch, std::size_t rows,
                     const char* what) {
    return static_cast<const T*>(queue(device, sizeof(T) * width, sizeof(T) * pitch, rows, what));
  }
  // Whether anything was queued.
  bool any() const { return queued_; }
  // Synchronizes the stream: every queued copy is then readable.
  void wait();

 private:
  const void* queue(const void* device, std::size_t width_bytes, std::size_t pitch_bytes,
                    std::size_t rows, const char* what);
  cudaStream_t stream_;
  const char* fn_;
  std::size_t block_, offset_;  // the thread's staging position on entry, restored on exit
  bool queued_ = false, waited_ = false;
};

}  // namespace gpuattn
