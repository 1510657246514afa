// The launch floor under `gpuattn bench`'s timing: what an empty kernel costs between the two
// CUDA events that time a call, with and without the 256 MiB L2 flush before it (the method of
// time_sustained in tools/gpuattn/device_cuda.cpp), for the launch shapes of the sm_90a forward
// kernel. A call's time is this floor plus its kernel's own work, so a goal given in microseconds
// (issue 4: fp16 B1 H16 S1024 D64 at <= 0.8 us/head, 12.8 us a call) leaves the work what the
// floor does not take.
//
//   gpuattn_launch_floor [ITERS]     (default 200 timed calls a row)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "launch_floor: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// N bytes of kernel parameters: 4, or 1 KB, about what the sm_90a kernel passes (FwdParams and
// four 128-byte tensor maps).
template <int N>
struct Params {
  unsigned char bytes[N];
};

// Does nothing a compiler can drop without the flag: a thread reads its parameters and writes
// only when flag is set, and the launches pass 0.
template <int N>
__global__ void empty_kernel(const __grid_constant__ Params<N> p, int* out, int flag) {
  extern __shared__ unsigned char smem[];
  if (flag) {
    smem[threadIdx.x] = p.bytes[threadIdx.x % N];
    __syncthreads();
    out[blockIdx.x] = smem[threadIdx.x ^ 1];
  }
}

struct Row {
  int grid, threads, smem_bytes;
  bool flush;
  bool big_params = false;
};

// Median microseconds of `iters` calls, each between two events, enqueued back to back (each
// after the L2 flush when row.flush), then one wait.
double time_row(const Row& row, int iters, int* out, void* flush_buf, std::size_t flush_bytes) {
  std::vector<cudaEvent_t> ev(2 * static_cast<std::size_t>(iters));
  for (auto& e : ev) check(cudaEventCreate(&e), "cudaEventCreate");
  auto launch = [&] {
    if (row.big_params) {
      empty_kernel<1024><<<row.grid, row.threads, row.smem_bytes>>>(Params<1024>{}, out, 0);
    } else {
      empty_kernel<4><<<row.grid, row.threads, row.smem_bytes>>>(Params<4>{}, out, 0);
    }
    check(cudaGetLastError(), "launch");
  };
  for (int i = 0; i < 10; ++i) launch();  // warm-up
  for (int i = 0; i < iters; ++i) {
    if (row.flush) check(cudaMemsetAsync(flush_buf, 0, flush_bytes), "cudaMemsetAsync");
    check(cudaEventRecord(ev[2 * i]), "cudaEventRecord");
    launch();
    check(cudaEventRecord(ev[2 * i + 1]), "cudaEventRecord");
  }
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::vector<double> us(static_cast<std::size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    float ms = 0.f;
    check(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]), "cudaEventElapsedTime");
    us[static_cast<std::size_t>(i)] = 1000.0 * ms;
  }
  for (auto& e : ev) check(cudaEventDestroy(e), "cudaEventDestroy");
  std::nth_element(us.begin(), us.begin() + iters / 2, us.end());
  return us[static_cast<std::size_t>(iters / 2)];
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 200;
  if (argc > 1) {
    char* end = nullptr;
    const long v = std::strtol(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || v < 1 || v > 100000) {
      std::fprintf(stderr, "launch_floor: ITERS must be an integer in [1, 100000], not '%s'\n",
                   argv[1]);
      return 2;
    }
    iters = static_cast<int>(v);
  }
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  const int max_smem = static_cast<int>(prop.sharedMemPerBlockOptin);
  for (const void* kernel : {reinterpret_cast<const void*>(empty_kernel<4>),
                             reinterpret_cast<const void*>(empty_kernel<1024>)}) {
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem),
          "cudaFuncSetAttribute");
  }
  int* out = nullptr;
  check(cudaMalloc(&out, 4096 * sizeof(int)), "cudaMalloc");
  const std::size_t flush_bytes = std::size_t(256) << 20;
  void* flush_buf = nullptr;
  check(cudaMalloc(&flush_buf, flush_bytes), "cudaMalloc");

  std::printf("device: %s, %d SMs, %d timed calls a row (median)\n", prop.name,
              prop.multiProcessorCount, iters);
  std::printf(
      "| grid | threads | dynamic smem | parameters | L2 flush before | us a call | us / 16 heads "
      "|\n");
  std::printf("|---:|---:|---:|---:|---|---:|---:|\n");
  // The D64 kernel's shapes: 128 CTAs (B1 H16 S1024, one item each) or one per SM, 384 threads
  // (2 consumer warpgroups and the producer), ~100 KB (D64) to the opt-in maximum (D128/D256).
  const int sms = prop.multiProcessorCount;
  const std::vector<Row> rows = {
      {128, 384, 0, true},
      {128, 384, 100 << 10, true},
      {128, 384, max_smem, true},
      {sms, 384, max_smem, true},
      {128, 384, 0, false},
      {128, 384, max_smem, false},
      {128, 384, 100 << 10, true, true},
  };
  for (const Row& r : rows) {
    const double us = time_row(r, iters, out, flush_buf, flush_bytes);
    std::printf("| %d | %d | %d | %s | %s | %.2f | %.3f |\n", r.grid, r.threads, r.smem_bytes,
                r.big_params ? "1 KB" : "16 B", r.flush ? "yes" : "no", us, us / 16.0);
  }
  check(cudaFree(flush_buf), "cudaFree");
  check(cudaFree(out), "cudaFree");
  return 0;
}
