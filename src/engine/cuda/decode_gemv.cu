// The decode steps' linear layers, fused: out = act(LN(x) W + bias) (+ residual) for at most
// kDecodeGemvRows rows, one kernel where the general path runs a layernorm and a cuBLASLt GEMM
// (with a split-K reduce for K = 3072). At one to four rows these are GEMVs over 1-5 MB of
// weights: latency bound, so the fusion (one launch, the layernorm recomputed per block from a
// 768-element row) is the point, not the arithmetic.
//
// A block owns kCols output columns and every k: its 256 threads are 2 column groups (8 columns,
// one 16-byte load of W a row) x 128 k-slices; partial sums meet through warp shuffles and one
// shared-memory pass. W is [K, N] row-major (HF's Conv1D), so a warp reads 16 rows x 32 bytes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>

#include "engine/cuda/kernels.h"

namespace gpuattn::engine::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kGroups = 2;                   // column groups of 8 a block
constexpr int kCols = 8 * kGroups;           // output columns a block
constexpr int kSlices = kThreads / kGroups;  // k-slices a block
constexpr int kWarps = kThreads / 32;

__device__ inline float to_float(__half v) {
  return __half2float(v);
}
__device__ inline float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <typename T>
__device__ inline T from_float(float v);
template <>
__device__ inline __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

__device__ inline float gelu_tanh(float v) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
}

__device__ inline float block_sum(float v, float* scratch) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float t = 0.0f;
#pragma unroll
  for (int i = 0; i < kWarps; ++i) t += scratch[i];
  return t;
}

struct GemvArgs {
  const void* x;
  const void* ln_w;  // nullptr: no layernorm
  const void* ln_b;
  float eps;
  const void* W;
  const void* bias;
  const void* residual;  // nullptr: none; may alias out
  void* out;
  int rows, K, N;
  bool gelu;
};

// Dynamic shared memory: the rows of x (layernormed), fp32 [rows, K].
template <typename T>
__global__ void __launch_bounds__(kThreads) decode_gemv_kernel(const GemvArgs a) {
  extern __shared__ float xs[];
  __shared__ float scratch[kWarps];
  __shared__ float partial[kWarps][kGroups][kDecodeGemvRows][8];
  const T* x = static_cast<const T*>(a.x);
  const int K = a.K, N = a.N, rows = a.rows;
  for (int r = 0; r < rows; ++r) {
    const T* xr = x + static_cast<std::int64_t>(r) * K;
    if (a.ln_w) {
      float s = 0.0f;
      for (int k = threadIdx.x; k < K; k += kThreads) s += to_float(xr[k]);
      const float mean = block_sum(s, scratch) / static_cast<float>(K);
      float q = 0.0f;
      for (int k = threadIdx.x; k < K; k += kThreads) {
        const float d = to_float(xr[k]) - mean;
        q += d * d;
      }
      const float rstd = rsqrtf(block_sum(q, scratch) / static_cast<float>(K) + a.eps);
      const T* g = static_cast<const T*>(a.ln_w);
      const T* b = static_cast<const T*>(a.ln_b);
      for (int k = threadIdx.x; k < K; k += kThreads) {
        // Rounded to T as the two-step path's layernorm output is.
        xs[r * K + k] = to_float(
            from_float<T>((to_float(xr[k]) - mean) * rstd * to_float(g[k]) + to_float(b[k])));
      }
    } else {
      for (int k = threadIdx.x; k < K; k += kThreads) xs[r * K + k] = to_float(xr[k]);
    }
  }
  __syncthreads();

  const int group = threadIdx.x % kGroups, slice = threadIdx.x / kGroups;
  const int n0 = blockIdx.x * kCols + group * 8;
  float acc[kDecodeGemvRows][8] = {};
  if (n0 < N) {
    const T* w = static_cast<const T*>(a.W) + n0;
#pragma unroll 4
    for (int k = slice; k < K; k += kSlices) {
      const uint4 u = *reinterpret_cast<const uint4*>(w + static_cast<std::int64_t>(k) * N);
      const T* h = reinterpret_cast<const T*>(&u);
      float wf[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) wf[j] = to_float(h[j]);
#pragma unroll
      for (int r = 0; r < kDecodeGemvRows; ++r) {
        if (r < rows) {
          const float xv = xs[r * K + k];
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[r][j] += xv * wf[j];
        }
      }
    }
  }
  // Lanes of one column group differ in slice only: sum them (xor offsets keep the group).
#pragma unroll
  for (int r = 0; r < kDecodeGemvRows; ++r) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      float v = acc[r][j];
      for (int o = kGroups; o < 32; o <<= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      acc[r][j] = v;
    }
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane < kGroups) {
#pragma unroll
    for (int r = 0; r < kDecodeGemvRows; ++r) {
#pragma unroll
      for (int j = 0; j < 8; ++j) partial[warp][lane][r][j] = acc[r][j];
    }
  }
  __syncthreads();
  // One thread an output (row, column): kGroups x rows x 8 <= kThreads.
  const int t = threadIdx.x;
  const int g = t / (kDecodeGemvRows * 8), r = (t / 8) % kDecodeGemvRows, j = t % 8;
  if (g < kGroups && r < rows) {
    const int n = blockIdx.x * kCols + g * 8 + j;
    if (n < N) {
      float v = 0.0f;
#pragma unroll
      for (int i = 0; i < kWarps; ++i) v += partial[i][g][r][j];
      v += to_float(static_cast<const T*>(a.bias)[n]);
      if (a.gelu) v = gelu_tanh(v);
      const std::int64_t at = static_cast<std::int64_t>(r) * N + n;
      if (a.residual) v += to_float(static_cast<const T*>(a.residual)[at]);
      static_cast<T*>(a.out)[at] = from_float<T>(v);
    }
  }
}

}  // namespace

