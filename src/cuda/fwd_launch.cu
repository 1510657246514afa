// Host-side helpers shared by the forward launchers.
#include <cuda_runtime.h>

#include <array>
#include <atomic>

#include "cuda/cuda_check.h"

namespace gpuattn::sm80 {

int num_sms() {
  static std::array<std::atomic<int>, 64> cache{};  // per device ordinal; 0 = not queried yet
  int device = 0;
  GPUATTN_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= static_cast<int>(cache.size())) device = 0;
  int n = cache[device].load(std::memory_order_relaxed);
  if (n == 0) {
    GPUATTN_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    cache[device].store(n, std::memory_order_relaxed);
  }
  return n;
}

int max_smem_per_block() {
  static std::array<std::atomic<int>, 64> cache{};  // per device ordinal; 0 = not queried yet
  int device = 0;
  GPUATTN_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= static_cast<int>(cache.size())) device = 0;
  int n = cache[device].load(std::memory_order_relaxed);
  if (n == 0) {
    GPUATTN_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    cache[device].store(n, std::memory_order_relaxed);
  }
  return n;
}

}  // namespace gpuattn::sm80
