// The engine's linears at 1-8 rows (decode steps): out[rows, N] = act(x W + bias) (+ residual),
// x optionally layer-normed on the way in. At these rows a linear is a read of W and little else,
// and each layernorm ahead of one was a kernel of its own. Fusion is the point here: the layernorm
// in the prologue, bias, GELU and the residual in the epilogue, and the weights fetched before the
// kernel ahead has finished. The engine uses it where it measured faster than cuBLASLt (one row,
// small W: skinny.h); at 4-8 rows and for large W cuBLASLt's kernels stay ahead (2026-11-29).
//
// Work: a CTA takes 64 columns (8 threads x 8 columns, one 16-byte load each a row) and a chunk
// of W's rows in passes of 256 (32 row lanes x 8 loads a thread, all in flight at once; up to 4
// passes at 1-4 rows, 2 at 5-8, so the grid stays within one wave); int8 W goes through the tensor
// cores in 128-column slices (kColsQ8). Chunks of the same columns are split-K partners. Up to 8 of
// them run as one thread-block cluster (sm_90+), sized so that every cluster of the grid fits at
// once, and rank 0 adds the others' fp32 partial sums from their shared memory, in rank order. More
// (or no clusters, or none that fit) meet in a workspace, where the last CTA of the column slice to
// finish (an atomic count) adds them in split order and resets the count for the next call. Both
// orders are fixed: deterministic.
//
// The first pass's weight loads are written before ptx::griddep_wait(): no kernel writes W, so
// under programmatic dependent launch they may overlap the kernel ahead. Everything that kernel
// may write (x, the residual, the workspace, the counts) is touched only after the wait. ptxas
// schedules the wait freely against these loads: in the sm_90a SASS (2026-11-29) all 8 are ahead
// of it at 1-2 rows, 2-7 at 4-8 rows.
// Measured with tools/gemv_probe.cu (H200, s34): every further pass a CTA makes costs ~3.5 us
// (each is a round trip behind the queue the first one built), and the rows of a large W are read
// fastest in one pass; at 1.5B's sizes the kernel loses to cuBLASLt (skinny.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/env_switch.h"
#include "cuda/fwd_sm80.h"
#include "cuda/half_convert.cuh"
#include "cuda/pdl.h"
#include "cuda/ptx.cuh"
#include "engine/cuda/skinny.h"
#include "engine/q8_weights.h"
#include "gpuattn/gpt2.h"

namespace gpuattn::engine::cuda {
namespace {

using cvt::from_f;
using cvt::to_f;

constexpr int kThreads = 256;
constexpr int kCols = 64;                  // columns a CTA
constexpr int kRowLanes = kThreads / 8;    // 32
constexpr int kLoads = 8;                  // weight vectors a thread
constexpr int kPass = kRowLanes * kLoads;  // rows of W a pass: one load a vector, all in flight
constexpr int kWarps = kThreads / 32;
constexpr int kMaxCluster = 8;  // split-K partners reduced in a cluster, at most
static_assert(kPass == kThreads, "a thread fills one row of each pass");
// Passes a CTA makes at most: the chunk (kPass rows each) staged in shared memory as fp32, 16 KB.
template <int M>
__host__ __device__ constexpr int max_passes() {
  return M <= 4 ? 4 : 2;
}
// Weight-only int8 W (Q8, LinearWeights::int8) on the tensor cores: y^T = W^T x^T as
// mma.m16n8k16, W^T's 16-column tiles as the A operand (converted in registers), x's rows (up to
// 8) as B. W is stored in fragment order (shuffle_q8_mma): a lane's 16-byte load is its A fragments
// of two k-steps (32 rows). A CTA takes 128 columns, a warp each 16-column tile, and a chunk of at
// most 256 rows (8 loads a lane in flight, one pass; 4 groups of kGpt2Q8Group, each group's sums
// scaled once). A weight costs one instruction to convert (f16; 2.5 for bf16) and an eighth of an
// mma, against 3 + rows for the CUDA-core form it replaces (s35: 1.5B's int8 linears ran 1.3-2.2 us
// above a plain read of their bytes, tools/gemv_probe.cu).
constexpr int kColsQ8 = 128;
constexpr int kLoadsQ8 = 8;
constexpr int kPassQ8 = kLoadsQ8 * 32;  // rows: two 16-row k-steps a load
constexpr int kGroup = kGpt2Q8Group;
constexpr int kGroupsQ8 = kPassQ8 / kGroup;
static_assert(kColsQ8 == 16 * kWarps && kPassQ8 == kThreads, "a warp a tile; xs one row a thread");

// 8 int8 weights (two 32-bit words) to float: each byte, biased by 128, into a float's low
// mantissa bits (2^23 + b) and the bias taken off, exactly; PRMT and FADD, no I2F.
__device__ __forceinline__ void q8_to_f(const uint2& v, float (&f)[8]) {
  const std::uint32_t w[2] = {v.x ^ 0x80808080u, v.y ^ 0x80808080u};
#pragma unroll
  for (int h = 0; h < 2; ++h) {
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      f[4 * h + b] = __uint_as_float(__byte_perm(w[h], 0x4B000000u, 0x7440u + b)) - 8388736.0f;
    }
  }
}

// 4 int8 weights (a 32-bit word, low byte first) as two T pairs for an mma operand: bytes 0-1 in
// lo, 2-3 in hi, exactly. f16: the biased byte in a half's low mantissa bits (1024 + b, PRMT) and
// the bias taken off in pairs (1152, HSUB2). bf16 has too few mantissa bits for that: through
// floats (q8_to_f's trick), then their upper halves paired (exact: |q| <= 128 needs 8 bits).
template <typename T>
__device__ __forceinline__ void q8_to_pairs(std::uint32_t w, std::uint32_t& lo, std::uint32_t& hi);
template <>
__device__ __forceinline__ void q8_to_pairs<__half>(std::uint32_t w, std::uint32_t& lo,
                                                    std::uint32_t& hi) {
  const std::uint32_t u = w ^ 0x80808080u;
  const std::uint32_t a = __byte_perm(u, 0x64646464u, 0x4140u);
  const std::uint32_t b = __byte_perm(u, 0x64646464u, 0x4342u);
  asm("sub.f16x2 %0, %1, %2;" : "=r"(lo) : "r"(a), "r"(0x64806480u));
  asm("sub.f16x2 %0, %1, %2;" : "=r"(hi) : "r"(b), "r"(0x64806480u));
}
template <>
__device__ __forceinline__ void q8_to_pairs<__nv_bfloat16>(std::uint32_t w, std::uint32_t& lo,
                                                           std::uint32_t& hi) {
  const std::uint32_t u = w ^ 0x80808080u;
  std::uint32_t f[4];
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    f[b] = __float_as_uint(__uint_as_float(__byte_perm(u, 0x4B000000u, 0x7440u + b)) - 8388736.0f);
  }
  lo = __byte_perm(f[0], f[1], 0x7632u);
  hi = __byte_perm(f[2], f[3], 0x7632u);
}

struct Params {
  const void* x;
  const void* ln_w;  // null: no layernorm
  const void* ln_b;
  float eps;
  const void* W;
  const float* scales;   // Q8: W's scales [K / kGroup, N] (W in shuffle_q8_mma's order)
  const void* bias;      // may be null
  const void* residual;  // may be null; may alias out
  void* out;
  int rows, K, N, chunk, splits;
  bool gelu;
  bool cluster;          // the splits of a slice are one cluster: partials meet in shared memory
  float* partials;       // [splits][rows][N]
  std::int32_t* counts;  // one per column slice, zero between calls
  const std::int32_t* kv_slots;  // non-null: out is qkv, its k and v also into the caches
  void* k_pool;
  void* v_pool;
  int kv_c;      // C = N / 3
  int staged;    // the bits below, what the launch found aligned
  bool f32_out;  // out is fp32 with row pitch ld (no bias, GELU, residual or scatter)
  int ld;
  bool kv_e4m3;  // with kv_slots: the caches hold FP8 E4M3 (KvCache::e4m3)
};

// Params::staged, each where its pointers are 16-byte aligned: the layernorm weights are loaded
// ahead of the PDL wait into registers, 8 a thread (K up to 8 x kThreads); the bias is staged by
// cp.async ahead of the wait (skinny_kernel too, with N a multiple of 8); x is read 16 bytes a
// thread. q8_narrow_kernel takes all three, skinny_kernel the bias only.
constexpr int kLnRegs = 1, kStagedBias = 2, kVecX = 4;

// Element j (0-7, known at compile time once unrolled) of the 8 T packed in v, as a float: from
// the registers, where indexing the uint4 through a T pointer put it on the stack (bf16).
template <typename T>
__device__ __forceinline__ float packed_f(const uint4& v, int j) {
  const std::uint32_t w = j < 2 ? v.x : j < 4 ? v.y : j < 6 ? v.z : v.w;
  const auto bits = static_cast<unsigned short>(j % 2 != 0 ? w >> 16 : w & 0xffffu);
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(__ushort_as_half(bits));
  } else {
    return __bfloat162float(__ushort_as_bfloat16(bits));
  }
}

__device__ __forceinline__ float gelu_tanh(float v) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
}

// Sums v[0..M) over the CTA; every thread gets the totals.
template <int M>
__device__ __forceinline__ void cta_sums(float (&v)[M], float (*scratch)[M]) {
#pragma unroll
  for (int m = 0; m < M; ++m) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v[m] += __shfl_xor_sync(0xffffffffu, v[m], o);
  }
  __syncthreads();  // scratch may still be read by the previous sum
  if (threadIdx.x % 32 == 0) {
#pragma unroll
    for (int m = 0; m < M; ++m) scratch[threadIdx.x / 32][m] = v[m];
  }
  __syncthreads();
#pragma unroll
  for (int m = 0; m < M; ++m) {
    v[m] = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) v[m] += scratch[w][m];
  }
}