void decode_gemv(DType dt, const void* x, const void* ln_w, const void* ln_b, float eps,
                 const void* W, const void* bias, const void* residual, void* out, int rows, int K,
                 int N, bool gelu, void* stream) {
  if (rows == 0) return;
  if (rows > kDecodeGemvRows || N % 8 != 0 || K > kDecodeGemvMaxK) {
    throw Error(ErrorCode::invalid_argument,
                "gpuattn engine: decode_gemv takes at most " + std::to_string(kDecodeGemvRows) +
                    " rows, N a multiple of 8 and K <= " + std::to_string(kDecodeGemvMaxK) +
                    ", not " + std::to_string(rows) + " x " + std::to_string(K) + " x " +
                    std::to_string(N));
  }
  const GemvArgs a{x, ln_w, ln_b, eps, W, bias, residual, out, rows, K, N, gelu};
  const std::size_t smem = sizeof(float) * static_cast<std::size_t>(rows) * K;
  const int blocks = (N + kCols - 1) / kCols;
  auto s = static_cast<cudaStream_t>(stream);
  const int max_smem = static_cast<int>(sizeof(float)) * kDecodeGemvRows * kDecodeGemvMaxK;
  if (dt == DType::bf16) {
    static const cudaError_t once = cudaFuncSetAttribute(
        decode_gemv_kernel<__nv_bfloat16>, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem);
    (void)once;
    decode_gemv_kernel<__nv_bfloat16><<<blocks, kThreads, smem, s>>>(a);
  } else {
    static const cudaError_t once = cudaFuncSetAttribute(
        decode_gemv_kernel<__half>, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem);
    (void)once;
    decode_gemv_kernel<__half><<<blocks, kThreads, smem, s>>>(a);
  }
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    throw Error(ErrorCode::cuda_error,
                std::string("gpuattn engine: decode_gemv launch failed: ") + cudaGetErrorString(e));
  }
}

}  // namespace gpuattn::engine::cuda
