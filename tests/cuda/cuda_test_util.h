// Helpers for the GPU tests: checked CUDA runtime calls, an owning device buffer, pinned host
// memory, a stream, and a parallel loop for the host-side work (input generation, reference).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpuattn/reference.h"

namespace gpuattn::testing {

// A failed CUDA call in test setup is a std::runtime_error (not a gpuattn::Error), so that it can
// never be mistaken for an error the library reported.
inline void cuda_check(cudaError_t e, const char* expr, const char* file, int line) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string(expr) + " failed: " + cudaGetErrorName(e) + " (" +
                             cudaGetErrorString(e) + ") at " + file + ":" + std::to_string(line));
  }
}
#define TEST_CUDA_CHECK(expr) ::gpuattn::testing::cuda_check((expr), #expr, __FILE__, __LINE__)

// cudaMalloc'ed bytes, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) TEST_CUDA_CHECK(cudaMalloc(&ptr_, bytes_));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    DeviceBuffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }

  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

  // Copies `bytes()` bytes from host memory `src` (synchronous, or ordered on `stream`).
  void upload(const void* src, cudaStream_t stream = nullptr) {
    if (bytes_ == 0) return;
    if (stream) {
      TEST_CUDA_CHECK(cudaMemcpyAsync(ptr_, src, bytes_, cudaMemcpyHostToDevice, stream));
    } else {
      TEST_CUDA_CHECK(cudaMemcpy(ptr_, src, bytes_, cudaMemcpyHostToDevice));
    }
  }
  void download(void* dst) const {
    if (bytes_ > 0) TEST_CUDA_CHECK(cudaMemcpy(dst, ptr_, bytes_, cudaMemcpyDeviceToHost));
  }
  std::vector<unsigned char> snapshot() const {
    std::vector<unsigned char> h(bytes_);
    download(h.data());
    return h;
  }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
  }
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Page-locked host memory, so that copies on a stream are truly asynchronous.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) TEST_CUDA_CHECK(cudaMallocHost(&ptr_, bytes_));
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (ptr_) cudaFreeHost(ptr_);
  }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

class Stream {
 public:
  Stream() { TEST_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

inline unsigned host_threads() {
  return std::max(1u, std::thread::hardware_concurrency());
}

// Runs fn(i) for i in [0, n) on all host cores; the first exception is rethrown after the join.
template <class Fn>
void parallel_for(std::int64_t n, Fn&& fn) {
  const auto workers = static_cast<std::int64_t>(std::min<std::int64_t>(host_threads(), n));
  if (workers <= 1) {
    for (std::int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<std::int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(workers));
  for (std::int64_t t = 0; t < workers; ++t) {
    pool.emplace_back([&] {
      try {
        for (std::int64_t i = next++; i < n; i = next++) fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next = n;
      }
    });
  }
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

// Stable seed of a test name (FNV-1a): the same inputs on every run and platform.
inline std::uint64_t seed_of(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

// The shape fields every test case type carries (B, Hq, Hkv, Sq, Sk, D, dtype, lens_q, lens_k):
// a dense batch, and a packed variable-length batch (`lk` empty: the same lengths as `lq`; Sq, Sk
// are the max lengths).
template <class C, class DTypeT>
C dense_case(int B, int Hq, int Hkv, int Sq, int Sk, int D, DTypeT t) {
  C c;
  c.B = B;
  c.Hq = Hq;
  c.Hkv = Hkv;
  c.Sq = Sq;
  c.Sk = Sk;
  c.D = D;
  c.dtype = t;
  return c;
}
template <class C, class DTypeT>
C varlen_case(int Hq, int Hkv, int D, DTypeT t, std::vector<int> lq, std::vector<int> lk) {
  C c;
  c.lens_k = lk.empty() ? lq : std::move(lk);
  c.lens_q = std::move(lq);
  c.B = static_cast<int>(c.lens_q.size());
  c.Hq = Hq;
  c.Hkv = Hkv;
  c.Sq = *std::max_element(c.lens_q.begin(), c.lens_q.end());
  c.Sk = *std::max_element(c.lens_k.begin(), c.lens_k.end());
  c.D = D;
  c.dtype = t;
  return c;
}

// reference_attention over the rows, dealt round-robin to all host cores (causal rows differ in
// cost, so neighbours go to different threads); rows must not be empty.
inline ReferenceResult parallel_reference(const AttentionArgs& host,
                                          const std::vector<std::int64_t>& rows) {
  const std::size_t n = std::min<std::size_t>(host_threads(), rows.size());
  std::vector<std::vector<std::int64_t>> parts(n);
  for (std::size_t i = 0; i < rows.size(); ++i) parts[i % n].push_back(rows[i]);
  std::vector<ReferenceResult> results(n);
  // Never pass an empty list: reference_attention reads that as "all rows".
  parallel_for(static_cast<std::int64_t>(n), [&](std::int64_t t) {
    const auto i = static_cast<std::size_t>(t);
    results[i] = reference_attention(host, parts[i]);
  });
  ReferenceResult all;
  for (const ReferenceResult& r : results) {
    all.rows.insert(all.rows.end(), r.rows.begin(), r.rows.end());
    all.out.insert(all.out.end(), r.out.begin(), r.out.end());
    all.lse.insert(all.lse.end(), r.lse.begin(), r.lse.end());
  }
  return all;
}

}  // namespace gpuattn::testing