// Element (m, n) of the output from its sum v: bias, GELU, the residual, and with kv_slots a key
// or a value into its cache slot too; the bias and residual values given (read only where p has
// them), finish_out reads the residual itself.
template <typename T>
__device__ __forceinline__ void finish_with(const Params& p, float v, int m, int n, float bias,
                                            float residual) {
  if (p.f32_out) {  // the output head's logits
    static_cast<float*>(p.out)[static_cast<std::int64_t>(m) * p.ld + n] = v;
    return;
  }
  if (p.bias != nullptr) v += bias;  // (not + 0: a -0 sum stays -0, as without a bias)
  if (p.gelu) v = gelu_tanh(v);
  const std::int64_t o = static_cast<std::int64_t>(m) * p.N + n;
  if (p.residual != nullptr) v += residual;
  const T h = from_f<T>(v);
  static_cast<T*>(p.out)[o] = h;
  if (p.kv_slots != nullptr && n >= p.kv_c) {  // a key or a value: into its cache slot too
    const bool key = n < 2 * p.kv_c;
    const std::int64_t slot =
        static_cast<std::int64_t>(p.kv_slots[m]) * p.kv_c + n - (key ? 1 : 2) * p.kv_c;
    if (p.kv_e4m3) {  // the 16-bit value rounded as the quantizing scatter rounds it
      static_cast<__nv_fp8_storage_t*>(key ? p.k_pool : p.v_pool)[slot] =
          __nv_cvt_float_to_fp8(to_f(h), __NV_SATFINITE, __NV_E4M3);
    } else {
      static_cast<T*>(key ? p.k_pool : p.v_pool)[slot] = h;
    }
  }
}

// Column n's bias (0 without one): element i of its shared-memory copy where `staged`, else from
// p.bias.
template <typename T>
__device__ __forceinline__ float bias_of(const Params& p, int n, bool staged, const T* bias_s,
                                         int i) {
  return p.bias == nullptr ? 0.0f
         : staged          ? to_f(bias_s[i])
                           : to_f(static_cast<const T*>(p.bias)[n]);
}

template <typename T>
__device__ __forceinline__ void finish_out(const Params& p, float v, int m, int n, float bias) {
  const std::int64_t o = static_cast<std::int64_t>(m) * p.N + n;
  finish_with<T>(p, v, m, n, bias,
                 p.residual != nullptr ? to_f(static_cast<const T*>(p.residual)[o]) : 0.0f);
}

// M: the rows rounded up to a power of two (rows p.rows..M-1 are zeros). Q8: W is int8 with
// scales (p.scales), T the activations' type.
template <typename T, int M, bool Q8>
__global__ void __launch_bounds__(kThreads, M == 1   ? 4
                                            : M == 2 ? 3
                                                     : 2)
    skinny_kernel(const __grid_constant__ Params p) {
  // xs rows a thread fills (tid + f * kThreads), and the rows of W a pass covers.
  constexpr int kPasses = Q8 ? kPassQ8 / kThreads : max_passes<M>();
  constexpr int kRowsPass = Q8 ? kPassQ8 : kPass;
  constexpr int kC = Q8 ? kColsQ8 : kCols;  // columns a CTA
  constexpr int kSeg = kC / 8;              // threads a row segment (one vector each)
  constexpr int kLanes = kThreads / kSeg;   // row lanes
  __shared__ float xs[kPasses * kPass][M];  // this chunk of x (normed), fp32, rows of M
  __shared__ float red[Q8 ? 1 : kWarps][M][kC];
  // This CTA's partial sums, read by its cluster's rank 0. Q8: red itself (a thread moves each of
  // its elements onto itself).
  __shared__ float part_own[Q8 ? 1 : M][kC];
  float(*const part)[kC] = Q8 ? red[0] : part_own;
  // Q8: the chunk's weights land in shared memory (cp.async), not registers. From registers
  // ptxas issued none of the 8 loads ahead of the PDL wait at 8 rows (at 1-4 rows all, unless
  // predicated), so such a kernel fetched its weights only after the kernel ahead had finished;
  // cp.async can be predicated on the chunk (a short chunk reads no more than its rows) and
  // leaves the registers free.
  constexpr bool kStage = Q8;
  __shared__ __align__(16) uint4 stage[kStage ? kLoadsQ8 * kThreads : 1];
  __shared__ float scratch[kWarps][M];
  __shared__ int last_s;
  __shared__ __align__(16) T bias_s[kC];  // with p.staged & kStagedBias

  const int tid = threadIdx.x;
  const int cv = tid % kSeg, lane_k = tid / kSeg;
  const int slice = blockIdx.x, split = blockIdx.y;
  const int k0 = split * p.chunk;
  const int count = min(p.K, k0 + p.chunk) - k0;  // >= 1
  const int passes = (count + kRowsPass - 1) / kRowsPass;
  // This thread's 8 columns; past N (the last slice) it loads the last vector and drops it.
  const int col = min(slice * kC + cv * 8, p.N - 8);
  const T* W = static_cast<const T*>(p.W);
  uint4 w[Q8 ? 1 : kLoads];
  // Q8: this warp's 16-column tile (past the last, the last: its sums are dropped).
  const int warp = tid / 32, lane = tid % 32, qg = lane / 4, qt = lane % 4;  // Q8's fragments
  const int tile = min(slice * (kColsQ8 / 16) + warp, (p.N + 15) / 16 - 1);
  const auto load_pass = [&](int pass) {
    if constexpr (Q8) {
      // Load i: k-steps 2i and 2i + 1 of the chunk (whole groups: count a multiple of 64); past a
      // short chunk none (zeros, nothing read). In the sm_90a SASS all 8 LDGSTS come ahead of the
      // PDL wait at every row count (2026-11-29).
      const auto* Wt = static_cast<const uint4*>(p.W);
      const std::int64_t base = static_cast<std::int64_t>(tile) * (p.K / 32) + k0 / 32;
#pragma unroll
      for (int i = 0; i < kLoadsQ8; ++i) {
        const bool in = 32 * i < count;  // else a valid address (load 0's), nothing read
        ptx::cp_async_16(ptx::smem_addr(&stage[i * kThreads + tid]),
                         Wt + (base + (in ? i : 0)) * 32 + lane, in);
      }
      ptx::cp_async_commit();
    } else {
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        const int k = k0 + min(pass * kPass + lane_k + i * kLanes, count - 1);
        w[i] = ptx::ld_nc_v4(W + static_cast<std::int64_t>(k) * p.N + col);
      }
    }
  };

  // What no kernel writes first: the first pass's weight vectors and the layernorm weights of this
  // thread's chunk rows. Volatile asm keeps them ahead of the wait (a plain __ldg was moved below).
  if constexpr (!Q8) {
    // The later passes' weights into L2 ahead of the wait, and at 4-8 rows the first pass's too:
    // ptxas sinks register loads below the wait on its own (at 4 rows 2-4 of the first pass's 8
    // stay ahead, scripts/pdl-loads.sh), and those would leave for HBM only once the kernel ahead
    // had finished. At 1-2 rows all 8 stay ahead, but only with these prefetches ahead of them:
    // after them, ptxas sank 5-7 of the 8.
#pragma unroll
    for (int pass = M <= 2 ? 1 : 0; pass < max_passes<M>(); ++pass) {
      // A row's slice is 128 bytes, on one or two lines: its first and last vectors' threads.
      if (pass < passes && (cv == 0 || cv == kSeg - 1)) {
#pragma unroll
        for (int i = 0; i < kLoads; ++i) {
          const int k = k0 + min(pass * kPass + lane_k + i * kLanes, count - 1);
          ptx::prefetch_l2(W + static_cast<std::int64_t>(k) * p.N + col);
        }
      }
    }
  }
  load_pass(0);
  const bool ln = p.ln_w != nullptr;
  // This thread's rows of x: k0 + tid + f * kPass, the chunk rows it fills xs with (when inside
  // the chunk), and the first elements the layernorm's walk over the row gives it (when < K); any
  // row in [0, K) for the others.
  int kx[kPasses];
  float lw[kPasses], lb[kPasses];
#pragma unroll
  for (int f = 0; f < kPasses; ++f) {
    kx[f] = (k0 + tid + f * kPass) % p.K;
    lw[f] = ln ? to_f(static_cast<const T*>(p.ln_w)[kx[f]]) : 0.0f;
    lb[f] = ln ? to_f(static_cast<const T*>(p.ln_b)[kx[f]]) : 0.0f;
  }
  // The slice's biases (past N zero-filled, N a multiple of 8) by cp.async, a group of their own
  // after Q8's stage (its wait<0> covers both): the epilogue read them from HBM after the wait (the
  // narrow kernel's s39 change). Every CTA stages them; only those that finish read them. Here,
  // last: issued ahead of load_pass(0), they made ptxas sink 4-5 of the dense kernel's 8 weight
  // loads below the wait at one row (scripts/pdl-loads.sh).
  const bool staged_bias = (p.staged & kStagedBias) != 0;
  if (staged_bias && tid < kC / 8) {
    const int n = slice * kC + 8 * tid;
    const T* b = static_cast<const T*>(p.bias);
    ptx::cp_async_16(ptx::smem_addr(&bias_s[8 * tid]), n < p.N ? b + n : b, n < p.N);
  }
  if (staged_bias) ptx::cp_async_commit();
  ptx::griddep_wait();
  ptx::griddep_launch_dependents();
  // Q8: the scales of this lane's two columns (tile rows qg and qg + 8) for each group of the
  // chunk; after the wait, where they let two to three more weight loads come ahead of it.
  float s_lo[Q8 ? kGroupsQ8 : 1], s_hi[Q8 ? kGroupsQ8 : 1];
  if constexpr (Q8) {
#pragma unroll
    for (int q = 0; q < kGroupsQ8; ++q) {
      const int kg = min(k0 / kGroup + q, p.K / kGroup - 1), n = tile * 16 + qg;
      s_lo[q] = n < p.N ? ptx::ld_nc_f32(p.scales + static_cast<std::int64_t>(kg) * p.N + n) : 0.0f;
      s_hi[q] = n + 8 < p.N ? ptx::ld_nc_f32(p.scales + static_cast<std::int64_t>(kg) * p.N + n + 8)
                            : 0.0f;
    }
  }

  // x[m][kx[f]] for each row (rows past p.rows read row 0 and are zeroed below): one batch.
  const T* x = static_cast<const T*>(p.x);
  float xr[kPasses][M];
