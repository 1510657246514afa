// How fast one warp's softmax exponentials issue on an SM sub-partition, alone and beside the
// other work of the sm_90a forward kernel's step: a second warp's exponentials, or wgmma GEMMs
// from another warpgroup (register-sourced A as in P V, or both operands from shared memory as
// in S = Q K^T with Q in smem). The D64 step of that kernel spends ~1000-1400 cycles in a
// softmax of 64 MUFU.EX2 a warp, against the 512 cycles that 16 exponentials a clock an SM
// would allow (bench/results/sm90-kernel-notes.md); this measures what the exponentials alone
// and each neighbour cost.
//
// One CTA per SM (all SMs run it; the figures are CTA 0's), 256 threads: warpgroup 0 runs the
// exponential stream, the softmax's shape (per thread 64 values a pass: x * scale - m, exp2, add
// into one of two row sums), timed with clock64 per warp; warpgroup 1 runs the mode's neighbour
// for as long as warpgroup 0 runs.
//
//   gpuattn_mufu_probe [PASSES]      (default 2000 passes of 64 exponentials a thread)
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "cuda/wgmma.cuh"

namespace {

namespace ptx = gpuattn::ptx;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "mufu_probe: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

enum Mode : int {
  kAlone = 0,    // warpgroup 1 idles
  kTwoExp = 1,   // warpgroup 1 runs the same exponential stream
  kRsGemm = 2,   // warpgroup 1: groups of 8 wgmma m64n64k16, A from registers (P V's shape)
  kSsGemm = 3,   // warpgroup 1: groups of 4 wgmma m64n128k16, A and B from smem (S's shape)
  kGemmOnly = 4  // warpgroup 0 idles; warpgroup 1 runs kRsGemm's groups (the tensor rate alone)
};
constexpr int kModes = 5;
constexpr int kSmemBytes = 64 * 1024;

// Per warp of warpgroup 0: cycles of its stream; per CTA: warpgroup 1's GEMM groups issued.
struct Result {
  long long cycles[4];
  long long gemm_groups;
  long long gemm_cycles;
  float sink;
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// 64 values a thread a pass, two rows of 32 as in a 64 x 128 S tile's accumulator: each value
// becomes exp2(x * scale - m), added into its row's sum, and feeds the next pass (so no pass
// can be hoisted); the sums keep it live.
__device__ float exp_stream(int passes, float seed, volatile int* stop) {
  float x[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) x[i] = seed * (1.f + 0.01f * i) - 4.f;
  float sum0 = 0.f, sum1 = 0.f;
  const float scale = 0.125f, m = 3.f;
  for (int it = 0; it < passes; ++it) {
#pragma unroll
    for (int i = 0; i < 64; ++i) {
      x[i] = ex2(fmaf(x[i], scale, -m));
      if ((i >> 1) & 1) {
        sum1 += x[i];
      } else {
        sum0 += x[i];
      }
    }
  }
  if (stop != nullptr) *stop = 1;
  return sum0 + sum1;
}
#endif

__global__ void __launch_bounds__(256, 1) probe(int mode, int passes, Result* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) unsigned char smem[];
  __shared__ int stop;
  const int tid = threadIdx.x, wg = tid / 128, warp = (tid / 32) & 3;
  for (int i = tid; i < kSmemBytes / 4; i += 256) reinterpret_cast<float*>(smem)[i] = 0.001f * i;
  if (tid == 0) stop = 0;
  ptx::fence_proxy_async();
  __syncthreads();
  Result& r = out[blockIdx.x];
  if (wg == 0) {
    if (mode == kGemmOnly) return;
    const long long t0 = clock64();
    const float s = exp_stream(passes, 0.5f + 0.001f * tid, mode == kTwoExp ? nullptr : &stop);
    const long long t1 = clock64();
    if ((tid & 31) == 0) r.cycles[warp] = t1 - t0;
    if (s == 12345.f) r.sink = s;
    return;
  }
  // warpgroup 1
  if (mode == kAlone) return;
  if (mode == kTwoExp) {
    const float s = exp_stream(passes, 0.25f + 0.001f * tid, nullptr);
    if (s == 12345.f) r.sink = s;
    return;
  }
  const auto base = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
  const std::uint64_t a_desc = ptx::smem_desc_sw128(base, 16, 1024);
  const std::uint64_t b_desc = ptx::smem_desc_sw128(base + 32 * 1024, 16, 1024);
  const std::uint64_t v_desc = ptx::smem_desc_sw128(base + 32 * 1024, 128 * 128, 1024);
  std::uint32_t a[8][4];
#pragma unroll
  for (int k = 0; k < 8; ++k)
#pragma unroll
    for (int e = 0; e < 4; ++e) a[k][e] = 0x3c003c00u ^ (tid + k + e);
  float acc64[32], acc128[64];
#pragma unroll
  for (int i = 0; i < 32; ++i) acc64[i] = 0.f;
#pragma unroll
  for (int i = 0; i < 64; ++i) acc128[i] = 0.f;
  long long groups = 0;
  const long long t0 = clock64();
  // kGemmOnly: as many groups as kRsGemm ran beside the stream is not known here; run a fixed
  // count (passes / 4) and report the cycles.
  const long long limit = mode == kGemmOnly ? passes / 4 : (1ll << 40);
  const volatile int* vstop = &stop;
  if (mode == kSsGemm) {
    while (*vstop == 0) {
      ptx::wgmma_fence();
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        ptx::wgmma_ss<__half, 128>(acc128, ptx::desc_advance(a_desc, 32 * k),
                                   ptx::desc_advance(b_desc, 32 * k), 1);
      }
      ptx::wgmma_commit();
      ptx::wgmma_wait<0>();
      ++groups;
    }
  } else {
    while (groups < limit && (mode == kGemmOnly || *vstop == 0)) {
      ptx::wgmma_fence();
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        ptx::wgmma_rs<__half, 64>(acc64, a[k], ptx::desc_advance(v_desc, 2048 * k), 1);
      }
      ptx::wgmma_commit();
      ptx::wgmma_wait<0>();
      ++groups;
    }
  }
  const long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 32; ++i) s += acc64[i];
