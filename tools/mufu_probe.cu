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
// into one of two row sums), timed with clock64 per warp; warpgroup 1 meanwhile runs a fixed
// count of the mode's neighbour work, shorter than the stream, timed the same way. The "alone"
// modes time warpgroup 1's work with warpgroup 0 idle. (A first version had warpgroup 1 poll a
// shared-memory flag until the stream ended: its one LDS waited behind the stream's MUFU.EX2 in
// the MIO queue until the stream was over.)
//
//   gpuattn_mufu_probe [PASSES]      (default 2000 passes of 64 exponentials a thread)
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "cuda/tma.cuh"
#include "cuda/wgmma.cuh"

namespace {

namespace ptx = gpuattn::ptx;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "mufu_probe: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// What warpgroup 1 does while warpgroup 0 runs the exponential stream (or alone: the "alone"
// modes leave warpgroup 0 idle). Warpgroup 1's work is a fixed count, shorter than the stream.
enum Mode : int {
  kAlone = 0,        // warpgroup 1 idles
  kTwoExp = 1,       // warpgroup 1 runs the same exponential stream
  kRsGemm = 2,       // groups of 8 wgmma m64n64k16, A from registers (P V's shape)
  kSsGemm = 3,       // groups of 4 wgmma m64n128k16, A and B from smem (S's shape, Q in smem)
  kBarrier = 4,      // mbarrier try_wait on a completed phase (a full-barrier check)
  kRsGemmAlone = 5,  // as kRsGemm, warpgroup 0 idle
  kSsGemmAlone = 6,  // as kSsGemm, warpgroup 0 idle
  kBarrierAlone = 7  // as kBarrier, warpgroup 0 idle
};
constexpr int kModes = 8;
constexpr int kSmemBytes = 64 * 1024;

// Per warp of warpgroup 0: cycles of its stream; per CTA: warpgroup 1's GEMM groups issued.
struct Result {
  long long cycles[4];
  long long neighbour_count;   // GEMM groups or barrier checks
  long long neighbour_cycles;
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
__device__ float exp_stream(int passes, float seed) {
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
  return sum0 + sum1;
}
#endif

__global__ void __launch_bounds__(256, 1) probe(int mode, int passes, Result* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) unsigned char smem[];
  __shared__ __align__(8) unsigned long long bar;
  const int tid = threadIdx.x, wg = tid / 128, warp = (tid / 32) & 3;
  for (int i = tid; i < kSmemBytes / 4; i += 256) reinterpret_cast<float*>(smem)[i] = 0.001f * i;
  const auto bar_addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(&bar));
  if (tid == 0) {
    ptx::mbarrier_init(bar_addr, 1);
    ptx::fence_mbarrier_init();
  }
  ptx::fence_proxy_async();
  __syncthreads();
  if (tid == 0) ptx::mbarrier_arrive(bar_addr);  // phase 0 completes
  __syncthreads();
  Result& r = out[blockIdx.x];
  const bool alone = mode >= kRsGemmAlone;
  if (wg == 0) {
    if (alone) return;
    const long long t0 = clock64();
    const float s = exp_stream(passes, 0.5f + 0.001f * tid);
    const long long t1 = clock64();
    if ((tid & 31) == 0) r.cycles[warp] = t1 - t0;
    if (s == 12345.f) r.sink = s;
    return;
  }
  // warpgroup 1
  if (mode == kAlone) return;
  if (mode == kTwoExp) {
    const float s = exp_stream(passes, 0.25f + 0.001f * tid);
    if (s == 12345.f) r.sink = s;
    return;
  }
  const int what = alone ? mode - kRsGemmAlone + kRsGemm : mode;
  long long count = 0;
  float s = 0.f;
  long long t0 = 0, t1 = 0;
  if (what == kBarrier) {
    // A full-barrier check as the kernel's step makes it (mbarrier_wait on a landed phase),
    // passes * 4 times, each waited for before the next.
    const int n = passes * 4;
    t0 = clock64();
    for (int i = 0; i < n; ++i) ptx::mbarrier_wait(bar_addr, 0);
    t1 = clock64();
    count = n;
  } else {
    const auto base = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
    const std::uint64_t a_desc = ptx::smem_desc_sw128(base, 16, 1024);
    const std::uint64_t b_desc = ptx::smem_desc_sw128(base + 32 * 1024, 16, 1024);
    const std::uint64_t v_desc = ptx::smem_desc_sw128(base + 32 * 1024, 128 * 128, 1024);
    const int groups = passes / 4;
    if (what == kSsGemm) {
      float acc[64];
#pragma unroll
      for (int i = 0; i < 64; ++i) acc[i] = 0.f;
      t0 = clock64();
      for (int g = 0; g < groups; ++g) {
        ptx::wgmma_fence();
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          ptx::wgmma_ss<__half, 128>(acc, ptx::desc_advance(a_desc, 32 * k),
                                     ptx::desc_advance(b_desc, 32 * k), 1);
        }
        ptx::wgmma_commit();
        ptx::wgmma_wait<0>();
      }
      t1 = clock64();
#pragma unroll
      for (int i = 0; i < 64; ++i) s += acc[i];
    } else {
      std::uint32_t a[8][4];
#pragma unroll
      for (int k = 0; k < 8; ++k)
#pragma unroll
        for (int e = 0; e < 4; ++e) a[k][e] = 0x3c003c00u ^ (tid + k + e);
      float acc[32];
#pragma unroll
      for (int i = 0; i < 32; ++i) acc[i] = 0.f;
      t0 = clock64();
      for (int g = 0; g < groups; ++g) {
        ptx::wgmma_fence();
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          ptx::wgmma_rs<__half, 64>(acc, a[k], ptx::desc_advance(v_desc, 2048 * k), 1);
        }
        ptx::wgmma_commit();
        ptx::wgmma_wait<0>();
      }
      t1 = clock64();
#pragma unroll
      for (int i = 0; i < 32; ++i) s += acc[i];
    }
    count = groups;
  }
  if (tid == 128) {
    r.neighbour_count = count;
    r.neighbour_cycles = t1 - t0;
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
      "exponentials alone (1 warp a sub-partition)",
      "two warps of exponentials a sub-partition",
      "exponentials + register-A wgmma m64n64k16 x8 groups (P V)",
      "exponentials + smem-A wgmma m64n128k16 x4 groups (S, Q in smem)",
      "exponentials + mbarrier checks of a landed phase",
      "register-A wgmma groups alone",
      "smem-A wgmma groups alone",
      "mbarrier checks alone"};
  std::printf("device: %s, %d SMs; %d passes of 64 exponentials a thread; CTA 0's figures\n",
              prop.name, ctas, passes);
  std::printf(
      "| warpgroup 0 / warpgroup 1 | cycles a MUFU.EX2 a warp (max of 4 warps) | warpgroup 1's "
      "GEMM groups or checks | cycles each |\n");
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
    char mufu[32] = "-", each[32] = "-";
    if (worst > 0) std::snprintf(mufu, sizeof(mufu), "%.2f", worst / (64.0 * passes));
    if (host.neighbour_count > 0) {
      std::snprintf(each, sizeof(each), "%.1f",
                    static_cast<double>(host.neighbour_cycles) / host.neighbour_count);
    }
    std::printf("| %s | %s | %lld | %s |\n", names[mode], mufu, host.neighbour_count, each);
  }
  check(cudaFree(out), "cudaFree");
  return 0;
}
