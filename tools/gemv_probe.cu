// One-row linears (y = x W, fp16, fp32 sums) read a weight matrix once and do little else: how fast
// can they go, and which access pattern gets there? A probe, not a library kernel: each pattern
// below reads every weight once, writes fp32 partial sums (reduced and checked on the host), and is
// timed as a CUDA graph of back-to-back launches cycling through copies of W that together are 8x
// the L2, so every read comes from HBM (as in a model's decode step).
//   read   the roofline: W read front to back, 16-byte vectors, 8 in flight a thread
//   s<C>   W [K, N]: a CTA takes C columns and a chunk of rows (C/8 threads a row segment,
//          256 / (C/8) rows a load, 8 loads in flight), the engine's skinny kernel's pattern at
//          C=64
//   t      W^T [N, K]: a warp takes one output column and reads its K weights, contiguous
//   q<C> v<V> l<L>  weight-only int8 W [K, N] with a scale a 64 rows and column (the engine's
//          LinearWeights::int8): a CTA takes C columns and one pass of rows, V-byte loads, L in
//          flight a thread; s35 added these to find the layout the int8 kernel should read
//   tc l<L> nt<NT>  the same int8 weights pre-shuffled for mma.m16n8k16 (tc_kernel below)
// Usage: gpuattn_gemv_probe [launches a graph, 160] [q8: the int8 variants only].
// Built as gpuattn_gemv_probe (tools/CMakeLists.txt). Session 34 ran it as bench/gemv_patterns.cu,
// built with nvcc -O3 -arch=sm_90a -std=c++17; its output: bench/results/2026-11-29-h200-s34/.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#define CK(x)                                                                         \
  do {                                                                                \
    cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

namespace {

constexpr int kThreads = 256;
constexpr int kLoads = 8;

__device__ __forceinline__ uint4 ld_nc(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ void fma8(float (&acc)[8], const uint4& w, float xv) {
  const __half* h = reinterpret_cast<const __half*>(&w);
#pragma unroll
  for (int j = 0; j < 8; ++j) acc[j] = fmaf(xv, __half2float(h[j]), acc[j]);
}

// The roofline: the sum of all weights (x = 1), one partial a CTA.
__global__ void __launch_bounds__(kThreads)
    read_kernel(const uint4* w, std::int64_t n_vec, float* out) {
  float acc[8] = {};
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kThreads * kLoads;
  for (std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * kThreads * kLoads; base < n_vec;
       base += stride) {
    uint4 v[kLoads];
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const std::int64_t e = base + i * kThreads + threadIdx.x;
      v[i] = e < n_vec ? ld_nc(w + e) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int i = 0; i < kLoads; ++i) fma8(acc, v[i], 1.0f);
  }
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) s += acc[j];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  __shared__ float red[kThreads / 32];
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int i = 0; i < kThreads / 32; ++i) t += red[i];
    out[blockIdx.x] = t;
  }
}

// The CTA's partial sums of its C columns (from blockIdx.x * C) over its row lanes' rows in red,
// into partials[blockIdx.y][N] (columns past N dropped).
template <int RowLanes, int C>
__device__ void write_partials(const float (&red)[RowLanes][C], int N, float* partials) {
  __syncthreads();
  for (int c = threadIdx.x; c < C; c += kThreads) {
    float s = 0.0f;
    for (int r = 0; r < RowLanes; ++r) s += red[r][c];
    const int n = blockIdx.x * C + c;
    if (n < N) partials[static_cast<std::int64_t>(blockIdx.y) * N + n] = s;
  }
}

// W [K, N]: CTA (slice, split) takes columns slice*C.. and rows split*chunk.. (chunk a multiple of
// the rows a pass). Partials [splits][N].
template <int C>
__global__ void __launch_bounds__(kThreads)
    slice_kernel(const __half* W, const __half* x, int K, int N, int chunk, float* partials) {
  constexpr int kSeg = C / 8;                 // threads a row segment
  constexpr int kRowLanes = kThreads / kSeg;  // rows a load
  constexpr int kPass = kRowLanes * kLoads;
  const int cv = threadIdx.x % kSeg, lane_k = threadIdx.x / kSeg;
  const int col = blockIdx.x * C + cv * 8;
  const int k0 = blockIdx.y * chunk, k1 = min(K, k0 + chunk);
  float acc[8] = {};
  if (col < N) {
    for (int base = k0; base < k1; base += kPass) {
      uint4 v[kLoads];
      float xv[kLoads];
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        const int k = base + lane_k + i * kRowLanes;
        v[i] = k < k1 ? ld_nc(W + static_cast<std::int64_t>(k) * N + col) : make_uint4(0, 0, 0, 0);
        xv[i] = k < k1 ? __half2float(x[k]) : 0.0f;
      }
#pragma unroll
      for (int i = 0; i < kLoads; ++i) fma8(acc, v[i], xv[i]);
    }
  }
  // Sum over the row lanes through shared memory.
  __shared__ float red[kRowLanes][C];
