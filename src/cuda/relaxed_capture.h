// The calling thread's stream-capture mode set to relaxed for a scope.
#pragma once

#include <cuda_runtime.h>

namespace gpuattn {

// While one lives, the calling thread may make the calls that a global- or thread-local-mode
// capture refuses as unsafe (cudaHostAlloc, cudaFreeHost, cudaMemPoolCreate): the library's
// one-time allocations and pool creation, which a call captured into a graph (a process's first
// call included) may have to make, and which are not stream work that the graph would record.
// Without it a capture on the calling thread (torch.cuda.graph's global mode, or any other) fails
// the call, and a global-mode capture on another thread is invalidated by it.
class RelaxedCapture {
 public:
  RelaxedCapture() { (void)cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCapture() { (void)cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

}  // namespace gpuattn