#pragma unroll
  for (int f = 0; f < kPasses; ++f) {
#pragma unroll
    for (int m = 0; m < M; ++m) {
      xr[f][m] = to_f(x[static_cast<std::int64_t>(m < p.rows ? m : 0) * p.K + kx[f]]);
    }
  }
  if (ln) {
    // Mean, then the variance about it, over the whole of each row: the CTA's threads walk the row
    // from k0 + tid on (mod K), so a thread's first kPasses elements are the xr it already has.
    float s[M], q[M];
#pragma unroll
    for (int m = 0; m < M; ++m) {
      s[m] = 0.0f;
#pragma unroll
      for (int f = 0; f < kPasses; ++f) s[m] += tid + f * kPass < p.K ? xr[f][m] : 0.0f;
    }
#pragma unroll 4
    for (int t = tid + kPasses * kPass; t < p.K; t += kThreads) {
      const int k = k0 + t < p.K ? k0 + t : k0 + t - p.K;
#pragma unroll
      for (int m = 0; m < M; ++m)
        s[m] += to_f(x[static_cast<std::int64_t>(m < p.rows ? m : 0) * p.K + k]);
    }
    cta_sums<M>(s, scratch);
#pragma unroll
    for (int m = 0; m < M; ++m) {
      s[m] /= static_cast<float>(p.K);
      q[m] = 0.0f;
#pragma unroll
      for (int f = 0; f < kPasses; ++f) {
        const float d = xr[f][m] - s[m];
        q[m] += tid + f * kPass < p.K ? d * d : 0.0f;
      }
    }
#pragma unroll 4
    for (int t = tid + kPasses * kPass; t < p.K; t += kThreads) {
      const int k = k0 + t < p.K ? k0 + t : k0 + t - p.K;
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const float d = to_f(x[static_cast<std::int64_t>(m < p.rows ? m : 0) * p.K + k]) - s[m];
        q[m] += d * d;
      }
    }
    cta_sums<M>(q, scratch);
#pragma unroll
    for (int m = 0; m < M; ++m) {
      // Rounded to T, as the layernorm kernel's output the unfused path reads.
      const float rstd = rsqrtf(q[m] / static_cast<float>(p.K) + p.eps);
#pragma unroll
      for (int f = 0; f < kPasses; ++f) {
        xr[f][m] = to_f(from_f<T>((xr[f][m] - s[m]) * rstd * lw[f] + lb[f]));
      }
    }
  }
#pragma unroll
  for (int f = 0; f < kPasses; ++f) {
    const int r = tid + f * kPass;
#pragma unroll
    for (int m = 0; m < M; ++m) xs[r][m] = m < p.rows && r < count ? xr[f][m] : 0.0f;
  }
  __syncthreads();

  if constexpr (Q8) {
    // A k-step: A from this lane's bytes (tile rows qg, qg + 8 x the step's rows 2qt, 2qt + 1,
    // 2qt + 8, 2qt + 9), B = x row qg (zeros at qg >= M) at those rows, D (fp32) = tile rows qg,
    // qg + 8 x x rows 2qt, 2qt + 1. A group's 4 steps are summed, then scaled by their columns'
    // scales.
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    // The stage: this thread's own copies, so its own wait is all it needs (no barrier).
    ptx::cp_async_wait<0>();
    asm volatile("" ::: "memory");  // the stage's reads stay below the wait (no barrier follows)
#pragma unroll
    for (int q = 0; q < kGroupsQ8; ++q) {
      if (q * kGroup < count) {  // whole groups; the same for every lane (mma.sync)
        float pa[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int step = 4 * q + j;
          const uint4 v = stage[step / 2 * kThreads + tid];
          std::uint32_t a[4];
          q8_to_pairs<T>(step % 2 ? v.z : v.x, a[0], a[1]);
          q8_to_pairs<T>(step % 2 ? v.w : v.y, a[2], a[3]);
          std::uint32_t b0 = 0u, b1 = 0u;
          if (qg < M) {
            const int r = 16 * step + 2 * qt;
            b0 = ptx::pack2<T>(xs[r][qg % M], xs[r + 1][qg % M]);
            b1 = ptx::pack2<T>(xs[r + 8][qg % M], xs[r + 9][qg % M]);
          }
          ptx::mma_16816<T>(pa, a, b0, b1);
        }
        acc[0] = fmaf(pa[0], s_lo[q], acc[0]);
        acc[1] = fmaf(pa[1], s_lo[q], acc[1]);
        acc[2] = fmaf(pa[2], s_hi[q], acc[2]);
        acc[3] = fmaf(pa[3], s_hi[q], acc[3]);
      }
    }
    // Each warp owns its 16 columns: no sum across warps.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = 2 * qt + h;
      if (m < M) {
        red[0][m % M][warp * 16 + qg] = acc[h];
        red[0][m % M][warp * 16 + qg + 8] = acc[2 + h];
      }
    }
  } else {
    float acc[M][8];
#pragma unroll
    for (int m = 0; m < M; ++m) {
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[m][j] = 0.0f;
    }
    for (int pass = 0; pass < passes; ++pass) {
      if (pass > 0) load_pass(pass);
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        const int r = pass * kPass + lane_k + i * kLanes;
        if (r < count) {
          const T* h = reinterpret_cast<const T*>(&w[i]);
          float wf[8];
#pragma unroll
          for (int j = 0; j < 8; ++j) wf[j] = to_f(h[j]);
#pragma unroll
          for (int m = 0; m < M; ++m) {
            const float xv = xs[r][m];
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[m][j] = fmaf(xv, wf[j], acc[m][j]);
          }
        }
      }
    }
    // The 4 row lanes of a warp (lane bits 3-4), then the warps through shared memory.
#pragma unroll
    for (int m = 0; m < M; ++m) {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
#pragma unroll
        for (int o = kSeg; o < 32; o <<= 1) {
          acc[m][j] += __shfl_xor_sync(0xffffffffu, acc[m][j], o);
        }
      }
    }
    if (tid % 32 < kSeg) {
#pragma unroll
      for (int m = 0; m < M; ++m) {
#pragma unroll
        for (int j = 0; j < 8; ++j) red[tid / 32][m][cv * 8 + j] = acc[m][j];
      }
    }
  }
  if constexpr (!Q8) {
    if (staged_bias) ptx::cp_async_wait<0>();  // (Q8's wait for its stage covers the biases)
  }
  __syncthreads();  // red, and bias_s for every thread

  const auto finish = [&](float v, int m, int n) {
    finish_out<T>(p, v, m, n, bias_of<T>(p, n, staged_bias, bias_s, n - slice * kC));
  };
  const int n_base = slice * kC;
  for (int e = tid; e < p.rows * kC; e += kThreads) {
    const int m = e / kC, c = e % kC, n = n_base + c;
    float v = 0.0f;
#pragma unroll
    for (int wi = 0; wi < (Q8 ? 1 : kWarps); ++wi) v += red[wi][m][c];
    if (p.splits == 1) {
      if (n < p.N) finish(v, m, n);
    } else if (p.cluster) {
      part[m][c] = v;
    } else if (n < p.N) {
      p.partials[(static_cast<std::int64_t>(split) * p.rows + m) * p.N + n] = v;
    }
  }
  if (p.splits == 1) return;

  if (p.cluster) {
    // The slice's splits are one cluster (ranks in split order): rank 0 adds the others' partials
    // from their shared memory, in rank order (deterministic); nobody leaves before it has read.
    ptx::cluster_sync();
    if (ptx::cluster_ctarank() == 0) {
      for (int e = tid; e < p.rows * kC; e += kThreads) {
        const int m = e / kC, c = e % kC, n = n_base + c;
        if (n >= p.N) continue;
        float v = 0.0f;
        for (int r = 0; r < p.splits; ++r) v += ptx::ld_shared_cluster_f32(&part[m][c], r);
        finish(v, m, n);
      }
    }
    ptx::cluster_sync();
    return;
  }

  __threadfence();  // the partials, before the count says they are there
  __syncthreads();
  if (tid == 0) last_s = atomicAdd(&p.counts[slice], 1) == p.splits - 1;
  __syncthreads();
  if (!last_s) return;
  __threadfence();
  for (int e = tid; e < p.rows * kC; e += kThreads) {
    const int m = e / kC, c = e % kC, n = n_base + c;
    if (n >= p.N) continue;
    const float* src = p.partials + static_cast<std::int64_t>(m) * p.N + n;
    const std::int64_t step = static_cast<std::int64_t>(p.rows) * p.N;
    float v[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    int s = 0;
    for (; s + 8 <= p.splits; s += 8) {
#pragma unroll
      for (int u = 0; u < 8; ++u) v[u] += __ldcg(src + (s + u) * step);
    }
    for (; s < p.splits; ++s) v[0] += __ldcg(src + s * step);
    finish(((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])), m, n);
  }
  if (tid == 0) p.counts[slice] = 0;  // for the next call (which waits for this one's end)
}

// The prologue of a 16-column tile kernel (q8_narrow_kernel, q4_kernel) after its layernorm
// weights' loads: what no kernel writes, all asked for ahead of the PDL wait so that no read of
// weights is left on the chain after it (s38's trace: each int8 linear ~4 us beyond its bytes; a
// bias or layernorm weight read after the wait is a trip to HBM, the step's weights having cycled
// the L2). Group 0: the tile's 16 biases (with kStagedBias; columns past N zero-filled, N a
// multiple of 8); group 1: its `vecs` 16-byte vectors of W (one run in the fragment order) and its
// scales (row group kg's 16 columns, 4 x 16 bytes). Then the wait and the trigger. (The layernorm
// weights stay in the kernels: loaded here and returned, ptxas kept them on the stack.)
template <typename T>
__device__ __forceinline__ void stage_tile(const Params& p, int tile, int vecs, uint4* stage,
                                           float* sc, T* bias_s) {
  const int tid = threadIdx.x;
  if ((p.staged & kStagedBias) != 0 && tid < 2) {
    const int n = tile * 16 + 8 * tid;
    const T* b = static_cast<const T*>(p.bias);
    ptx::cp_async_16(ptx::smem_addr(&bias_s[8 * tid]), n < p.N ? b + n : b, n < p.N);
  }
  ptx::cp_async_commit();
  const auto* Wt = static_cast<const uint4*>(p.W) + static_cast<std::int64_t>(tile) * vecs;
  for (int i = tid; i < vecs; i += kThreads) {
    ptx::cp_async_16(ptx::smem_addr(&stage[i]), Wt + i, true);
  }
  for (int i = tid; i < p.K / kGroup * 4; i += kThreads) {
    const int kg = i / 4, n = tile * 16 + 4 * (i % 4);
    const bool in = n < p.N;
    ptx::cp_async_16(ptx::smem_addr(&sc[4 * i]),
                     in ? p.scales + static_cast<std::int64_t>(kg) * p.N + n : p.scales, in);
  }
  ptx::cp_async_commit();
  ptx::griddep_wait();
  ptx::griddep_launch_dependents();
}