#pragma unroll
  for (int j = 0; j < 8; ++j) red[lane_k][cv * 8 + j] = acc[j];
  write_partials<kRowLanes, C>(red, N, partials);
}

// W^T [N, K]: warp w of the grid takes column n = w % N and k-split w / N (chunk elements, a
// multiple of 8). Partials [splits][N].
__global__ void __launch_bounds__(kThreads)
    t_kernel(const __half* Wt, const __half* x, int K, int N, int chunk, float* partials) {
  const int warp = blockIdx.x * (kThreads / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  const int n = warp % N, split = warp / N;
  const int k0 = split * chunk, k1 = min(K, k0 + chunk);
  if (k0 >= K) return;
  const __half* row = Wt + static_cast<std::int64_t>(n) * K;
  float acc[8] = {};
  for (int base = k0; base < k1; base += 32 * 8 * kLoads) {
    uint4 v[kLoads], xv[kLoads];
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int k = base + (i * 32 + lane) * 8;
      v[i] = k < k1 ? ld_nc(row + k) : make_uint4(0, 0, 0, 0);
      xv[i] = k < k1 ? *reinterpret_cast<const uint4*>(x + k) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const __half* w = reinterpret_cast<const __half*>(&v[i]);
      const __half* xh = reinterpret_cast<const __half*>(&xv[i]);
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[j] = fmaf(__half2float(xh[j]), __half2float(w[j]), acc[j]);
    }
  }
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) s += acc[j];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) partials[static_cast<std::int64_t>(split) * N + n] = s;
}

__device__ __forceinline__ uint2 ld_nc8(const void* p) {
  uint2 v;
  asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];"
               : "=r"(v.x), "=r"(v.y)
               : "l"(p));
  return v;
}

// 4 int8 weights (a 32-bit word) to floats, exactly: each byte, biased by 128, into a float's low
// mantissa bits (2^23 + b), the bias taken off.
__device__ __forceinline__ void q8x4_to_f(std::uint32_t w, float* f) {
  w ^= 0x80808080u;
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    f[b] = __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7440u + b)) - 8388736.0f;
  }
}

// Weight-only int8 W [K, N] with fp32 scales [K / 64, N] (one a 64 rows and column). A CTA takes C
// columns and one pass of rows: C / V threads a row segment of V bytes (one load), 256 / (C / V)
// row lanes, L loads in flight a thread; the scales and x of its rows staged in shared memory; a
// group's products summed, then scaled once. Partials [splits][N].
template <int C, int V, int L>
__global__ void __launch_bounds__(kThreads)
    q8_kernel(const std::int8_t* W, const float* scales, const __half* x, int K, int N,
              float* partials) {
  constexpr int kSeg = C / V, kRowLanes = kThreads / kSeg, kChunk = kRowLanes * L;
  constexpr int kPerGroup = 64 / kRowLanes;  // loads of a thread in one 64-row group
  static_assert(64 % kRowLanes == 0 && L % kPerGroup == 0, "whole groups a thread");
  constexpr int kGroups = L / kPerGroup;
  constexpr int kWords = V / 4;
  __shared__ float sc[kGroups][C];
  __shared__ float xs[kChunk];
  __shared__ float red[kRowLanes][C];
  const int cv = threadIdx.x % kSeg, lane_k = threadIdx.x / kSeg;
  const int col = blockIdx.x * C + cv * V;
  const int k0 = blockIdx.y * kChunk;
  std::uint32_t w[L][kWords];
#pragma unroll
  for (int i = 0; i < L; ++i) {
    const int k = k0 + lane_k + i * kRowLanes;
    const std::int8_t* src = W + static_cast<std::int64_t>(k) * N + col;
    if constexpr (V == 16) {
      const uint4 v = col < N && k < K ? ld_nc(src) : make_uint4(0, 0, 0, 0);
      w[i][0] = v.x, w[i][1] = v.y, w[i][2] = v.z, w[i][3] = v.w;
    } else {
      const uint2 v = col < N && k < K ? ld_nc8(src) : make_uint2(0, 0);
      w[i][0] = v.x, w[i][1] = v.y;
    }
  }
  for (int t = threadIdx.x; t < kGroups * C; t += kThreads) {
    const int g = t / C, n = blockIdx.x * C + t % C, kg = k0 / 64 + g;
    sc[g][t % C] = kg < K / 64 && n < N ? scales[static_cast<std::int64_t>(kg) * N + n] : 0.0f;
  }
  for (int t = threadIdx.x; t < kChunk; t += kThreads) {
    xs[t] = k0 + t < K ? __half2float(x[k0 + t]) : 0.0f;
  }
  __syncthreads();
  float acc[V] = {};
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    float pa[V] = {};
#pragma unroll
    for (int h = 0; h < kPerGroup; ++h) {
      const int i = g * kPerGroup + h;
      const float xv = xs[lane_k + i * kRowLanes];
      float f[V];
#pragma unroll
      for (int q = 0; q < kWords; ++q) q8x4_to_f(w[i][q], f + 4 * q);
#pragma unroll
      for (int j = 0; j < V; ++j) pa[j] = fmaf(xv, f[j], pa[j]);
    }
#pragma unroll
    for (int j = 0; j < V; ++j) acc[j] = fmaf(pa[j], sc[g][cv * V + j], acc[j]);
  }
