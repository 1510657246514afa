// Host-side helpers shared by the forward launchers.
#include <cuda_runtime.h>

#include <array>
#include <atomic>

#include "cuda/cuda_check.h"

namespace gpuattn::sm80 {
namespace {

// An attribute of the current device, cached per device ordinal (0: not queried yet; the
// attributes read here are all positive).
template <cudaDeviceAttr kAttr>
int cached_attribute() {
  static std::array<std::atomic<int>, 64> cache{};
  int device = 0;
  GPUATTN_CUDA_CHECK(cudaGetDevice(&device));
  const bool cacheable = device >= 0 && device < static_cast<int>(cache.size());
  int v = cacheable ? cache[device].load(std::memory_order_relaxed) : 0;
  if (v == 0) {
    GPUATTN_CUDA_CHECK(cudaDeviceGetAttribute(&v, kAttr, device));
    if (cacheable) cache[device].store(v, std::memory_order_relaxed);
  }
  return v;
}

}  // namespace

int num_sms() {
  return cached_attribute<cudaDevAttrMultiProcessorCount>();
}
int max_smem_per_block() {
  return cached_attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>();
}
int compute_capability_major() {
  return cached_attribute<cudaDevAttrComputeCapabilityMajor>();
}

}  // namespace gpuattn::sm80