// Int8 W at one row, the whole of K a CTA (the default; GPUATTN_SKINNY_Q8_NARROW=0 turns it off): a
// CTA takes one 16-column tile, whose weights shuffle_q8_mma's order keeps in one run of K x 16
// bytes, and stages all of them and their scales in shared memory by cp.async ahead of the PDL
// wait; its 8 warps take every 8th group of 64 rows and meet in shared memory. No split-K partners,
// so no cluster and no workspace: s37's trace had each of 1.5B's int8 linears adding ~5 us to a
// step beyond its bytes at ~4.5 TB/s, and ncu had the 91-CTA attn proj (clusters of 7) active on
// its SMs for half its 8 us. Shared memory: K x 16 (W) + K (scales: 16 floats a 64-row group) +
// 2K (x) bytes.
static_assert(kGroup == 64, "q8_narrow_kernel: a group is 4 k-steps, its scales 64 bytes a tile");
template <typename T>
__global__ void __launch_bounds__(kThreads) q8_narrow_kernel(const __grid_constant__ Params p) {
  extern __shared__ __align__(16) unsigned char dyn[];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, qg = lane / 4, qt = lane % 4;
  const int tile = blockIdx.x;
  const int units = p.K / 32, groups = p.K / kGroup;  // 512-byte units: two k-steps of the tile
  uint4* const stage = reinterpret_cast<uint4*>(dyn);
  float* const sc = reinterpret_cast<float*>(dyn + static_cast<std::size_t>(units) * 512);
  T* const xs = reinterpret_cast<T*>(sc + groups * 16);
  __shared__ float red[kWarps][16];
  __shared__ float scratch[kWarps][1];
  __shared__ __align__(16) T bias_s[16];  // with p.staged & kStagedBias

  // Everything ahead of the wait (stage_tile). The layernorm's weights go to registers, not
  // shared memory: with 4K bytes more a CTA, 3 of 1.5B's c_fc CTAs and the next kernel's 122 KB
  // one no longer fit an SM together.
  const bool ln = p.ln_w != nullptr;
  const bool ln_regs = ln && (p.staged & kLnRegs) != 0;
  // ln_w and ln_b at 8 * tid (volatile loads: ptxas keeps them ahead of the wait).
  uint4 lwv = make_uint4(0u, 0u, 0u, 0u), lbv = lwv;
  if (ln_regs && tid < p.K / 8) {
    lwv = ptx::ld_nc_v4(static_cast<const uint4*>(p.ln_w) + tid);
    lbv = ptx::ld_nc_v4(static_cast<const uint4*>(p.ln_b) + tid);
  }
  stage_tile<T>(p, tile, units * 32, stage, sc, bias_s);

  // The residual (an activation: read after the wait) asked for now, used at the end.
  const int out_n = tile * 16 + tid;
  float res = 0.0f;
  if (tid < 16 && p.residual != nullptr && out_n < p.N) {
    res = to_f(static_cast<const T*>(p.residual)[out_n]);
  }

  // x's row (layer-normed when ln_w) into xs as T: the layernorm's output rounded to T, as the
  // unfused path reads it.
  const T* x = static_cast<const T*>(p.x);
  float sum[1] = {0.0f};
  if ((p.staged & kVecX) != 0) {  // one 16-byte load a thread up to K 2048: one L2 trip
#pragma unroll 4
    for (int i = tid; i < p.K / 8; i += kThreads) {
      const uint4 v = reinterpret_cast<const uint4*>(x)[i];
      *reinterpret_cast<uint4*>(xs + 8 * i) = v;
#pragma unroll
      for (int j = 0; j < 8; ++j) sum[0] += packed_f<T>(v, j);
    }
  } else {
    for (int k = tid; k < p.K; k += kThreads) {
      const T v = x[k];
      xs[k] = v;
      sum[0] += to_f(v);
    }
  }
  if (ln) {
    cta_sums<1>(sum, scratch);
    const float mean = sum[0] / static_cast<float>(p.K);
    float sq[1] = {0.0f};
    for (int k = tid; k < p.K; k += kThreads) {
      const float d = to_f(xs[k]) - mean;
      sq[0] += d * d;
    }
    cta_sums<1>(sq, scratch);  // (its barriers: every thread's xs is written)
    const float rstd = rsqrtf(sq[0] / static_cast<float>(p.K) + p.eps);
    if (ln_regs) {  // this thread's 8 elements
      if (tid < p.K / 8) {
        T* e = xs + 8 * tid;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          e[j] = from_f<T>((to_f(e[j]) - mean) * rstd * packed_f<T>(lwv, j) + packed_f<T>(lbv, j));
        }
      }
    } else {
      const T* lw = static_cast<const T*>(p.ln_w);
      const T* lb = static_cast<const T*>(p.ln_b);
      for (int k = tid; k < p.K; k += kThreads) {
        xs[k] = from_f<T>((to_f(xs[k]) - mean) * rstd * to_f(lw[k]) + to_f(lb[k]));
      }
    }
  }
  ptx::cp_async_wait<0>();
  __syncthreads();  // the stage (every thread's copies) and xs

  // A k-step as skinny_kernel's: A from this lane's bytes of the unit, B = x at rows 2qt, 2qt + 1,
  // 2qt + 8, 2qt + 9 in column qg == 0 (the one row), D = tile rows qg, qg + 8 x x row 2qt (+1).
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int g = warp; g < groups; g += kWarps) {
    float pa[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int step = 4 * g + j;
      const uint4 v = stage[(step / 2) * 32 + lane];
      std::uint32_t a[4];
      q8_to_pairs<T>(step % 2 ? v.z : v.x, a[0], a[1]);
      q8_to_pairs<T>(step % 2 ? v.w : v.y, a[2], a[3]);
      std::uint32_t b0 = 0u, b1 = 0u;
      if (qg == 0) {
        const int r = 16 * step + 2 * qt;
        b0 = *reinterpret_cast<const std::uint32_t*>(&xs[r]);
        b1 = *reinterpret_cast<const std::uint32_t*>(&xs[r + 8]);
      }
      ptx::mma_16816<T>(pa, a, b0, b1);
    }
    const float s_lo = sc[g * 16 + qg], s_hi = sc[g * 16 + qg + 8];
    acc[0] = fmaf(pa[0], s_lo, acc[0]);
    acc[2] = fmaf(pa[2], s_hi, acc[2]);
  }
  if (qt == 0) {  // x row 0's sums: columns qg and qg + 8
    red[warp][qg] = acc[0];
    red[warp][qg + 8] = acc[2];
  }
  __syncthreads();
  if (tid < 16) {
    const int n = tile * 16 + tid;
    float v = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) v += red[w][tid];  // in warp order: deterministic
    if (n < p.N) {
      finish_with<T>(p, v, 0, n, bias_of<T>(p, n, (p.staged & kStagedBias) != 0, bias_s, tid), res);
    }
  }
}

// q8_narrow_kernel's dynamic shared memory for K.
std::size_t narrow_smem_bytes(int K) {
  return static_cast<std::size_t>(K) * 16 + static_cast<std::size_t>(K / kGroup) * 64 +
         static_cast<std::size_t>(K) * 2;
}

// A k-step's word of int4 values (shuffle_q4_mma: register r's two values in nibbles r and r + 4,
// stored as q + 8) as mma's 4 A registers of T pairs, exactly. Each nibble goes into the mantissa
// of a 16-bit float whose last place there is 1 (f16: 1024 + n from 0x6400; bf16: 128 + n from
// 0x4300) by one LOP3 ((w & mask) | magic), and the bias comes off in pairs. f16 takes the odd
// registers' nibbles where they lie, 4 bits up (1024 + 16n), and scales them back in the same
// HFMA2 (v / 16 - 72 = n - 8): one shift a word. bf16's 7 mantissa bits cannot hold 16n: there
// every register is shifted down.
__device__ __forceinline__ std::uint32_t lop3_and_or(std::uint32_t w, std::uint32_t magic) {
  std::uint32_t v;  // (w & 0x000F000F) | magic, the constant in a register: one LOP3
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(v) : "r"(w), "n"(0x000F000F), "r"(magic));
  return v;
}
template <typename T>
__device__ __forceinline__ void q4_regs(std::uint32_t w, std::uint32_t (&a)[4]);
template <>
__device__ __forceinline__ void q4_regs<__half>(std::uint32_t w, std::uint32_t (&a)[4]) {
  const std::uint32_t w8 = w >> 8;
  std::uint32_t v[4];
  v[0] = lop3_and_or(w, 0x64006400u);
  v[2] = lop3_and_or(w8, 0x64006400u);
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(v[1]) : "r"(w), "n"(0x00F000F0), "r"(0x64006400u));
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(v[3]) : "r"(w8), "n"(0x00F000F0), "r"(0x64006400u));
#pragma unroll
  for (int r = 0; r < 4; r += 2) {
    asm("sub.f16x2 %0, %1, %2;" : "=r"(a[r]) : "r"(v[r]), "r"(0x64086408u));  // - 1032
    asm("fma.rn.f16x2 %0, %1, %2, %3;"                                        // / 16 - 72
        : "=r"(a[r + 1])
        : "r"(v[r + 1]), "r"(0x2C002C00u), "r"(0xD480D480u));
  }
}
template <>
__device__ __forceinline__ void q4_regs<__nv_bfloat16>(std::uint32_t w, std::uint32_t (&a)[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const std::uint32_t v = lop3_and_or(w >> (4 * r), 0x43004300u);
    // v * 1 - 136 (sub.bf16x2 needs sm_90)
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(a[r]) : "r"(v), "r"(0x3F803F80u), "r"(0xC308C308u));
  }
}