#pragma unroll
  for (int j = 0; j < V; ++j) red[lane_k][cv * V + j] = acc[j];
  write_partials<kRowLanes, C>(red, N, partials);
}

// The int8 variants: C, V, L and the rows a CTA takes (one pass).
struct Q8Var {
  int C, V, L;
  void (*kernel)(const std::int8_t*, const float*, const __half*, int, int, float*);
  int chunk() const { return kThreads / (C / V) * L; }
};
const Q8Var kQ8Vars[] = {
    {64, 8, 16, q8_kernel<64, 8, 16>},      // the engine's int8 kernel (s34): 64 B a row segment
    {128, 8, 16, q8_kernel<128, 8, 16>},    // 128 B segments of 8-byte loads
    {64, 16, 8, q8_kernel<64, 16, 8>},      // 16-byte loads, 4 threads a 64 B segment
    {128, 16, 8, q8_kernel<128, 16, 8>},    // 16-byte loads, 128 B segments
    {128, 16, 16, q8_kernel<128, 16, 16>},  // the same, twice the loads in flight
    {256, 16, 8, q8_kernel<256, 16, 8>},    // 256 B segments
    {256, 16, 16, q8_kernel<256, 16, 16>},
};

// Weight-only int8 on the tensor cores: y^T = W^T x^T as mma.m16n8k16 (f16 in, f32 sums), the
// A operand a 16-column tile of W^T converted in registers, B the x rows (8; row 0 here), so a
// weight costs one conversion instruction and an eighth of an mma instead of 3+ instructions.
// W is stored pre-shuffled (shuffle_tc below): [N / 16][K / 32][32 lanes][16 bytes], each lane's
// 16 bytes its A fragments of two k-steps in register order, so a warp's load is 512 contiguous
// bytes. Bytes to f16: (q ^ 0x80) in a half's low mantissa bits (1024 + u, PRMT), minus 1152
// (HSUB2), exact. Scales [K / 64, N] as before: a group's 4 k-steps summed, then scaled once.
// A CTA: NT column tiles x (8 / NT) warps along k, each warp 2 L k-steps (L 16-byte loads in
// flight a thread). Partials [splits][N].
__device__ __forceinline__ std::uint32_t q8x2_to_h2(std::uint32_t w, std::uint32_t sel) {
  const std::uint32_t h = __byte_perm(w ^ 0x80808080u, 0x64646464u, sel);
  std::uint32_t r;
  asm("sub.f16x2 %0, %1, %2;" : "=r"(r) : "r"(h), "r"(0x64806480u));  // 1152 = 0x6480
  return r;
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const std::uint32_t (&a)[4],
                                          std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int L, int NT>
__global__ void __launch_bounds__(kThreads)
    tc_kernel(const uint4* Wt, const float* scales, const __half* x, int K, int N,
              float* partials) {
  constexpr int kWarpsK = 8 / NT, kSteps = 2 * L, kChunk = kWarpsK * kSteps * 16;
  static_assert(kSteps % 4 == 0, "whole 64-row groups a warp");
  constexpr int kGroups = kSteps / 4;
  __shared__ __align__(16) __half xs[kChunk];
  __shared__ float red[kWarpsK][NT * 16];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int nt_local = warp % NT, wk = warp / NT;
  const int n_tiles = N / 16, steps = K / 16;
  const int nt = blockIdx.x * NT + nt_local;
  const int k0 = blockIdx.y * kChunk;
  const int step0 = k0 / 16 + wk * kSteps;
  const bool tile_in = nt < n_tiles;
  uint4 w[L];
#pragma unroll
  for (int i = 0; i < L; ++i) {
    const int st = step0 + 2 * i;
    w[i] = tile_in && st < steps
               ? ld_nc(Wt + (static_cast<std::int64_t>(nt) * (steps / 2) + st / 2) * 32 + lane)
               : make_uint4(0, 0, 0, 0);
  }
  float s_lo[kGroups], s_hi[kGroups];
#pragma unroll
  for (int q = 0; q < kGroups; ++q) {
    const int kg = (step0 + 4 * q) / 4, n = nt * 16 + g;
    const bool in = tile_in && kg < K / 64;
    s_lo[q] = in ? scales[static_cast<std::int64_t>(kg) * N + n] : 0.0f;
    s_hi[q] = in ? scales[static_cast<std::int64_t>(kg) * N + n + 8] : 0.0f;
  }
  for (int i = threadIdx.x; i < kChunk; i += kThreads) {
    xs[i] = k0 + i < K ? x[k0 + i] : __float2half(0.0f);
  }
  __syncthreads();
  float acc[4] = {};
#pragma unroll
  for (int q = 0; q < kGroups; ++q) {
    float pa[4] = {};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int step = 4 * q + j;
      const uint4& v = w[step / 2];
      const std::uint32_t w0 = step % 2 ? v.z : v.x, w1 = step % 2 ? v.w : v.y;
      const std::uint32_t a[4] = {q8x2_to_h2(w0, 0x4140), q8x2_to_h2(w0, 0x4342),
                                  q8x2_to_h2(w1, 0x4140), q8x2_to_h2(w1, 0x4342)};
      // B: x row g (only row 0 here) at this k-step's k 2t, 2t+1 and 2t+8, 2t+9.
      const __half* xk = xs + (wk * kSteps + step) * 16;
      const std::uint32_t b0 = g == 0 ? *reinterpret_cast<const std::uint32_t*>(xk + 2 * t) : 0u;
      const std::uint32_t b1 =
          g == 0 ? *reinterpret_cast<const std::uint32_t*>(xk + 8 + 2 * t) : 0u;
      mma_16816(pa, a, b0, b1);
    }
    acc[0] = fmaf(pa[0], s_lo[q], acc[0]);  // (n g, x row 2t)
    acc[2] = fmaf(pa[2], s_hi[q], acc[2]);  // (n g + 8, x row 2t)
  }
  if (t == 0) {  // x row 0
    red[wk][nt_local * 16 + g] = acc[0];
    red[wk][nt_local * 16 + g + 8] = acc[2];
  }
  __syncthreads();
  if (threadIdx.x < NT * 16) {
    float s = 0.0f;
    for (int r = 0; r < kWarpsK; ++r) s += red[r][threadIdx.x];
    const int n = blockIdx.x * NT * 16 + threadIdx.x;
    if (n < N) partials[static_cast<std::int64_t>(blockIdx.y) * N + n] = s;
  }
}

