// Host-side helpers shared by the forward launchers.
#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/fwd_sm80.h"

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

cudaMemPool_t launch_pool() {
  static std::array<std::atomic<cudaMemPool_t>, 64> pools{};
  int device = 0;
  GPUATTN_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= static_cast<int>(pools.size())) {
    throw Error(ErrorCode::not_supported,
                "gpuattn: device ordinal " + std::to_string(device) + " is past the 64 supported");
  }
  cudaMemPool_t pool = pools[device].load(std::memory_order_acquire);
  if (pool != nullptr) return pool;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t created = nullptr;
  GPUATTN_CUDA_CHECK(cudaMemPoolCreate(&created, &props));
  std::uint64_t keep = ~std::uint64_t{0};
  GPUATTN_CUDA_CHECK(cudaMemPoolSetAttribute(created, cudaMemPoolAttrReleaseThreshold, &keep));
  cudaMemPool_t expected = nullptr;
  if (!pools[device].compare_exchange_strong(expected, created, std::memory_order_acq_rel)) {
    cudaMemPoolDestroy(created);  // another thread made this device's pool first
    return expected;
  }
  return created;
}

LaunchBuffer::LaunchBuffer(cudaStream_t stream, std::size_t bytes, std::size_t zeroed)
    : stream_(stream) {
  GPUATTN_CUDA_CHECK(cudaMallocFromPoolAsync(&ptr_, bytes, launch_pool(), stream));
  if (zeroed > 0) {
    const cudaError_t err = cudaMemsetAsync(ptr_, 0, zeroed < bytes ? zeroed : bytes, stream);
    if (err != cudaSuccess) {
      cudaFreeAsync(ptr_, stream);
      GPUATTN_CUDA_CHECK(err);
    }
  }
}

LaunchBuffer::~LaunchBuffer() {
  cudaFreeAsync(ptr_, stream_);  // stream-ordered: after the kernel launched before it
}

}  // namespace gpuattn::sm80
