// The tool's small window on the CUDA runtime (device_cuda.cpp, built only with the CUDA backend):
// device memory, copies, NaN poisoning, event timing, the baseline and the GEMM ceiling.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpuattn/attention.h"

namespace gpuattn::tool::cuda {

// Device memory of the current device, freed on destruction. 256-byte aligned.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::size_t bytes);
  ~Buffer();
  Buffer(Buffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

void upload(void* dst, const void* src, std::size_t bytes);
void download(void* dst, const void* src, std::size_t bytes);
void poison(void* dst, std::size_t bytes);  // 0xff bytes: NaN in f16, bf16 and f32
void synchronize();
// Several GPUs (gpuattn dist): how many are visible, which is current, and a whole-device sync.
int device_count();
void set_device(int device);

struct DeviceInfo {
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  int max_smem_per_block = 0;  // opt-in shared memory per block, bytes (the dispatch reads it)
  std::size_t l2_bytes = 0;
  std::size_t total_bytes = 0;
  std::size_t free_bytes = 0;
};
DeviceInfo device_info();

// Calls fn(i) for i in [0, warmup + iters) on the default stream, each call between two CUDA
// events; returns the milliseconds of the last `iters` calls.
std::vector<double> time_calls(const std::function<void(int)>& fn, int warmup, int iters);

// The protocol of triton.testing.do_bench, which times the torch anchors: calls fn(i) for
// about `warmup_ms` of warm-up, then for about `rep_ms` (at least 5 calls), each timed call
// between two CUDA events and preceded by a 256 MiB memset that flushes the L2 (outside the
// events); the call count comes from the time of 5 probe calls. Returns the timed calls' ms.
std::vector<double> time_sustained(const std::function<void(int)>& fn, double warmup_ms,
                                   double rep_ms);

// The 3-kernel baseline (src/cuda/baseline.h) over device tensors described by `args`.
std::size_t baseline_workspace_bytes(const AttentionArgs& args);
void baseline_forward(const AttentionArgs& args, Buffer& workspace);

// Median TFLOP/s of a cuBLASLt n^3 GEMM in `dtype` (f16/bf16): the ceiling for "% of peak".
double measure_gemm_tflops(DType dtype, int n, int warmup, int iters);

}  // namespace gpuattn::tool::cuda
