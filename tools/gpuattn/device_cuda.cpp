// CUDA runtime calls of the tool. Compiled only when the library has its CUDA backend.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "common.h"
#include "core/fwd_params.h"
#include "cuda/baseline.h"
#include "device.h"

namespace gpuattn::tool::cuda {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw Error(ErrorCode::cuda_error, std::string(what) + " failed: " + cudaGetErrorString(e));
  }
}

class Events {
 public:
  explicit Events(std::size_t n) : events_(n, nullptr) {
    for (auto& e : events_) check(cudaEventCreate(&e), "cudaEventCreate");
  }
  ~Events() {
    for (auto e : events_) {
      if (e) cudaEventDestroy(e);
    }
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  cudaEvent_t operator[](std::size_t i) const { return events_[i]; }

 private:
  std::vector<cudaEvent_t> events_;
};

}  // namespace

Buffer::Buffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t e = cudaMalloc(&ptr_, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the error so later calls do not see it
    ptr_ = nullptr;
    throw Error(ErrorCode::cuda_error, "cudaMalloc of " + std::to_string(bytes) +
                                           " bytes failed: " + cudaGetErrorString(e));
  }
}

Buffer::~Buffer() {
  if (ptr_) cudaFree(ptr_);
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void upload(void* dst, const void* src, std::size_t bytes) {
  if (bytes) check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
}

void download(void* dst, const void* src, std::size_t bytes) {
  if (bytes) check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
}

void poison(void* dst, std::size_t bytes) {
  if (bytes) check(cudaMemset(dst, 0xff, bytes), "cudaMemset");
}

void synchronize() {
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

void set_device(int device) {
  check(cudaSetDevice(device), "cudaSetDevice");
}

DeviceInfo device_info() {
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  DeviceInfo info;
  info.name = prop.name;
  info.sm_count = prop.multiProcessorCount;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.max_smem_per_block = static_cast<int>(prop.sharedMemPerBlockOptin);
  info.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  check(cudaMemGetInfo(&info.free_bytes, &info.total_bytes), "cudaMemGetInfo");
  return info;
}

namespace {

// Calls fn(first), ..., fn(first + iters - 1) on the default stream, each between two CUDA events
// and after before() (outside the events); everything is enqueued before the one wait, so the GPU
// runs the calls back to back. Returns each call's milliseconds.
std::vector<double> timed_calls(const std::function<void(int)>& fn, int first, int iters,
                                const std::function<void()>& before) {
  Events ev(2 * static_cast<std::size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    before();
    check(cudaEventRecord(ev[2 * i], nullptr), "cudaEventRecord");
    fn(first + i);
    check(cudaEventRecord(ev[2 * i + 1], nullptr), "cudaEventRecord");
  }
  synchronize();
  std::vector<double> ms(static_cast<std::size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    float t = 0.f;
    check(cudaEventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]), "cudaEventElapsedTime");
    ms[static_cast<std::size_t>(i)] = t;
  }
  return ms;
}

}  // namespace

std::vector<double> time_calls(const std::function<void(int)>& fn, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) fn(i);
  return timed_calls(fn, warmup, iters, [] {});
}

std::vector<double> time_sustained(const std::function<void(int)>& fn, double warmup_ms,
                                   double rep_ms) {
  // The L2 flush: 256 MiB of zeros written before every timed call (do_bench's cache buffer),
  // outside the events.
  static Buffer flush(std::size_t(256) << 20);
  auto flush_l2 = [] {
    check(cudaMemsetAsync(flush.get(), 0, flush.bytes(), nullptr), "cudaMemsetAsync");
  };
  // The first call (kernel loading, one-time setup) is not part of the estimate.
  fn(0);
  synchronize();
  constexpr int kProbe = 5;
  Events probe(2);
  check(cudaEventRecord(probe[0], nullptr), "cudaEventRecord");
  for (int i = 0; i < kProbe; ++i) {
    flush_l2();
    fn(1 + i);
  }
  check(cudaEventRecord(probe[1], nullptr), "cudaEventRecord");
  synchronize();
  float probe_ms = 0.f;
  check(cudaEventElapsedTime(&probe_ms, probe[0], probe[1]), "cudaEventElapsedTime");
  const double per_call = std::max(static_cast<double>(probe_ms) / kProbe, 1e-3);
  const int warmup = static_cast<int>(std::clamp(warmup_ms / per_call, 1.0, 100000.0));
  const int iters = static_cast<int>(std::clamp(rep_ms / per_call, 5.0, 100000.0));
  int call = 1 + kProbe;
  for (int i = 0; i < warmup; ++i) {
    flush_l2();
    fn(call++);
  }
  return timed_calls(fn, call, iters, flush_l2);
}

std::size_t baseline_workspace_bytes(const AttentionArgs& args) {
  return gpuattn::baseline_workspace_bytes(make_fwd_params(args));
}

void baseline_forward(const AttentionArgs& args, Buffer& workspace) {
  gpuattn::baseline_attention_forward(make_fwd_params(args), workspace.get(), workspace.bytes(),
                                      args.stream);
}

double measure_gemm_tflops(DType dtype, int n, int warmup, int iters) {
  const std::int64_t nn = static_cast<std::int64_t>(n) * n;
  HostTensor host(dtype, {nn});
  fill_random(host, 12345, 1.f);
  Buffer a(host.bytes()), b(host.bytes()), c(host.bytes()), ws(std::size_t(64) << 20);
  upload(a.get(), host.data(), host.bytes());
  upload(b.get(), host.data(), host.bytes());
  const auto ms = time_calls(
      [&](int) {
        gpuattn::baseline_gemm_tn(dtype, n, n, n, a.get(), b.get(), c.get(), ws.get(), ws.bytes(),
                                  nullptr);
      },
      warmup, iters);
  return 2.0 * static_cast<double>(n) * nn / (median(ms) * 1e-3) / 1e12;
}

}  // namespace gpuattn::tool::cuda