// Int4 W (LinearWeights::int4) at 1-8 rows: q8_narrow_kernel's form, a CTA a 16-column tile over
// the whole of K, whose weights (shuffle_q4_mma: K x 8 bytes) and scales it stages in shared memory
// by cp.async ahead of the PDL wait, with the tile's biases and (K <= 2048) the layernorm's weights
// in registers. x's rows (layer-normed when ln_w) go to shared memory as T, each row kQ4Pad
// elements apart so that the 8 rows' B fragments fall in different banks; the 8 warps take every
// 8th 64-row group (a lane's 16 bytes: its A fragments of the group's 4 k-steps, one scale) and
// meet in shared memory in warp order (deterministic). x's rows are mma's N (8): one kernel for
// every row count. Shared memory: q4_smem_bytes.
constexpr int kQ4Pad = 8;
constexpr std::size_t kQ4StaticSmem = 6 * 1024;  // red, scratch, bias_s below (~4.4 KB)
static_assert(kGroup == 64, "q4_kernel: a group is 4 k-steps, a lane's 16 bytes");
static_assert(kWarps >= kSkinnyMaxRowsQ4, "q4_kernel: a warp a row's layernorm statistics");
template <typename T>
__global__ void __launch_bounds__(kThreads) q4_kernel(const __grid_constant__ Params p) {
  extern __shared__ __align__(16) unsigned char dyn[];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, qg = lane / 4, qt = lane % 4;
  const int tile = blockIdx.x, rows = p.rows, K = p.K;
  const int groups = K / kGroup, xld = K + kQ4Pad;
  uint4* const stage = reinterpret_cast<uint4*>(dyn);
  float* const sc = reinterpret_cast<float*>(dyn + static_cast<std::size_t>(groups) * 512);
  T* const xs = reinterpret_cast<T*>(sc + groups * 16);
  constexpr int kM = kSkinnyMaxRowsQ4;
  __shared__ float red[kWarps][kM][16];
  __shared__ float stat[kM][2];          // with the layernorm at 2-8 rows: row m's mean and 1 / std
  __shared__ float scratch1[kWarps][1];  // at one row: the CTA's sums
  __shared__ __align__(16) T bias_s[16];  // with p.staged & kStagedBias

  const bool ln = p.ln_w != nullptr;
  const bool ln_regs = ln && (p.staged & kLnRegs) != 0;
  uint4 lwv = make_uint4(0u, 0u, 0u, 0u), lbv = lwv;  // this thread's 8 (volatile loads)
  if (ln_regs && tid < K / 8) {
    lwv = ptx::ld_nc_v4(static_cast<const uint4*>(p.ln_w) + tid);
    lbv = ptx::ld_nc_v4(static_cast<const uint4*>(p.ln_b) + tid);
  }
  stage_tile<T>(p, tile, groups * 32, stage, sc, bias_s);

  // Thread tid finishes element (out_m, out_n) when out_m < rows; its residual asked for now.
  const int out_m = tid / 16, out_c = tid % 16, out_n = tile * 16 + out_c;
  float res = 0.0f;
  if (out_m < rows && p.residual != nullptr && out_n < p.N) {
    res = to_f(static_cast<const T*>(p.residual)[static_cast<std::int64_t>(out_m) * p.N + out_n]);
  }

  // x's rows into xs. With the layernorm, one row's statistics are the CTA's (row 0's sum taken as
  // it loads, then two CTA sums: q8_narrow_kernel's way), several rows' are a warp's each (warp m,
  // two passes over row m in xs), and every thread then normalizes its elements of each row. Loops
  // over the rows stay rolled: unrolled for 8 rows the kernel had 7,000 instructions (1,750 now)
  // and ran 124M B1 at 0.70x int8's rate (s41 calls 1-2), each of a step's launches fetching its
  // code cold.
  const T* x = static_cast<const T*>(p.x);
  float first = 0.0f;             // this thread's part of row 0's sum
  if ((p.staged & kVecX) != 0) {  // 16 bytes a load
    const int vecs = K / 8;
    for (int i = tid; i < rows * vecs; i += kThreads) {
      const int m = i / vecs, j = i - m * vecs;
      const uint4 v = reinterpret_cast<const uint4*>(x + static_cast<std::int64_t>(m) * K)[j];
      *reinterpret_cast<uint4*>(xs + m * xld + 8 * j) = v;
      if (m == 0) {
#pragma unroll
        for (int e = 0; e < 8; ++e) first += packed_f<T>(v, e);
      }
    }
  } else {
    for (int i = tid; i < rows * K; i += kThreads) {
      const int m = i / K;
      const T v = x[i];
      xs[m * xld + i - m * K] = v;
      if (m == 0) first += to_f(v);
    }
  }
  float mean0 = 0.0f, rstd0 = 0.0f;  // one row's statistics
  if (ln && rows == 1) {
    float s1[1] = {first};
    cta_sums<1>(s1, scratch1);  // (its barriers: every thread's xs is written)
    mean0 = s1[0] / static_cast<float>(K);
    float sq[1] = {0.0f};
    for (int k = tid; k < K; k += kThreads) {
      const float d = to_f(xs[k]) - mean0;
      sq[0] += d * d;
    }
    cta_sums<1>(sq, scratch1);  // (every thread's reads of xs done)
    rstd0 = rsqrtf(sq[0] / static_cast<float>(K) + p.eps);
  } else if (ln) {
    __syncthreads();  // xs
    if (warp < rows) {
      const T* xm = xs + warp * xld;
      float sum = 0.0f;
      for (int k = lane; k < K; k += 32) sum += to_f(xm[k]);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      const float mean = sum / static_cast<float>(K);
      float sq = 0.0f;
      for (int k = lane; k < K; k += 32) {
        const float d = to_f(xm[k]) - mean;
        sq += d * d;
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
      if (lane == 0) {
        stat[warp][0] = mean;
        stat[warp][1] = rsqrtf(sq / static_cast<float>(K) + p.eps);
      }
    }
    __syncthreads();  // stat
  }
  if (ln) {
#pragma unroll 1
    for (int m = 0; m < rows; ++m) {
      const float mean = rows == 1 ? mean0 : stat[m][0], rstd = rows == 1 ? rstd0 : stat[m][1];
      T* xm = xs + m * xld;
      if (ln_regs) {  // this thread's 8 elements
        if (tid < K / 8) {
          T* e = xm + 8 * tid;
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            e[j] =
                from_f<T>((to_f(e[j]) - mean) * rstd * packed_f<T>(lwv, j) + packed_f<T>(lbv, j));
          }
        }
      } else {
        const T* lw = static_cast<const T*>(p.ln_w);
        const T* lb = static_cast<const T*>(p.ln_b);
        for (int k = tid; k < K; k += kThreads) {
          xm[k] = from_f<T>((to_f(xm[k]) - mean) * rstd * to_f(lw[k]) + to_f(lb[k]));
        }
      }
    }
  }
  ptx::cp_async_wait<0>();
  __syncthreads();  // the stage (every thread's copies) and xs

  // A k-step: A = the tile's 16 columns x 16 rows of W from this lane's word, B = x's rows (mma's
  // N: lane qg reads row qg, zero past rows) at k 2qt, 2qt + 1 and 2qt + 8, 2qt + 9; D = tile
  // columns qg (acc 0-1) and qg + 8 (2-3) x rows 2qt (0, 2) and 2qt + 1 (1, 3).
  const bool has_row = qg < rows;
  const T* xb = xs + (has_row ? qg : 0) * xld + 2 * qt;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int g = warp; g < groups; g += kWarps) {
    const uint4 v = stage[g * 32 + lane];
    float pa[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const std::uint32_t w = j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
      std::uint32_t a[4];
      q4_regs<T>(w, a);
      std::uint32_t b0 = 0u, b1 = 0u;
      if (has_row) {
        const int k = 16 * (4 * g + j);
        b0 = *reinterpret_cast<const std::uint32_t*>(xb + k);
        b1 = *reinterpret_cast<const std::uint32_t*>(xb + k + 8);
      }
      ptx::mma_16816<T>(pa, a, b0, b1);
    }
    const float s_lo = sc[g * 16 + qg], s_hi = sc[g * 16 + qg + 8];
    acc[0] = fmaf(pa[0], s_lo, acc[0]);
    acc[1] = fmaf(pa[1], s_lo, acc[1]);
    acc[2] = fmaf(pa[2], s_hi, acc[2]);
    acc[3] = fmaf(pa[3], s_hi, acc[3]);
  }
  if (2 * qt < rows) {
    red[warp][2 * qt][qg] = acc[0];
    red[warp][2 * qt][qg + 8] = acc[2];
  }
  if (2 * qt + 1 < rows) {
    red[warp][2 * qt + 1][qg] = acc[1];
    red[warp][2 * qt + 1][qg + 8] = acc[3];
  }
  __syncthreads();
  if (out_m < rows && out_n < p.N) {
    float v = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) v += red[w][out_m][out_c];  // in warp order
    finish_with<T>(p, v, out_m, out_n,
                   bias_of<T>(p, out_n, (p.staged & kStagedBias) != 0, bias_s, out_c), res);
  }
}

// q4_kernel's dynamic shared memory for K and rows.
std::size_t q4_smem_bytes(int K, int rows) {
  return static_cast<std::size_t>(K) * 8 + static_cast<std::size_t>(K / kGroup) * 64 +
         static_cast<std::size_t>(rows) * static_cast<std::size_t>(K + kQ4Pad) * 2;
}

template <typename T, bool Q8 = false>
void (*kernel_for(int rows))(Params) {
  if (rows <= 1) return skinny_kernel<T, 1, Q8>;
  if (rows <= 2) return skinny_kernel<T, 2, Q8>;
  if (rows <= 4) return skinny_kernel<T, 4, Q8>;
  return skinny_kernel<T, 8, Q8>;
}

// The per-device caches below: devices past kDevices (or none) are asked every time.
constexpr int kDevices = 64;
int current_device() {
  int device = 0;
  return cudaGetDevice(&device) == cudaSuccess && device < kDevices ? device : kDevices;
}
// The kernel for `rows` (and int8 or not) as the caches key it, and its f16 instance (the bf16
// one uses the same resources).
int kernel_slot(int rows, bool q8) {
  return (rows <= 1 ? 0 : rows <= 2 ? 1 : rows <= 4 ? 2 : 3) + (q8 ? 4 : 0);
}
void (*f16_kernel(int rows, bool q8))(Params) {
  return q8 ? kernel_for<__half, true>(rows) : kernel_for<__half>(rows);
}

