// How fast one warp's softmax exponentials issue on an SM sub-partition, alone and beside the
// other work of the sm_90a forward kernel's step: a second warp's exponentials, or wgmma GEMMs
// from another warpgroup (register-sourced A as in P V, or both operands from shared memory as
// in S = Q K^T with Q in smem). The D64 step of that kernel spends ~1000-1400 cycles in a
// softmax of 64 MUFU.EX2 a warp, against the 512 cycles that 16 exponentials a clock an SM
// would allow (bench/results/sm90-kernel-notes.md); this measures what the exponentials alone
// and each neighbour cost. A last mode runs the stream in half precision (ex2.approx.f16x2 on
// pairs, HFMA2 before and HADD2 sums after): whether a MUFU.EX2.F16 costs less than a MUFU.EX2.
//
// One CTA per SM (all SMs run it; the figures are CTA 0's), 256 threads: warpgroup 0 runs the
// exponential stream, the softmax's shape (per thread 64 values a pass: x * scale - m, exp2, add
// into one of two row sums), timed with clock64 per warp; warpgroup 1 meanwhile runs a fixed
// count of the mode's neighbour work, shorter than the stream, timed the same way. The "alone"
// modes time warpgroup 1's work with warpgroup 0 idle. (A first version had warpgroup 1 poll a
// shared-memory flag that the stream set when done: ptxas hoisted that volatile store above the
// stream's loop, which has no other memory access to order it against, so warpgroup 1 stopped at
// once. Fixed counts need no flag.)
//
//   gpuattn_mufu_probe [PASSES]      (default 2000 passes of 64 exponentials a thread)
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "cuda/ptx.cuh"
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

// What warpgroup 1 does: nothing, the same exponential stream, or a fixed count (shorter than
// the stream) of GEMM groups or barrier checks, beside warpgroup 0's stream or alone (warpgroup 0
// idle). The GEMM groups are the step's: P V as 8 wgmma m64n64k16 with P from registers (as the
// kernel) or from smem, S as 4 wgmma m64n128k16 with Q from registers (as the 2-consumer kernel)
// or from smem.
enum Neighbour : int {
  kNone,
  kExp,
  kPvRegs,
  kPvSmem,
  kSRegs,
  kSSmem,
  kBarrier,
  kQuadMax,
  kLds,
  kRedux,
  kExpF16  // warpgroup 0's stream in half precision (the f32 one's 64 values as 32 pairs)
};
struct ModeDesc {
  Neighbour what;
  bool beside_exp;  // warpgroup 0 runs the stream
  const char* name;
};
constexpr ModeDesc kModeList[] = {
    {kNone, true, "exponentials alone (1 warp a sub-partition)"},
    {kExp, true, "two warps of exponentials a sub-partition"},
    {kPvRegs, true, "exponentials + P V groups, P from registers"},
    {kPvSmem, true, "exponentials + P V groups, P from smem"},
    {kSRegs, true, "exponentials + S groups, Q from registers"},
    {kSSmem, true, "exponentials + S groups, Q from smem"},
    {kBarrier, true, "exponentials + mbarrier checks of a landed phase"},
    {kQuadMax, true, "exponentials + quad maxes (2 dependent SHFL.BFLY + FMNMX, as quad_max)"},
    {kLds, true, "exponentials + dependent shared-memory loads (LDS)"},
    {kRedux, true, "exponentials + warp max reductions (REDUX, integer keys)"},
    {kPvRegs, false, "P V groups, P from registers, alone"},
    {kPvSmem, false, "P V groups, P from smem, alone"},
    {kSRegs, false, "S groups, Q from registers, alone"},
    {kSSmem, false, "S groups, Q from smem, alone"},
    {kBarrier, false, "mbarrier checks alone"},
    {kQuadMax, false, "quad maxes alone"},
    {kLds, false, "dependent shared-memory loads alone"},
    {kRedux, false, "warp max reductions alone"},
    {kExpF16, true, "half-precision exponentials alone (ex2.approx.f16x2: 2 MUFU.EX2.F16 a pair)"},
};
constexpr int kModes = sizeof(kModeList) / sizeof(kModeList[0]);
constexpr int kSmemBytes = 64 * 1024;

