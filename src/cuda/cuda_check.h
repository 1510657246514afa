// CUDA error checking that turns a failed runtime call into a gpuattn::Error naming the call.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <string>

#include "cuda/relaxed_capture.h"
#include "gpuattn/types.h"

#define GPUATTN_CUDA_CHECK(expr)                                                                   \
  do {                                                                                             \
    const cudaError_t gpuattn_err_ = (expr);                                                       \
    if (gpuattn_err_ != cudaSuccess) {                                                             \
      (void)cudaGetLastError(); /* reported here, not again by the next launch's check */          \
      throw ::gpuattn::Error(::gpuattn::ErrorCode::cuda_error,                                     \
                             std::string(#expr) + " failed: " + cudaGetErrorString(gpuattn_err_) + \
                                 " (" __FILE__ ")");                                               \
    }                                                                                              \
  } while (0)

namespace gpuattn {

// Per device ordinal: whether a one-time setting was made on that device (ordinals past 63 are
// never remembered, so the setting is made on every call there).
using PerDeviceFlags = std::array<std::atomic<bool>, 64>;

// Runs `step` (which throws on failure) unless it already returned on the current device, as
// remembered in `done`: once per device, not once per process.
template <class Step>
void once_per_device(PerDeviceFlags& done, Step&& step) {
  int device = 0;
  GPUATTN_CUDA_CHECK(cudaGetDevice(&device));
  const bool cacheable = device >= 0 && device < static_cast<int>(done.size());
  if (cacheable && done[device].load(std::memory_order_acquire)) return;
  const RelaxedCapture relaxed;  // a process's first call may be inside a graph capture
  step();
  if (cacheable) done[device].store(true, std::memory_order_release);
}

// Lets `kernel` use `bytes` of dynamic shared memory on the current device. cudaFuncSetAttribute
// applies to the current device's context only, so it runs once per device, remembered in `done`
// (one PerDeviceFlags per kernel): set once per process, a later launch on a second device
// would fail for any kernel above the default 48 KB.
inline void set_max_dynamic_smem(const void* kernel, int bytes, PerDeviceFlags& done) {
  once_per_device(done, [&] {
    GPUATTN_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  });
}

}  // namespace gpuattn