// CTAs of the kernel for `rows` that fit on an SM of the current device at once (the f16 and bf16
// kernels use the same resources), asked of the runtime once per device and kernel.
int ctas_per_sm(int rows, bool q8) {
  static std::atomic<int> cached[kDevices][8];
  const int slot = kernel_slot(rows, q8), device = current_device();
  int n = device < kDevices ? cached[device][slot].load(std::memory_order_relaxed) : 0;
  if (n == 0) {
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, f16_kernel(rows, q8), kThreads, 0) !=
            cudaSuccess ||
        n < 1) {
      (void)cudaGetLastError();  // not left for the next launch's check
      n = 1;
    }
    if (device < kDevices) cached[device][slot].store(n, std::memory_order_relaxed);
  }
  return n;
}

// Clusters of `size` CTAs (the splits of a slice, 2..kMaxCluster) of the kernel for `rows` that
// fit on the current device at once, asked of the runtime once per device, kernel and size. A
// cluster lives in one GPC, so this is below ctas_per_sm * SMs / size: on an H200 (132 SMs) 75
// clusters of 7 or 100 of 5 at 4 CTAs an SM do not fit, and the ones left over ran as a second
// wave (s35: 1.5B's int8 c_attn and c_fc at 15-16 us).
int max_clusters(int rows, bool q8, int size) {
  static std::atomic<int> cached[kDevices][8][kMaxCluster + 1];
  const int slot = kernel_slot(rows, q8), device = current_device();
  int n = device < kDevices ? cached[device][slot][size].load(std::memory_order_relaxed) : 0;
  if (n == 0) {
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = 1;
    attr.val.clusterDim.y = static_cast<unsigned>(size);
    attr.val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(1, static_cast<unsigned>(size));
    cfg.blockDim = dim3(kThreads);
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    if (cudaOccupancyMaxActiveClusters(&n, f16_kernel(rows, q8), &cfg) != cudaSuccess || n < 1) {
      (void)cudaGetLastError();
      n = -1;  // none: the workspace instead
    }
    if (device < kDevices) cached[device][slot][size].store(n, std::memory_order_relaxed);
  }
  return n;
}

// The int8 kernel's largest chunk: kPassQ8 rows, or fewer through GPUATTN_SKINNY_Q8_CHUNK (an
// experiment switch: 64, 128, 192 or 256), which gives more and shorter CTAs (s36's probe: 128-row
// CTAs read 1.5B's linears 12% faster than 256-row ones, unreduced).
int q8_chunk_rows() {
  static const int rows = [] {
    const char* v = std::getenv("GPUATTN_SKINNY_Q8_CHUNK");
    if (v == nullptr) return kPassQ8;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || n < kGroup || n > kPassQ8 || n % kGroup != 0) {
      throw Error(ErrorCode::invalid_argument,
                  std::string("GPUATTN_SKINNY_Q8_CHUNK is \"") + v + "\": expected a multiple of " +
                      std::to_string(kGroup) + " from " + std::to_string(kGroup) + " to " +
                      std::to_string(kPassQ8));
    }
    return static_cast<int>(n);
  }();
  return rows;
}

// The most rows of W a CTA takes: q8_chunk_rows (int8), or max_passes passes of kPass.
int max_chunk_rows(int rows, bool q8) {
  return q8 ? q8_chunk_rows() : kPass * (rows <= 4 ? max_passes<4>() : max_passes<8>());
}

// Whether the kernel for `rows` as it runs on the current device was compiled for sm_90+ (its PTX
// version; cached per device and kernel): only that code has the cluster instructions. A build for
// 80;90a runs the compute_80 code on GPUs past sm_90, which traps in a cluster helper.
bool kernel_has_clusters(int rows) {
  return sm80::kernel_waits_for_pdl(reinterpret_cast<const void*>(kernel_for<__half>(rows)));
}

// GPUATTN_SKINNY_Q8_NARROW: "1" (the default) takes int8 calls of one row through q8_narrow_kernel
// where its shared memory fits, "0" does not; another value throws invalid_argument. Read once.
bool q8_narrow() {
  static const bool on = env_flag("GPUATTN_SKINNY_Q8_NARROW", true);
  return on;
}

// The shared memory a block may opt into on the current device (cached per device).
std::size_t smem_optin() {
  static std::atomic<int> cached[kDevices];
  const int device = current_device();
  int n = device < kDevices ? cached[device].load(std::memory_order_relaxed) : 0;
  if (n == 0) {
    int d = 0;
    if (cudaGetDevice(&d) != cudaSuccess ||
        cudaDeviceGetAttribute(&n, cudaDevAttrMaxSharedMemoryPerBlockOptin, d) != cudaSuccess) {
      (void)cudaGetLastError();
      n = 48 * 1024;
    }
    if (device < kDevices) cached[device].store(n, std::memory_order_relaxed);
  }
  return static_cast<std::size_t>(n);
}

// GPUATTN_SKINNY_GEMM: "0" never, "1" (the default) where the engine's policy says, "all"
// wherever the kernel can take the call (for measuring it against cuBLASLt). Read once.
enum class Use { never, policy, all };
Use skinny_use() {
  static const Use use = std::array{Use::policy, Use::never,
                                    Use::all}[env_choice("GPUATTN_SKINNY_GEMM", {"1", "0", "all"})];
  return use;
}

// A dequantization unit's write-back (dequant_q8_kernel, dequant_q4_kernel): rows k0 .. k0 +
// kRows - 1 and columns n0 .. n0 + kCols - 1 of W_out from the CTA's tile of q values, as 16-byte
// row segments of T (coalesced) with the scales of row group kg (every row of a unit is in one
// group: kRows divides kGroup) applied. N % 8 == 0: a segment is all in or all out.
template <int kCols, typename T, int kRows, int kStride>
__device__ __forceinline__ void write_unit(const float (&tile)[kRows][kStride], const float* scales,
                                           int N, int n0, int k0, int kg, T* out) {
  static_assert(kGroup % kRows == 0, "a unit's rows share one group's scales");
  constexpr int kSegs = kRows * kCols / 8;
  for (int e = threadIdx.x; e < kSegs; e += kThreads) {
    const int k_local = e / (kCols / 8), c = (e % (kCols / 8)) * 8;
    const int n = n0 + c, k = k0 + k_local;
    if (n < N) {
      const float* sc = scales + static_cast<std::int64_t>(kg) * N + n;
      const float4 s0 = *reinterpret_cast<const float4*>(sc);
      const float4 s1 = *reinterpret_cast<const float4*>(sc + 4);
      const float sv[8] = {s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w};
      alignas(16) T o[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) o[j] = from_f<T>(tile[k_local][c + j] * sv[j]);
      *reinterpret_cast<uint4*>(out + static_cast<std::int64_t>(k) * N + n) =
          *reinterpret_cast<const uint4*>(o);
    }
  }
}

// W_out [K, N] = q * scale from W in shuffle_q8_mma's order. A unit is 32 rows x 128 columns:
// warp w loads tile w's 512 bytes (a lane's 16 bytes are its A fragments of two k-steps), the
// lanes put the weights in shared memory at their (row, column), and the CTA writes the unit back
// as 16-byte row segments with the scales applied (coalesced; scattering 2-byte stores from the
// fragment order ran 124M B16's decode 18% slower, s36 call 1).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    dequant_q8_kernel(const std::int8_t* q, const float* scales, int K, int N, T* out) {
  constexpr int kRows = 32, kCols = 16 * kWarps, kPad = 4;
  __shared__ float tile[kRows][kCols + kPad];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, qg = lane / 4, qt = lane % 4;
  const int n_tiles = (N + 15) / 16, col_units = (n_tiles + kWarps - 1) / kWarps;
  const std::int64_t units = static_cast<std::int64_t>(col_units) * (K / kRows);
  for (std::int64_t u = blockIdx.x; u < units; u += gridDim.x) {
    const int s2 = static_cast<int>(u % (K / kRows)), cu = static_cast<int>(u / (K / kRows));
    const int t = cu * kWarps + warp;
    if (t < n_tiles) {
      const uint4 v = *reinterpret_cast<const uint4*>(
          q + ((static_cast<std::int64_t>(t) * (K / kRows) + s2) * 32 + lane) * 16);
      float f[16];
      q8_to_f(make_uint2(v.x, v.y), *reinterpret_cast<float(*)[8]>(f));
      q8_to_f(make_uint2(v.z, v.w), *reinterpret_cast<float(*)[8]>(f + 8));
#pragma unroll
      for (int b = 0; b < 16; ++b) {
        const int r = (b % 8) / 2;
        const int k = (b / 8) * 16 + 2 * qt + (r / 2) * 8 + b % 2;
        tile[k][warp * 16 + qg + (r % 2) * 8] = f[b];
      }
    }
    __syncthreads();
    write_unit<kCols>(tile, scales, N, cu * kCols, s2 * kRows, s2 * kRows / kGroup, out);
    __syncthreads();  // the tile is rewritten by the next unit
  }
}

// W_out [K, N] = q * scale from int4 W in shuffle_q4_mma's order. A unit is a 64-row group x 128
// columns: warp w loads tile w's 512 bytes (a lane's 16 bytes: its A fragments of the group's 4
// k-steps), the lanes put the values in shared memory at their (row, column), and the CTA writes
// the unit back as 16-byte row segments with the group's scales applied (as dequant_q8_kernel).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    dequant_q4_kernel(const uint4* q, const float* scales, int K, int N, T* out) {
  constexpr int kRows = kGroup, kCols = 16 * kWarps, kPad = 4;
  __shared__ float tile[kRows][kCols + kPad];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, qg = lane / 4, qt = lane % 4;
  const int n_tiles = (N + 15) / 16, col_units = (n_tiles + kWarps - 1) / kWarps;
  const int groups = K / kGroup;
  const std::int64_t units = static_cast<std::int64_t>(col_units) * groups;
  for (std::int64_t u = blockIdx.x; u < units; u += gridDim.x) {
    const int g = static_cast<int>(u % groups), cu = static_cast<int>(u / groups);
    const int t = cu * kWarps + warp;
    if (t < n_tiles) {
      const uint4 v = q[(static_cast<std::int64_t>(t) * groups + g) * 32 + lane];
      const std::uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
#pragma unroll
        for (int nib = 0; nib < 8; ++nib) {
          const int r = nib % 4, e = nib / 4;
          const int k = 16 * j + 2 * qt + (r / 2) * 8 + e;
          tile[k][warp * 16 + qg + (r % 2) * 8] =
              static_cast<float>(static_cast<int>((words[j] >> (4 * nib)) & 15u) - 8);
        }
      }
    }
    __syncthreads();
    write_unit<kCols>(tile, scales, N, cu * kCols, g * kRows, g, out);
    __syncthreads();  // the tile is rewritten by the next unit
  }
}

}  // namespace