#pragma unroll
  for (int i = 0; i < 64; ++i) s += acc128[i];
  if (tid == 128) {
    r.gemm_groups = groups;
    r.gemm_cycles = t1 - t0;
  }
  if (s == 12345.f) r.sink = s;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  int passes = 2000;
  if (argc > 1) {
    char* end = nullptr;
    const long v = std::strtol(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || v < 10 || v > 1000000) {
      std::fprintf(stderr, "mufu_probe: PASSES must be an integer in [10, 1000000], not '%s'\n",
                   argv[1]);
      return 2;
    }
    passes = static_cast<int>(v);
  }
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  if (prop.major != 9) {
    std::fprintf(stderr, "mufu_probe: needs an sm_90 GPU (wgmma), not %s (sm_%d%d)\n", prop.name,
                 prop.major, prop.minor);
    return 1;
  }
  check(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes),
        "cudaFuncSetAttribute");
  const int ctas = prop.multiProcessorCount;
  Result* out = nullptr;
  check(cudaMalloc(&out, sizeof(Result) * ctas), "cudaMalloc");
  static const char* const names[kModes] = {
      "exponentials alone (1 warp a sub-partition)", "two warps of exponentials a sub-partition",
      "beside register-A wgmma m64n64k16 x8 groups (P V)",
      "beside smem-A wgmma m64n128k16 x4 groups (S, Q in smem)",
      "register-A wgmma groups alone"};
  std::printf("device: %s, %d SMs; %d passes of 64 exponentials a thread; CTA 0's figures\n",
              prop.name, ctas, passes);
  std::printf(
      "| mode | cycles a MUFU.EX2 a warp (max of 4 warps) | GEMM groups | cycles a GEMM group |\n");
  std::printf("|---|---:|---:|---:|\n");
  for (int mode = 0; mode < kModes; ++mode) {
    Result host{};
    for (int rep = 0; rep < 3; ++rep) {  // the last of 3 launches (the first loads the module)
      check(cudaMemset(out, 0, sizeof(Result) * ctas), "cudaMemset");
      probe<<<ctas, 256, kSmemBytes>>>(mode, passes, out);
      check(cudaGetLastError(), "launch");
      check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    }
    check(cudaMemcpy(&host, out, sizeof(Result), cudaMemcpyDeviceToHost), "cudaMemcpy");
    long long worst = 0;
    for (long long c : host.cycles) worst = c > worst ? c : worst;
    const double per_mufu = static_cast<double>(worst) / (64.0 * passes);
    const double per_group = host.gemm_groups > 0 ? static_cast<double>(host.gemm_cycles) /
                                                        static_cast<double>(host.gemm_groups)
                                                  : 0.0;
    if (mode == kGemmOnly) {
      std::printf("| %s | - | %lld | %.1f |\n", names[mode], host.gemm_groups, per_group);
    } else {
      std::printf("| %s | %.2f | %lld | %.1f |\n", names[mode], per_mufu, host.gemm_groups,
                  per_group);
    }
  }
  check(cudaFree(out), "cudaFree");
  return 0;
}