// Per warp of warpgroup 0: cycles of its stream; per CTA: warpgroup 1's GEMM groups issued.
struct Result {
  long long cycles[4];
  long long neighbour_count;   // GEMM groups or barrier checks
  long long neighbour_cycles;  // from the first issue to the last group's wait
  long long issue_cycles;      // the GEMM groups' issue alone: fence to the last wgmma issued
  float sink;
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
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
      x[i] = ptx::fast_exp2(fmaf(x[i], scale, -m));
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

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// exp_stream in half precision: the 64 values a thread as 32 f16x2 pairs, each pass x * scale - m
// (HFMA2), exp2 of both halves (fast_exp2_h2), and the pair added into one of two f16x2 row sums.
// The cycles are per exponential (per half), as the f32 stream's.
__device__ float exp_stream_f16(int passes, float seed) {
  __half2 x[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    x[i] = __floats2half2_rn(seed * (1.f + 0.02f * i) - 4.f, seed * (1.01f + 0.02f * i) - 4.f);
  }
  __half2 sum0 = __float2half2_rn(0.f), sum1 = sum0;
  const __half2 scale = __float2half2_rn(0.125f), neg_m = __float2half2_rn(-3.f);
  for (int it = 0; it < passes; ++it) {
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const __half2 arg = __hfma2(x[i], scale, neg_m);
      const std::uint32_t y = ptx::fast_exp2_h2(*reinterpret_cast<const std::uint32_t*>(&arg));
      x[i] = *reinterpret_cast<const __half2*>(&y);
      if (i & 1) {
        sum1 = __hadd2(sum1, x[i]);
      } else {
        sum0 = __hadd2(sum0, x[i]);
      }
    }
  }
  return __low2float(sum0) + __high2float(sum1);
}
#endif

// Warpgroup 1's GEMM groups of kind `what` (see Neighbour): `groups` of them, each issued,
// committed and waited for; `issue` sums each group's cycles from its fence to its last wgmma.
template <Neighbour what>
__device__ float gemm_groups(std::uint32_t base, int groups, long long& total, long long& issue) {
  const std::uint64_t a_desc = ptx::smem_desc_sw128(base, 16, 1024);
  const std::uint64_t b_desc = ptx::smem_desc_sw128(base + 32 * 1024, 16, 1024);
  const std::uint64_t v_desc = ptx::smem_desc_sw128(base + 32 * 1024, 128 * 128, 1024);
  constexpr int kAcc = what == kPvRegs || what == kPvSmem ? 32 : 64;
  std::uint32_t a[8][4];
#pragma unroll
  for (int k = 0; k < 8; ++k)
#pragma unroll
    for (int e = 0; e < 4; ++e) a[k][e] = 0x3c003c00u ^ (threadIdx.x + k + e);
  float acc[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc[i] = 0.f;
  long long in_issue = 0;
  const long long t0 = clock64();
  for (int g = 0; g < groups; ++g) {
    const long long i0 = clock64();
    ptx::wgmma_fence();
    if constexpr (what == kPvRegs) {
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        ptx::wgmma_rs<__half, 64>(acc, a[k], ptx::desc_advance(v_desc, 2048 * k), 1);
      }
    } else if constexpr (what == kPvSmem) {
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        ptx::wgmma_ss<__half, 64>(acc, ptx::desc_advance(a_desc, 32 * (k & 3) + 8192 * (k >> 2)),
                                  ptx::desc_advance(b_desc, 32 * (k & 3) + 8192 * (k >> 2)), 1);
      }
    } else if constexpr (what == kSRegs) {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        ptx::wgmma_rs_kmajor<__half, 128>(acc, a[k], ptx::desc_advance(b_desc, 32 * k), 1);
      }
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        ptx::wgmma_ss<__half, 128>(acc, ptx::desc_advance(a_desc, 32 * k),
                                   ptx::desc_advance(b_desc, 32 * k), 1);
      }
    }
    const long long i1 = clock64();
    ptx::wgmma_commit();
    ptx::wgmma_wait<0>();
    in_issue += i1 - i0;
  }
  total = clock64() - t0;
  issue = in_issue;
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kAcc; ++i) s += acc[i];
  return s;
}