// q [K, N] int8 into tc_kernel's order (K a multiple of 32, N of 16).
std::vector<std::int8_t> shuffle_tc(const std::vector<std::int8_t>& q, int K, int N) {
  std::vector<std::int8_t> out(q.size());
  std::size_t o = 0;
  for (int nt = 0; nt < N / 16; ++nt) {
    for (int s2 = 0; s2 < K / 32; ++s2) {
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        for (int b = 0; b < 16; ++b) {
          const int step = 2 * s2 + b / 8, reg = (b % 8) / 2, h = b % 2;
          const int n = nt * 16 + g + (reg % 2) * 8;
          const int k = step * 16 + 2 * t + h + (reg / 2) * 8;
          out[o++] = q[static_cast<std::size_t>(k) * N + n];
        }
      }
    }
  }
  return out;
}

struct TcVar {
  int L, NT;
  void (*kernel)(const uint4*, const float*, const __half*, int, int, float*);
  int chunk() const { return 8 / NT * 2 * L * 16; }
};
const TcVar kTcVars[] = {
    {2, 1, tc_kernel<2, 1>}, {4, 1, tc_kernel<4, 1>}, {8, 1, tc_kernel<8, 1>},
    {2, 2, tc_kernel<2, 2>}, {4, 2, tc_kernel<4, 2>}, {2, 4, tc_kernel<2, 4>},
    {4, 8, tc_kernel<4, 8>},  // 128 columns (a warp each) x 128 rows
    {8, 8, tc_kernel<8, 8>},  // 128 columns x 256 rows: the engine's int8 slice and chunk
};