namespace {

// dequant_q8 (bits 8) and dequant_q4 (4): the arguments checked, the kernel launched over at most
// 4096 CTAs of units (int8: 32 rows x 128 columns; int4: a 64-row group x 128 columns).
void launch_dequant(int bits, DType dt, const void* Wq, int K, int N, void* W_out, void* stream) {
  const char* what = bits == 4 ? "int4" : "int8";
  if (K < 1 || K % kGroup != 0 || N < 8 || N % 8 != 0 ||
      reinterpret_cast<std::uintptr_t>(Wq) % 16 != 0 ||
      reinterpret_cast<std::uintptr_t>(W_out) % 16 != 0) {
    throw Error(ErrorCode::invalid_argument,
                std::string("gpuattn engine: ") + what + " weights of " + std::to_string(K) +
                    " x " + std::to_string(N) + ": K must be a multiple of " +
                    std::to_string(kGroup) + ", N of 8, and both blocks on 16 bytes");
  }
  const auto* base = static_cast<const char*>(Wq);
  const auto* scales = reinterpret_cast<const float*>(
      base + (bits == 4 ? q4_mma_scales_offset(K, N) : q8_mma_scales_offset(K, N)));
  const std::int64_t units = static_cast<std::int64_t>(((N + 15) / 16 + kWarps - 1) / kWarps) *
                             (K / (bits == 4 ? kGroup : 32));
  const int blocks = static_cast<int>(std::min<std::int64_t>(units, 4096));
  const auto st = static_cast<cudaStream_t>(stream);
  const auto* q8 = reinterpret_cast<const std::int8_t*>(base);
  const auto* q4 = reinterpret_cast<const uint4*>(base);
  if (dt == DType::bf16) {
    auto* out = static_cast<__nv_bfloat16*>(W_out);
    if (bits == 4) {
      dequant_q4_kernel<<<blocks, kThreads, 0, st>>>(q4, scales, K, N, out);
    } else {
      dequant_q8_kernel<<<blocks, kThreads, 0, st>>>(q8, scales, K, N, out);
    }
  } else {
    auto* out = static_cast<__half*>(W_out);
    if (bits == 4) {
      dequant_q4_kernel<<<blocks, kThreads, 0, st>>>(q4, scales, K, N, out);
    } else {
      dequant_q8_kernel<<<blocks, kThreads, 0, st>>>(q8, scales, K, N, out);
    }
  }
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    throw Error(ErrorCode::cuda_error,
                std::string("gpuattn engine: ") + what +
                    " dequantization launch failed: " + cudaGetErrorString(e));
  }
}

}  // namespace

void dequant_q8(DType dt, const void* Wq, int K, int N, void* W_out, void* stream) {
  launch_dequant(8, dt, Wq, K, N, W_out, stream);
}

void dequant_q4(DType dt, const void* Wq, int K, int N, void* W_out, void* stream) {
  launch_dequant(4, dt, Wq, K, N, W_out, stream);
}

SkinnyPlan skinny_plan(int rows, int K, int N, const void* W, const SkinnyScratch& s,
                       bool engine_policy, bool q8, bool q4) {
  SkinnyPlan plan;
  const bool narrow = q8_narrow();  // read here: a bad value is an error at the first plan
  if (q4) {  // q4_kernel at every row count it takes (the alternative dequantizes W first)
    if (q8 || rows < 1 || rows > kSkinnyMaxRowsQ4 || K < kGroup || K % kGroup != 0 || N < 8 ||
        N % 8 != 0 || reinterpret_cast<std::uintptr_t>(W) % 16 != 0 ||
        (engine_policy && skinny_use() == Use::never) ||
        q4_smem_bytes(K, rows) + kQ4StaticSmem > smem_optin()) {
      return plan;
    }
    plan.ok = true;
    plan.q4 = true;
    plan.slices = (N + 15) / 16;
    plan.splits = 1;
    plan.chunk = K;
    return plan;
  }
  if (q8 && (K % kGroup != 0 || N % 8 != 0 || rows > kSkinnyMaxRowsQ8)) return plan;
  if (engine_policy) {
    const Use use = skinny_use();
    if (use == Use::never) return plan;
    // int8 W: the kernel at every row count it takes (the alternative dequantizes W first).
    if (use == Use::policy && !q8 &&
        (rows != 1 || static_cast<std::int64_t>(K) * N > kSkinnyPolicyMaxElements)) {
      return plan;
    }
  }
  if (rows < 1 || rows > kSkinnyMaxRows || K < 1 || N < 8 || N % 8 != 0 ||
      reinterpret_cast<std::uintptr_t>(W) % 16 != 0 || s.partials == nullptr ||
      s.counts == nullptr) {
    return plan;
  }
  // The narrow kernel's static shared memory (red, scratch) is under 1 KB.
  if (q8 && rows == 1 && narrow && narrow_smem_bytes(K) + 1024 <= smem_optin()) {
    plan.ok = true;
    plan.narrow = true;
    plan.slices = (N + 15) / 16;
    plan.splits = 1;
    plan.chunk = K;
    return plan;
  }
  const int cols = q8 ? kColsQ8 : kCols;
  const int slices = (N + cols - 1) / cols;
  if (slices > s.count_slots) return plan;
  // As many CTAs as fit at once (one wave: 4 an SM at one row, 2 at 8), each taking a chunk of
  // whole row-lane multiples in passes of kPass rows; up to kMaxCluster splits a slice reduce in a
  // cluster (sm_90+), more (K beyond kMaxCluster full chunks) through the global workspace.
  const int max_chunk = max_chunk_rows(rows, q8);
  const int min_splits = (K + max_chunk - 1) / max_chunk;
  const int target = s.sm_count * ctas_per_sm(rows, q8);
  const bool clusters = kernel_has_clusters(rows);
  const int align = q8 ? kGroup : kRowLanes;  // int8: whole groups a chunk
  const auto chunk_for = [&](int want) {
    const int c = (K + want - 1) / want;
    return std::min(max_chunk, (c + align - 1) / align * align);
  };
  int want = std::max(min_splits, std::max(1, target / slices));
  // With clusters the splits stay within a cluster where the chunks allow (as in s34's
  // measurements); beyond, as few as the chunk size allows.
  if (clusters) want = std::min(want, std::max(min_splits, kMaxCluster));
  int chunk = chunk_for(want);
  int splits = (K + chunk - 1) / chunk;
  bool cluster = false;
  if (clusters && splits > 1) {
    // The most splits, up to kMaxCluster, whose clusters all fit at once (one wave); none: the
    // workspace with the splits above.
    for (int w = std::min(want, kMaxCluster); w >= min_splits && w > 1; --w) {
      const int c = chunk_for(w), sp = (K + c - 1) / c;
      if (sp > 1 && sp <= kMaxCluster && slices <= max_clusters(rows, q8, sp)) {
        chunk = c;
        splits = sp;
        cluster = true;
        break;
      }
    }
  }
  if (splits > 1 && !cluster && static_cast<std::size_t>(splits) * rows * N > s.partial_floats) {
    return plan;
  }
  plan.cluster = cluster;
  plan.ok = true;
  plan.slices = slices;
  plan.splits = splits;
  plan.chunk = chunk;
  return plan;
}

namespace {

// kernel(p) over `grid` on `stream`, with PDL where the kernel waits for it and a cluster of
// cluster_y CTAs along y when cluster_y > 0; `what` names the call in the error.
void launch(void (*kernel)(Params), dim3 grid, std::size_t smem_bytes, int cluster_y,
            const Params& p, void* stream, const char* what) {
  cudaLaunchAttribute attr[2];
  unsigned n_attr = 0;
  if (cluster_y > 0) {
    attr[n_attr].id = cudaLaunchAttributeClusterDimension;
    attr[n_attr].val.clusterDim.x = 1;
    attr[n_attr].val.clusterDim.y = static_cast<unsigned>(cluster_y);
    attr[n_attr].val.clusterDim.z = 1;
    ++n_attr;
  }
  if (sm80::pdl_enabled() && sm80::kernel_waits_for_pdl(reinterpret_cast<const void*>(kernel))) {
    attr[n_attr].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n_attr].val.programmaticStreamSerializationAllowed = 1;
    ++n_attr;
  }
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem_bytes;
  cfg.stream = static_cast<cudaStream_t>(stream);
  cfg.attrs = attr;
  cfg.numAttrs = n_attr;
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, p);
  if (e != cudaSuccess) {
    throw Error(ErrorCode::cuda_error, std::string("gpuattn engine: ") + what +
                                           " launch failed: " + cudaGetErrorString(e));
  }
}

// skinny_linear's launch of a narrow plan (p filled in).
void launch_narrow(DType dt, const SkinnyPlan& plan, const SkinnyArgs& a, const Params& p,
                   void* stream) {
  const std::size_t bytes = narrow_smem_bytes(a.K);
  const std::size_t limit = smem_optin() - 1024;  // the static shared memory's margin
  if (!plan.ok || plan.splits != 1 || plan.cluster || !a.q8 || a.rows != 1 || a.K % kGroup != 0 ||
      a.N % 8 != 0 || reinterpret_cast<std::uintptr_t>(a.W) % 16 != 0 ||
      plan.slices != (a.N + 15) / 16 || bytes > limit || (dt != DType::f16 && dt != DType::bf16)) {
    throw Error(ErrorCode::invalid_argument,
                "gpuattn engine: the narrow int8 kernel launched for " + std::to_string(a.rows) +
                    " rows, K " + std::to_string(a.K) + ", N " + std::to_string(a.N) + ", " +
                    to_string(dt) + (a.q8 ? "" : ", dense W") + ", " + std::to_string(plan.slices) +
                    " tiles and " + std::to_string(plan.splits) +
                    " splits: it takes an ok plan of one split, int8 W on 16 bytes at one row of "
                    "f16 or bf16, K a multiple of 64 whose " +
                    std::to_string(bytes) + " bytes of shared memory are within " +
                    std::to_string(limit) + ", N a multiple of 8, a tile per 16 columns");
  }
  const auto aligned = [](const void* q) { return reinterpret_cast<std::uintptr_t>(q) % 16 == 0; };
  Params pn = p;
  pn.staged = 0;
  if (a.ln_w != nullptr && aligned(a.ln_w) && aligned(a.ln_b) && a.K <= 8 * kThreads) {
    pn.staged |= kLnRegs;
  }
  if (a.bias != nullptr && aligned(a.bias)) pn.staged |= kStagedBias;
  if (aligned(a.x)) pn.staged |= kVecX;
  void (*kernel)(Params) =
      dt == DType::bf16 ? q8_narrow_kernel<__nv_bfloat16> : q8_narrow_kernel<__half>;
  // The kernel may use the most any plan can ask for, set once per device and type (every
  // caller sets the same value: concurrent first calls agree).
  static std::atomic<bool> allowed[kDevices][2];
  const int device = current_device(), ti = dt == DType::bf16 ? 1 : 0;
  if (device >= kDevices || !allowed[device][ti].load(std::memory_order_acquire)) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(limit));
    if (e != cudaSuccess) {
      throw Error(ErrorCode::cuda_error,
                  std::string("gpuattn engine: the narrow int8 kernel's shared memory limit (") +
                      std::to_string(limit) + " bytes): " + cudaGetErrorString(e));
    }
    // The largest L1 / shared-memory carveout (pdl.h says why): s39 call 4 (H200, 1.5B B1
    // int8) c_fc's increment 9.06 -> 6.02 us and c_attn's 8.86 -> 6.82; 689 -> 758-759 tok/s.
    sm80::prefer_max_shared(reinterpret_cast<const void*>(kernel));
    if (device < kDevices) allowed[device][ti].store(true, std::memory_order_release);
  }
  launch(kernel, dim3(static_cast<unsigned>(plan.slices)), bytes, 0, pn, stream,
         "narrow int8 linear");
}