__global__ void __launch_bounds__(256, 1)
    probe(Neighbour what, bool beside_exp, int passes, Result* out) {
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
  if (wg == 0) {
    if (!beside_exp) return;
    const long long t0 = clock64();
    const float s = what == kExpF16 ? exp_stream_f16(passes, 0.5f + 0.001f * tid)
                                    : exp_stream(passes, 0.5f + 0.001f * tid);
    const long long t1 = clock64();
    if ((tid & 31) == 0) r.cycles[warp] = t1 - t0;
    if (s == 12345.f) r.sink = s;
    return;
  }
  // warpgroup 1
  if (what == kNone || what == kExpF16) return;
  if (what == kExp) {
    const float s = exp_stream(passes, 0.25f + 0.001f * tid);
    if (s == 12345.f) r.sink = s;
    return;
  }
  long long count = 0, total = 0, issue = 0;
  float s = 0.f;
  if (what == kBarrier) {
    // A full-barrier check as the kernel's step makes it (mbarrier_wait on a landed phase),
    // passes * 4 times, each waited for before the next.
    const int n = passes * 4;
    const long long t0 = clock64();
    for (int i = 0; i < n; ++i) ptx::mbarrier_wait(bar_addr, 0);
    total = clock64() - t0;
    count = n;
  } else if (what == kQuadMax || what == kLds || what == kRedux) {
    // passes * 4 dependent operations (each one's input is the last one's result), the softmax's
    // row max across a quad (quad_max), a shared-memory load, or a warp-wide REDUX.
    const int n = passes * 4;
    float x = 0.001f * tid;
    unsigned idx = tid & 1023;
    const float* table = reinterpret_cast<const float*>(smem);
    const long long t0 = clock64();
    if (what == kQuadMax) {
      for (int i = 0; i < n; ++i) {
        x = ptx::quad_max(x) * 0.999f;
      }
    } else if (what == kLds) {
      for (int i = 0; i < n; ++i) {
        x += table[idx];
        idx = (idx * 5 + static_cast<unsigned>(x > 1e30f)) & 1023;
      }
    } else {
      for (int i = 0; i < n; ++i) {
        const unsigned k = __reduce_max_sync(0xffffffffu, __float_as_uint(x) >> 1);
        x = __uint_as_float(k) * 0.5f + 0.001f;
      }
    }
    total = clock64() - t0;
    count = n;
    s = x;
  } else {
    const auto base = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
    const int groups = passes / 4;
    switch (what) {
      case kPvRegs: s = gemm_groups<kPvRegs>(base, groups, total, issue); break;
      case kPvSmem: s = gemm_groups<kPvSmem>(base, groups, total, issue); break;
      case kSRegs: s = gemm_groups<kSRegs>(base, groups, total, issue); break;
      default: s = gemm_groups<kSSmem>(base, groups, total, issue); break;
    }
    count = groups;
  }
  if (tid == 128) {
    r.neighbour_count = count;
    r.neighbour_cycles = total;
    r.issue_cycles = issue;
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
  std::printf("device: %s, %d SMs; %d passes of 64 exponentials a thread; CTA 0's figures\n",
              prop.name, ctas, passes);
  std::printf(
      "| warpgroup 0 / warpgroup 1 | cycles a MUFU.EX2 a warp (max of 4 warps) | warpgroup 1's "
      "GEMM groups or checks | cycles each | of which issue |\n");
  std::printf("|---|---:|---:|---:|---:|\n");
  for (int mode = 0; mode < kModes; ++mode) {
    Result host{};
    for (int rep = 0; rep < 3; ++rep) {  // the last of 3 launches (the first loads the module)
      check(cudaMemset(out, 0, sizeof(Result) * ctas), "cudaMemset");
      probe<<<ctas, 256, kSmemBytes>>>(kModeList[mode].what, kModeList[mode].beside_exp, passes,
                                       out);
      check(cudaGetLastError(), "launch");
      check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    }
    check(cudaMemcpy(&host, out, sizeof(Result), cudaMemcpyDeviceToHost), "cudaMemcpy");
    long long worst = 0;
    for (long long c : host.cycles) worst = c > worst ? c : worst;
    char mufu[32] = "-", each[32] = "-", issue[32] = "-";
    if (worst > 0) std::snprintf(mufu, sizeof(mufu), "%.2f", worst / (64.0 * passes));
    if (host.neighbour_count > 0) {
      std::snprintf(each, sizeof(each), "%.1f",
                    static_cast<double>(host.neighbour_cycles) / host.neighbour_count);
      if (host.issue_cycles > 0) {
        std::snprintf(issue, sizeof(issue), "%.1f",
                      static_cast<double>(host.issue_cycles) / host.neighbour_count);
      }
    }
    std::printf("| %s | %s | %lld | %s | %s |\n", kModeList[mode].name, mufu, host.neighbour_count,
                each, issue);
  }
  check(cudaFree(out), "cudaFree");
  return 0;
}
