// Host-side helpers shared by the forward launchers.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "core/env_switch.h"
#include "cuda/cuda_check.h"
#include "cuda/fwd_sm80.h"
#include "cuda/pdl.h"
#include "cuda/relaxed_capture.h"

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

bool pdl_enabled() {
  static const bool allowed = [] {
    const char* v = std::getenv("GPUATTN_PDL");
    int runtime = 0;
    return !(v && std::strcmp(v, "0") == 0) && cudaRuntimeGetVersion(&runtime) == cudaSuccess &&
           runtime >= 12030;
  }();
  return allowed && compute_capability_major() >= 9;
}

bool kernel_waits_for_pdl(const void* kernel) {
  static std::mutex mutex;
  static std::map<std::pair<int, const void*>, bool> known;
  int device = 0;
  GPUATTN_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(device, kernel);
  const auto it = known.find(key);
  if (it != known.end()) return it->second;
  cudaFuncAttributes attr{};
  GPUATTN_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  return known[key] = attr.ptxVersion >= 90;
}

void prefer_max_shared(const void* kernel) {
  static const bool on = env_flag("GPUATTN_CARVEOUT_MAX", true);
  if (!on) return;
  GPUATTN_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                          cudaSharedmemCarveoutMaxShared));
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
  // A process's first call may be the one captured into a graph: the pool is made (and a
  // duplicate destroyed) outside the capture's rules; it is no stream work.
  const RelaxedCapture relaxed;
  GPUATTN_CUDA_CHECK(cudaMemPoolCreate(&created, &props));
  std::uint64_t keep = ~std::uint64_t{0};
  const cudaError_t set = cudaMemPoolSetAttribute(created, cudaMemPoolAttrReleaseThreshold, &keep);
  if (set != cudaSuccess) {
    cudaMemPoolDestroy(created);
    GPUATTN_CUDA_CHECK(set);
  }
  cudaMemPool_t expected = nullptr;
  if (!pools[device].compare_exchange_strong(expected, created, std::memory_order_acq_rel)) {
    cudaMemPoolDestroy(created);  // another thread made this device's pool first
    return expected;
  }
  return created;
}

LaunchBuffer::LaunchBuffer(cudaStream_t stream, std::size_t bytes, std::size_t zeroed)
    : stream_(stream) {
  // At least 16 bytes: an empty buffer (a varlen side of no rows, dequantized) still has a valid,
  // aligned address for the tensor maps that describe it and read none of it.
  GPUATTN_CUDA_CHECK(
      cudaMallocFromPoolAsync(&ptr_, bytes > 16 ? bytes : 16, launch_pool(), stream));
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

int* stream_counters(cudaStream_t stream, std::size_t count) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  GPUATTN_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) return nullptr;
  unsigned long long id = 0;
  GPUATTN_CUDA_CHECK(cudaStreamGetId(stream, &id));
  int device = 0;
  GPUATTN_CUDA_CHECK(cudaGetDevice(&device));
  struct Counters {
    int* ptr = nullptr;
    std::size_t count = 0;
  };
  static std::mutex mutex;
  static std::map<std::pair<int, unsigned long long>, Counters> kept;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = kept.find({device, id});
  if (it == kept.end()) {
    if (kept.size() >= static_cast<std::size_t>(kMaxCounterStreams)) return nullptr;
    it = kept.emplace(std::make_pair(device, id), Counters{}).first;
  }
  Counters& c = it->second;
  if (c.count < count) {
    // A larger array, zeroed once on the stream. The old one is kept, not freed: another host
    // thread may have taken its pointer for a launch on this stream that it has not queued yet
    // (freed on the stream, its memory could go to that launch's decode workspace first). Sizes
    // at least double, from 256 ints, so few are ever kept: a decode call takes a count per unit
    // and splits only when its units are at most half its CTA slots (DecodePlan::plan; 2 a SM),
    // so 256 hold any call on a GPU of up to 256 SMs.
    const std::size_t grown = std::max<std::size_t>({count, 2 * c.count, 256});
    void* fresh = nullptr;
    GPUATTN_CUDA_CHECK(cudaMallocFromPoolAsync(&fresh, grown * sizeof(int), launch_pool(), stream));
    const cudaError_t err = cudaMemsetAsync(fresh, 0, grown * sizeof(int), stream);
    if (err != cudaSuccess) {
      cudaFreeAsync(fresh, stream);
      GPUATTN_CUDA_CHECK(err);
    }
    c.ptr = static_cast<int*>(fresh);
    c.count = grown;
  }
  return c.ptr;
}

LaunchCounters::LaunchCounters(cudaStream_t stream, std::size_t count, const FwdParams& p) {
  if (p.counters != nullptr) {
    if (static_cast<std::size_t>(p.counters_count) < count) {
      throw Error(ErrorCode::invalid_argument,
                  "gpuattn: counters holds " + std::to_string(p.counters_count) +
                      " int32s; this call needs " + std::to_string(count));
    }
    ptr_ = p.counters;
    return;
  }
  ptr_ = stream_counters(stream, count);
  if (ptr_ == nullptr) {
    buffer_.emplace(stream, count * sizeof(int), count * sizeof(int));
    ptr_ = buffer_->as<int>();
  }
}

}  // namespace gpuattn::sm80