// skinny_linear's launch of a q4 plan (p filled in).
void launch_q4(DType dt, const SkinnyPlan& plan, const SkinnyArgs& a, const Params& p,
               void* stream) {
  const std::size_t bytes = q4_smem_bytes(a.K, a.rows);
  const std::size_t limit = smem_optin() - kQ4StaticSmem;
  if (!plan.ok || !plan.q4 || plan.splits != 1 || plan.cluster || !a.q4 || a.q8 || a.rows < 1 ||
      a.rows > kSkinnyMaxRowsQ4 || a.K < kGroup || a.K % kGroup != 0 || a.N < 8 || a.N % 8 != 0 ||
      reinterpret_cast<std::uintptr_t>(a.W) % 16 != 0 || plan.slices != (a.N + 15) / 16 ||
      bytes > limit || (dt != DType::f16 && dt != DType::bf16)) {
    throw Error(ErrorCode::invalid_argument,
                "gpuattn engine: the int4 kernel launched for " + std::to_string(a.rows) +
                    " rows, K " + std::to_string(a.K) + ", N " + std::to_string(a.N) + ", " +
                    to_string(dt) + (a.q4 && !a.q8 ? "" : ", W not int4") + ", W at " +
                    std::to_string(reinterpret_cast<std::uintptr_t>(a.W) % 16) + " mod 16, " +
                    std::to_string(plan.slices) + " tiles and " + std::to_string(plan.splits) +
                    " splits" + (plan.cluster ? " in a cluster" : "") +
                    ": it takes an ok int4 plan of one split, int4 W on 16 bytes at 1-" +
                    std::to_string(kSkinnyMaxRowsQ4) +
                    " rows of f16 or bf16, K a multiple of 64 whose " + std::to_string(bytes) +
                    " bytes of shared memory are within " + std::to_string(limit) +
                    ", N a multiple of 8, a tile per 16 columns");
  }
  const auto aligned = [](const void* q) { return reinterpret_cast<std::uintptr_t>(q) % 16 == 0; };
  Params pq = p;
  pq.staged = 0;
  if (a.ln_w != nullptr && aligned(a.ln_w) && aligned(a.ln_b) && a.K <= 8 * kThreads) {
    pq.staged |= kLnRegs;
  }
  if (a.bias != nullptr && aligned(a.bias)) pq.staged |= kStagedBias;
  if (aligned(a.x)) pq.staged |= kVecX;
  void (*kernel)(Params) = dt == DType::bf16 ? q4_kernel<__nv_bfloat16> : q4_kernel<__half>;
  // The most any plan can ask for, set once per device and type (concurrent first calls agree).
  static std::atomic<bool> allowed[kDevices][2];
  const int device = current_device(), ti = dt == DType::bf16 ? 1 : 0;
  if (device >= kDevices || !allowed[device][ti].load(std::memory_order_acquire)) {
    const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(limit));
    if (e != cudaSuccess) {
      throw Error(ErrorCode::cuda_error,
                  std::string("gpuattn engine: the int4 kernel's shared memory limit (") +
                      std::to_string(limit) + " bytes): " + cudaGetErrorString(e));
    }
    sm80::prefer_max_shared(reinterpret_cast<const void*>(kernel));  // as the narrow kernel
    if (device < kDevices) allowed[device][ti].store(true, std::memory_order_release);
  }
  launch(kernel, dim3(static_cast<unsigned>(plan.slices)), bytes, 0, pq, stream, "int4 linear");
}

}  // namespace

void skinny_linear(DType dt, const SkinnyPlan& plan, const SkinnyArgs& a, const SkinnyScratch& s,
                   void* stream) {
  Params p;
  p.x = a.x;
  p.ln_w = a.ln_w;
  p.ln_b = a.ln_b;
  p.eps = a.eps;
  p.W = a.W;
  p.bias = a.bias;
  p.residual = a.residual;
  p.out = a.out;
  p.rows = a.rows;
  p.K = a.K;
  p.N = a.N;
  p.chunk = plan.chunk;
  p.splits = plan.splits;
  p.gelu = a.gelu;
  p.partials = s.partials;
  p.counts = s.counts;
  p.cluster = plan.cluster;
  p.kv_slots = a.kv_slots;
  p.k_pool = a.k_pool;
  p.v_pool = a.v_pool;
  p.kv_c = a.N / 3;
  p.staged = 0;
  p.f32_out = a.f32_out;
  p.kv_e4m3 = a.kv_e4m3;
  p.ld = a.f32_out ? a.ld : a.N;
  p.scales = a.q8   ? reinterpret_cast<const float*>(static_cast<const char*>(a.W) +
                                                   q8_mma_scales_offset(a.K, a.N))
             : a.q4 ? reinterpret_cast<const float*>(static_cast<const char*>(a.W) +
                                                     q4_mma_scales_offset(a.K, a.N))
                    : nullptr;
  const int max_chunk = max_chunk_rows(a.rows, a.q8);
  if (!plan.narrow && !plan.q4 && !a.q4 &&
      (!plan.ok || a.rows < 1 || a.rows > (a.q8 ? kSkinnyMaxRowsQ8 : kSkinnyMaxRows) ||
       plan.chunk > max_chunk || (a.q8 && (plan.chunk % kGroup != 0 || a.K % kGroup != 0)))) {
    throw Error(ErrorCode::invalid_argument,
                "gpuattn engine: skinny linear of " + std::to_string(a.rows) +
                    " rows launched with a plan it does not fit (chunk " +
                    std::to_string(plan.chunk) + ", at most " + std::to_string(max_chunk) + ")");
  }
  if ((a.ln_w == nullptr) != (a.ln_b == nullptr)) {
    throw Error(ErrorCode::invalid_argument,
                std::string("gpuattn engine: skinny linear with the layernorm's ") +
                    (a.ln_w ? "weights but no biases" : "biases but no weights") +
                    ": both or neither");
  }
  if (a.kv_slots != nullptr &&
      (a.N % 3 != 0 || a.k_pool == nullptr || a.v_pool == nullptr || a.residual != nullptr)) {
    throw Error(ErrorCode::invalid_argument,
                "gpuattn engine: skinny linear with the k/v scatter has N " + std::to_string(a.N) +
                    " (must be 3C), " + (a.k_pool && a.v_pool ? "both" : "not both") +
                    " caches and " + (a.residual ? "a" : "no") + " residual (must be none)");
  }
  if (a.f32_out && (a.bias != nullptr || a.residual != nullptr || a.gelu || a.kv_slots != nullptr ||
                    a.ld < a.N)) {
    throw Error(ErrorCode::invalid_argument,
                std::string("gpuattn engine: skinny linear with fp32 output (the head's logits) "
                            "and ") +
                    (a.bias ? "a bias, " : "") + (a.residual ? "a residual, " : "") +
                    (a.gelu ? "GELU, " : "") + (a.kv_slots ? "the k/v scatter, " : "") +
                    "row pitch " + std::to_string(a.ld) + " for N " + std::to_string(a.N) +
                    ": it takes none of the four and a pitch of at least N");
  }
  if (plan.q4 || a.q4) {
    launch_q4(dt, plan, a, p, stream);
    return;
  }
  if (plan.narrow) {
    launch_narrow(dt, plan, a, p, stream);
    return;
  }
  Params ps = p;
  ps.staged = 0;
  if (a.bias != nullptr && reinterpret_cast<std::uintptr_t>(a.bias) % 16 == 0 && a.N % 8 == 0) {
    ps.staged |= kStagedBias;
  }
  void (*kernel)(Params) =
      a.q8 ? (dt == DType::bf16 ? kernel_for<__nv_bfloat16, true>(a.rows)
                                : kernel_for<__half, true>(a.rows))
           : (dt == DType::bf16 ? kernel_for<__nv_bfloat16>(a.rows) : kernel_for<__half>(a.rows));
  // The int8 kernels stage W in shared memory: the largest carveout, as the narrow kernel's. The
  // dense ones read W into registers and keep the default (s39 call 4: the largest carveout for
  // them too cost 124M B1, dense, 5%).
  if (a.q8) {
    static std::atomic<bool> asked[kDevices][8][2];  // per device, kernel_slot and type
    const int device = current_device(), slot = kernel_slot(a.rows, true);
    const int ti = dt == DType::bf16 ? 1 : 0;
    if (device >= kDevices || !asked[device][slot][ti].load(std::memory_order_acquire)) {
      sm80::prefer_max_shared(reinterpret_cast<const void*>(kernel));
      if (device < kDevices) asked[device][slot][ti].store(true, std::memory_order_release);
    }
  }
  launch(kernel, dim3(static_cast<unsigned>(plan.slices), static_cast<unsigned>(plan.splits)), 0,
         plan.cluster ? plan.splits : 0, ps, stream, "skinny linear");
}

}  // namespace gpuattn::engine::cuda