// us a launch of launch(copy), timed as a CUDA graph of `reps` launches cycling through `copies`
// copies of W (best of 3 replays, after one untimed).
template <typename Launch>
double time_graph(cudaStream_t st, cudaEvent_t e0, cudaEvent_t e1, int reps, int copies,
                  const Launch& launch) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < reps; ++i) launch(i % copies);
  CK(cudaStreamEndCapture(st, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, st));
  float best = 1e30f;
  for (int t = 0; t < 3; ++t) {
    CK(cudaEventRecord(e0, st));
    CK(cudaGraphLaunch(ge, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms = 0.0f;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    best = std::min(best, ms);
  }
  CK(cudaGraphExecDestroy(ge));
  CK(cudaGraphDestroy(g));
  return best * 1000.0 / reps;
}

// The largest |sum over splits of the partials [splits][N] - ref[n]|.
double partials_error(const float* dpart, int splits, int N, const std::vector<double>& ref) {
  std::vector<float> hp(static_cast<std::size_t>(splits) * N);
  CK(cudaMemcpy(hp.data(), dpart, hp.size() * 4, cudaMemcpyDeviceToHost));
  double err = 0.0;
  for (int n = 0; n < N; ++n) {
    double s = 0.0;
    for (int q = 0; q < splits; ++q) s += hp[static_cast<std::size_t>(q) * N + n];
    err = std::max(err, std::fabs(s - ref[n]));
  }
  return err;
}

struct Shape {
  const char* name;
  int K, N;
};

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 160;
  const bool q8_only = argc > 2 && std::string(argv[2]) == "q8";  // only the int8 variants
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  std::printf("# %s, %d SMs, L2 %d MB; us per linear (graph of %d launches), TB/s of W\n",
              prop.name, sms, prop.l2CacheSize >> 20, reps);
  const Shape shapes[] = {{"1558m c_attn", 1600, 4800}, {"1558m attn.proj", 1600, 1600},
                          {"1558m c_fc", 1600, 6400},   {"1558m mlp.proj", 6400, 1600},
                          {"124m c_attn", 768, 2304},   {"124m c_fc", 768, 3072},
                          {"124m mlp.proj", 3072, 768}};
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (const Shape& sh : shapes) {
    const std::int64_t elems = static_cast<std::int64_t>(sh.K) * sh.N;
    const std::int64_t bytes = elems * 2;
    const int copies = static_cast<int>(
        std::max<std::int64_t>(2, 8 * static_cast<std::int64_t>(prop.l2CacheSize) / bytes));
    std::vector<__half> hw(elems), hwt(elems), hx(sh.K);
    std::mt19937 rng(1234 + sh.K + sh.N);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& v : hw) v = __float2half(u(rng));
    for (auto& v : hx) v = __float2half(u(rng));
    for (int k = 0; k < sh.K; ++k)
      for (int n = 0; n < sh.N; ++n)
        hwt[static_cast<std::int64_t>(n) * sh.K + k] = hw[static_cast<std::int64_t>(k) * sh.N + n];
    std::vector<double> ref(sh.N, 0.0);
    for (int k = 0; k < sh.K; ++k)
      for (int n = 0; n < sh.N; ++n)
        ref[n] += static_cast<double>(__half2float(hx[k])) *
                  __half2float(hw[static_cast<std::int64_t>(k) * sh.N + n]);
    __half *dw, *dwt, *dx;
    CK(cudaMalloc(&dw, bytes * copies));
    CK(cudaMalloc(&dwt, bytes * copies));
    CK(cudaMalloc(&dx, sh.K * 2));
    for (int c = 0; c < copies; ++c) {
      CK(cudaMemcpy(dw + c * elems, hw.data(), bytes, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(dwt + c * elems, hwt.data(), bytes, cudaMemcpyHostToDevice));
    }
    CK(cudaMemcpy(dx, hx.data(), sh.K * 2, cudaMemcpyHostToDevice));
    float* dpart;
    const std::int64_t part_cap = static_cast<std::int64_t>(sh.K) * sh.N / 8 + 4096;
    CK(cudaMalloc(&dpart, part_cap * 4));

    // Launches the variant on copy c; returns the splits of its partials (0: the read roofline).
    struct Var {
      std::string name;
      int kind, C, chunk;  // kind 0 read, 1 slice, 2 t
    };
    std::vector<Var> vars;
    vars.push_back({"read", 0, 0, 0});
    for (int C : {64, 128, 256, 512}) {
      const int pass = (kThreads / (C / 8)) * kLoads;
      for (int passes : {1, 2, 4}) {
        const int chunk = pass * passes;
        if (chunk > sh.K * 2 && passes > 1) continue;
        vars.push_back({"s" + std::to_string(C) + " p" + std::to_string(passes), 1, C, chunk});
      }
    }
    for (int splits : {1, 2, 4}) {
      const int chunk = ((sh.K + splits - 1) / splits + 7) / 8 * 8;
      vars.push_back({"t k/" + std::to_string(splits), 2, 0, chunk});
    }
    for (const Var& v : vars) {
      if (q8_only) break;
      int splits = 0;
      auto launch = [&](int c) {
        if (v.kind == 0) {
          read_kernel<<<sms * 8, kThreads, 0, st>>>(reinterpret_cast<const uint4*>(dw + c * elems),
                                                    elems / 8, dpart);
        } else if (v.kind == 1) {
          splits = (sh.K + v.chunk - 1) / v.chunk;
          dim3 grid((sh.N + v.C - 1) / v.C, splits);
          const __half* w = dw + c * elems;
          if (v.C == 64)
            slice_kernel<64><<<grid, kThreads, 0, st>>>(w, dx, sh.K, sh.N, v.chunk, dpart);
          if (v.C == 128)
            slice_kernel<128><<<grid, kThreads, 0, st>>>(w, dx, sh.K, sh.N, v.chunk, dpart);
          if (v.C == 256)
            slice_kernel<256><<<grid, kThreads, 0, st>>>(w, dx, sh.K, sh.N, v.chunk, dpart);
          if (v.C == 512)
            slice_kernel<512><<<grid, kThreads, 0, st>>>(w, dx, sh.K, sh.N, v.chunk, dpart);
        } else {
          splits = (sh.K + v.chunk - 1) / v.chunk;
          const int warps = sh.N * splits;
          t_kernel<<<(warps + 7) / 8, kThreads, 0, st>>>(dwt + c * elems, dx, sh.K, sh.N, v.chunk,
                                                         dpart);
        }
      };
      if (v.kind == 1 &&
          static_cast<std::int64_t>((sh.K + v.chunk - 1) / v.chunk) * sh.N > part_cap)
        continue;
      for (int i = 0; i < copies; ++i) launch(i);
      CK(cudaStreamSynchronize(st));
      CK(cudaGetLastError());
      // Check the partials of the last launch.
      const double err = v.kind != 0 ? partials_error(dpart, splits, sh.N, ref) : 0.0;
      const double us = time_graph(st, e0, e1, reps, copies, launch);
      std::printf("%-16s K%5d N%5d %-9s splits %3d  %7.2f us  %5.2f TB/s  max err %.2e\n", sh.name,
                  sh.K, sh.N, v.name.c_str(), splits, us, bytes / us * 1e-6, err);
    }
    CK(cudaFree(dw));
    CK(cudaFree(dwt));

    // Weight-only int8: random q in [-127, 127] and scales in [1, 2) / 127; the reference is the
    // fp64 sum of x q s.
    const std::int64_t qbytes = elems, sbytes = elems / 64 * 4;
    const int qcopies = static_cast<int>(std::max<std::int64_t>(
        2, 8 * static_cast<std::int64_t>(prop.l2CacheSize) / (qbytes + sbytes)));
    std::vector<std::int8_t> hq(elems);
    std::vector<float> hs(elems / 64);
    std::uniform_int_distribution<int> uq(-127, 127);
    for (auto& v : hq) v = static_cast<std::int8_t>(uq(rng));
    for (auto& v : hs) v = (1.5f + 0.5f * u(rng)) / 127.0f;
    std::vector<double> qref(sh.N, 0.0);
    for (int k = 0; k < sh.K; ++k)
      for (int n = 0; n < sh.N; ++n)
        qref[n] += static_cast<double>(__half2float(hx[k])) *
                   hq[static_cast<std::int64_t>(k) * sh.N + n] *
                   hs[static_cast<std::int64_t>(k / 64) * sh.N + n];
    std::int8_t* dq;
    float* ds;
    CK(cudaMalloc(&dq, qbytes * qcopies));
    CK(cudaMalloc(&ds, sbytes * qcopies));
    for (int c = 0; c < qcopies; ++c) {
      CK(cudaMemcpy(dq + c * qbytes, hq.data(), qbytes, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(ds + c * (sbytes / 4), hs.data(), sbytes, cudaMemcpyHostToDevice));
    }
    for (int vi = -1; vi < static_cast<int>(sizeof(kQ8Vars) / sizeof(kQ8Vars[0])); ++vi) {
      int splits = 0;
      auto launch = [&](int c) {
        if (vi < 0) {  // the roofline of the int8 bytes
          read_kernel<<<sms * 8, kThreads, 0, st>>>(reinterpret_cast<const uint4*>(dq + c * qbytes),
                                                    qbytes / 16, dpart);
          return;
        }
        const Q8Var& v = kQ8Vars[vi];
        splits = (sh.K + v.chunk() - 1) / v.chunk();
        const dim3 grid((sh.N + v.C - 1) / v.C, splits);
        v.kernel<<<grid, kThreads, 0, st>>>(dq + c * qbytes, ds + c * (sbytes / 4), dx, sh.K, sh.N,
                                            dpart);
      };
      for (int i = 0; i < qcopies; ++i) launch(i);
      CK(cudaStreamSynchronize(st));
      CK(cudaGetLastError());
      const double err = vi >= 0 ? partials_error(dpart, splits, sh.N, qref) : 0.0;
      const double us = time_graph(st, e0, e1, reps, qcopies, launch);
      const std::string name = vi < 0 ? std::string("q8 read")
                                      : "q" + std::to_string(kQ8Vars[vi].C) + " v" +
                                            std::to_string(kQ8Vars[vi].V) + " l" +
                                            std::to_string(kQ8Vars[vi].L);
      std::printf("%-16s K%5d N%5d %-12s splits %3d  %7.2f us  %5.2f TB/s  max err %.2e\n", sh.name,
                  sh.K, sh.N, name.c_str(), splits, us, (qbytes + sbytes) / us * 1e-6, err);
    }

    // The same int8 weights pre-shuffled for the tensor-core variants.
    const std::vector<std::int8_t> hqt = shuffle_tc(hq, sh.K, sh.N);
    for (int c = 0; c < qcopies; ++c) {
      CK(cudaMemcpy(dq + c * qbytes, hqt.data(), qbytes, cudaMemcpyHostToDevice));
    }
    for (const TcVar& v : kTcVars) {
      const int splits = (sh.K + v.chunk() - 1) / v.chunk();
      const dim3 grid((sh.N / 16 + v.NT - 1) / v.NT, splits);
      auto launch = [&](int c) {
        v.kernel<<<grid, kThreads, 0, st>>>(reinterpret_cast<const uint4*>(dq + c * qbytes),
                                            ds + c * (sbytes / 4), dx, sh.K, sh.N, dpart);
      };
      for (int i = 0; i < qcopies; ++i) launch(i);
      CK(cudaStreamSynchronize(st));
      CK(cudaGetLastError());
      const double err = partials_error(dpart, splits, sh.N, qref);
      const double us = time_graph(st, e0, e1, reps, qcopies, launch);
      const std::string name = "tc l" + std::to_string(v.L) + " nt" + std::to_string(v.NT);
      std::printf("%-16s K%5d N%5d %-12s splits %3d  %7.2f us  %5.2f TB/s  max err %.2e\n", sh.name,
                  sh.K, sh.N, name.c_str(), splits, us, (qbytes + sbytes) / us * 1e-6, err);
    }
    CK(cudaFree(dq));
    CK(cudaFree(ds));
    CK(cudaFree(dx));
    CK(cudaFree(dpart));
  }
  return 0;
}
