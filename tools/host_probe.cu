// The host time of an attention call through the C++ API, and of the CUDA runtime calls such a
// call makes, with the GPU kept busy by a spin kernel so that no call waits for it: the native
// part of what bench/host_overhead.py measures from Python (there, nanobind's DLPack imports and
// torch's allocations come on top). Each row is the median over 5 rounds of the mean host
// microseconds of CALLS calls; a row whose calls outlasted the spin says so (its time would
// include GPU waits).
//
//   gpuattn_host_probe [CALLS]     (default 200)
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "cuda/tma_maps.h"
#include "gpuattn/attention.h"

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "host_probe: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

__global__ void spin(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

// About the sm_90a kernel's launch: 1 KB of parameters (FwdParams and four tensor maps), 384
// threads, 100 KB of dynamic shared memory. Writes only when flag is set (never here).
struct Params1k {
  unsigned char bytes[1024];
};
__global__ void empty_kernel(const __grid_constant__ Params1k p, int* out, int flag) {
  if (flag) out[threadIdx.x] = p.bytes[threadIdx.x];
}

struct Row {
  std::string name;
  double us = 0;
  bool gpu_idle = false;  // the spin ended before the calls were issued
};

// The median over rounds of the host us a call of fn(), the GPU kept busy on `stream`.
Row measure(const std::string& name, const std::function<void()>& fn, int calls,
            cudaStream_t stream) {
  fn();  // first-call setup (attributes, pools, caches)
  check(cudaStreamSynchronize(stream), "warm-up");
  std::vector<double> rounds;
  Row row{name};
  cudaEvent_t done;
  check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
  for (int r = 0; r < 5; ++r) {
    spin<<<1, 1, 0, stream>>>(400'000'000LL);  // ~0.2 s at 2 GHz
    check(cudaGetLastError(), "spin launch");
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) fn();
    const auto t1 = std::chrono::steady_clock::now();
    check(cudaEventRecord(done, stream), "cudaEventRecord");
    const cudaError_t q = cudaEventQuery(done);
    if (q == cudaSuccess) row.gpu_idle = true;
    if (q != cudaSuccess && q != cudaErrorNotReady) check(q, "cudaEventQuery");
    check(cudaStreamSynchronize(stream), "round");
    rounds.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / calls);
  }
  check(cudaEventDestroy(done), "cudaEventDestroy");
  std::sort(rounds.begin(), rounds.end());
  row.us = rounds[rounds.size() / 2];
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 200;
  if (argc > 2) {
    std::fprintf(stderr, "usage: %s [CALLS]\n", argv[0]);
    return 2;
  }
  if (argc == 2) {
    char* end = nullptr;
    const long n = std::strtol(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || n < 1 || n > 100000) {
      std::fprintf(stderr, "host_probe: CALLS must be a whole number in [1, 100000], got '%s'\n",
                   argv[1]);
      return 2;
    }
    calls = static_cast<int>(n);
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "host_probe: no CUDA device\n");
    return 1;
  }
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  // fp16 B1 H16 S1024 D64 (the one-wave shape) and bf16 B8 H32/8 Sq1 Sk4096 D128 (decode), [B, S,
  // H, D]. The values are never read back: only the host's time is measured.
  const std::size_t dense = 1ull * 1024 * 16 * 64;
  const std::size_t kv_decode = 8ull * 4096 * 8 * 128, q_decode = 8ull * 1 * 32 * 128;
  void *q, *k, *v, *o, *dq, *dk, *dv, *dout;
  for (auto [ptr, n] : {std::pair{&q, dense}, {&k, dense}, {&v, dense}, {&o, dense},
                        {&dq, q_decode}, {&dk, kv_decode}, {&dv, kv_decode}, {&dout, q_decode}}) {
    check(cudaMalloc(ptr, n * 2), "cudaMalloc");
    check(cudaMemset(*ptr, 0x3c, n * 2), "cudaMemset");  // fp16 ~1.0, bf16 ~0.01
  }
  using gpuattn::Device;
  using gpuattn::DType;
  using gpuattn::TensorView;
  // One call's arguments: q/out of shape qs, k/v of shape kvs, on `stream`.
  auto args = [&](DType t, void* qp, void* kp, void* vp, void* op,
                  std::initializer_list<std::int64_t> qs, std::initializer_list<std::int64_t> kvs) {
    gpuattn::AttentionArgs r;
    r.q = TensorView::contiguous(qp, t, Device::cuda, qs);
    r.k = TensorView::contiguous(kp, t, Device::cuda, kvs);
    r.v = TensorView::contiguous(vp, t, Device::cuda, kvs);
    r.out = TensorView::contiguous(op, t, Device::cuda, qs);
    r.stream = stream;
    return r;
  };
  const gpuattn::AttentionArgs a =
      args(DType::f16, q, k, v, o, {1, 1024, 16, 64}, {1, 1024, 16, 64});
  gpuattn::AttentionArgs causal = a;
  causal.causal = true;
  const gpuattn::AttentionArgs dec =
      args(DType::bf16, dq, dk, dv, dout, {8, 1, 32, 128}, {8, 4096, 8, 128});

  gpuattn::FwdParams p;
  p.q = q;
  p.k = k;
  p.v = v;
  p.o = o;
  p.dtype = DType::f16;
  p.batch = 1;
  p.hq = p.hkv = 16;
  p.head_dim = 64;
  p.seqlen_q = p.seqlen_k = 1024;
  p.total_q = p.total_k = 1024;
  p.q_head_stride = p.k_head_stride = p.v_head_stride = p.o_head_stride = 64;
  p.q_row_stride = p.k_row_stride = p.v_row_stride = p.o_row_stride = 16 * 64;
  p.q_batch_stride = p.k_batch_stride = p.v_batch_stride = p.o_batch_stride = 1024 * 16 * 64;

  Params1k params{};
  int* sink = static_cast<int*>(o);
  check(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 << 10),
        "cudaFuncSetAttribute");

  std::vector<Row> rows;
  rows.push_back(measure("attention_forward fp16 B1 H16 S1024 D64",
                         [&] { gpuattn::attention_forward(a); }, calls, stream));
  rows.push_back(measure("attention_forward fp16 B1 H16 S1024 D64 causal",
                         [&] { gpuattn::attention_forward(causal); }, calls, stream));
  rows.push_back(measure("attention_forward bf16 B8 H32/8 Sq1 Sk4096 D128 (decode)",
                         [&] { gpuattn::attention_forward(dec); }, calls, stream));
  rows.push_back(measure("cudaPointerGetAttributes", [&] {
    cudaPointerAttributes attr{};
    check(cudaPointerGetAttributes(&attr, q), "cudaPointerGetAttributes");
  }, calls, stream));
  rows.push_back(measure("cudaGetDevice", [&] {
    int d = 0;
    check(cudaGetDevice(&d), "cudaGetDevice");
  }, calls, stream));
  rows.push_back(measure("make_qkv_tensor_maps (4 x cuTensorMapEncodeTiled)", [&] {
    const gpuattn::QkvTensorMaps m = gpuattn::make_qkv_tensor_maps(p, 128, 128, 64);
    if (m.q.opaque[0] == 0x7fffffffffffffffull) std::puts("");  // keep the maps alive
  }, calls, stream));
  rows.push_back(measure("launch 128 x 384 threads, 1 KB params, 100 KB smem", [&] {
    empty_kernel<<<128, 384, 100 << 10, stream>>>(params, sink, 0);
  }, calls, stream));
  rows.push_back(measure("cudaGetLastError", [&] { (void)cudaGetLastError(); }, calls, stream));
  rows.push_back(measure("cudaMallocAsync + cudaFreeAsync of 4 bytes", [&] {
    void* w = nullptr;
    check(cudaMallocAsync(&w, 4, stream), "cudaMallocAsync");
    check(cudaFreeAsync(w, stream), "cudaFreeAsync");
  }, calls, stream));
  rows.push_back(measure("cudaMemsetAsync of 4 bytes", [&] {
    check(cudaMemsetAsync(sink, 0, 4, stream), "cudaMemsetAsync");
  }, calls, stream));

  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("host us a call (median of 5 rounds of %d calls, the GPU kept busy), %s\n", calls,
              prop.name);
  for (const Row& r : rows) {
    std::printf("  %-62s %8.2f%s\n", r.name.c_str(), r.us,
                r.gpu_idle ? "  (GPU idle before the calls ended: includes waits)" : "");
  }
  for (void* ptr : {q, k, v, o, dq, dk, dv, dout}) cudaFree(ptr);
  cudaStreamDestroy(stream);
  return 0;
}
