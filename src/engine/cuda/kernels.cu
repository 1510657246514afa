// The GPT-2 engine's kernels: embedding, layernorm and sampling. Element-wise and row-wise work,
// memory bound; fp32 math on f16 / bf16 storage.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <string>

#include "engine/cuda/kernels.h"

namespace gpuattn::engine::cuda {
namespace {

void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) {
    throw Error(ErrorCode::cuda_error, std::string("gpuattn engine: ") + what +
                                           " launch failed: " + cudaGetErrorString(e));
  }
}

__device__ inline float to_f(__half v) {
  return __half2float(v);
}
__device__ inline float to_f(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <typename T>
__device__ inline T from_f(float v);
template <>
__device__ inline __half from_f<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ inline __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

template <typename T>
__global__ void embed_kernel(const std::int32_t* tokens, const std::int32_t* positions, int C,
                             const T* wte, const T* wpe, T* out) {
  const int r = blockIdx.x;
  const T* a = wte + static_cast<std::int64_t>(tokens[r]) * C;
  const T* b = wpe + static_cast<std::int64_t>(positions[r]) * C;
  T* o = out + static_cast<std::int64_t>(r) * C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = from_f<T>(to_f(a[c]) + to_f(b[c]));
}

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One warp a row, two passes over the row (mean, then variance about it: no cancellation).
template <typename T>
__global__ void layernorm_kernel(const T* x, const std::int32_t* src_rows, int rows, int C,
                                 const T* w, const T* b, float eps, T* out) {
  const int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const T* xr = x + static_cast<std::int64_t>(src_rows ? src_rows[r] : r) * C;
  float s = 0.0f;
  for (int c = lane; c < C; c += 32) s += to_f(xr[c]);
  const float mean = warp_sum(s) / static_cast<float>(C);
  float v = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const float d = to_f(xr[c]) - mean;
    v += d * d;
  }
  const float rstd = rsqrtf(warp_sum(v) / static_cast<float>(C) + eps);
  T* o = out + static_cast<std::int64_t>(r) * C;
  for (int c = lane; c < C; c += 32) {
    o[c] = from_f<T>((to_f(xr[c]) - mean) * rstd * to_f(w[c]) + to_f(b[c]));
  }
}

constexpr int kSampleThreads = 1024;

// Block-wide reductions for kSampleThreads threads; `scratch` holds 32 entries.
template <typename V, typename Op>
__device__ V block_reduce(V v, Op op, V* scratch) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = scratch[lane];
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// (score, index) argmax with ties to the lower index, packed for one shuffle reduction.
struct Best {
  float score;
  int index;
};
__device__ inline Best better(Best a, Best b) {
  if (b.index < 0) return a;
  if (a.index < 0) return b;
  return (b.score > a.score || (b.score == a.score && b.index < a.index)) ? b : a;
}
__device__ inline Best shfl_best(Best v, int o) {
  Best r;
  r.score = __shfl_xor_sync(0xffffffffu, v.score, o);
  r.index = __shfl_xor_sync(0xffffffffu, v.index, o);
  return r;
}
__device__ Best block_best(Best v, Best* scratch) {
  for (int o = 16; o > 0; o >>= 1) v = better(v, shfl_best(v, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = scratch[lane];
  for (int o = 16; o > 0; o >>= 1) v = better(v, shfl_best(v, o));
  return v;
}

// One block a row; sampling.h's definition (sample_row_host) on the device. The top_k and top_p
// thresholds are found by bisection over the floats' ordered bit patterns: 32 counting (or mass)
// passes over the row, which stays in L1/L2.
__global__ void __launch_bounds__(kSampleThreads)
    sample_kernel(const float* logits, int V, const SampleRow* params, std::int32_t* tokens) {
  __shared__ float fscratch[32];
  __shared__ int iscratch[32];
  __shared__ Best bscratch[32];
  const SampleRow p = params[blockIdx.x];
  const float* row = logits + static_cast<std::int64_t>(blockIdx.x) * V;
  auto add_f = [](float a, float b) { return a + b; };
  auto add_i = [](int a, int b) { return a + b; };
  auto max_f = [](float a, float b) { return fmaxf(a, b); };
  if (p.temperature <= 0.0f) {
    Best best{0.0f, -1};
    for (int i = threadIdx.x; i < V; i += kSampleThreads) best = better(best, Best{row[i], i});
    best = block_best(best, bscratch);
    if (threadIdx.x == 0) tokens[blockIdx.x] = best.index;
    return;
  }
  const float T = p.temperature;
  // Kept: ordered(z) >= lo.
  long long lo = INT_MIN;
  if (p.top_k > 0 && p.top_k < V) {
    long long hi = INT_MAX;
    while (lo < hi) {
      const long long mid = lo + (hi - lo + 1) / 2;
      int count = 0;
      for (int i = threadIdx.x; i < V; i += kSampleThreads) {
        count += ordered_bits(row[i] / T) >= mid;
      }
      if (block_reduce(count, add_i, iscratch) >= p.top_k) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
  }
  if (p.top_p < 1.0f) {
    float zmax = -INFINITY;
    for (int i = threadIdx.x; i < V; i += kSampleThreads) zmax = fmaxf(zmax, row[i] / T);
    zmax = block_reduce(zmax, max_f, fscratch);
    auto mass = [&](long long t) {
      float m = 0.0f;
      for (int i = threadIdx.x; i < V; i += kSampleThreads) {
        const float z = row[i] / T;
        if (ordered_bits(z) >= t) m += expf(z - zmax);
      }
      return block_reduce(m, add_f, fscratch);
    };
    const float goal = p.top_p * mass(lo);
    long long hi = ordered_bits(zmax);
    while (lo < hi) {
      const long long mid = lo + (hi - lo + 1) / 2;
      if (mass(mid) >= goal) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
  }
  Best best{0.0f, -1};
  for (int i = threadIdx.x; i < V; i += kSampleThreads) {
    const float z = row[i] / T;
    if (ordered_bits(z) >= lo) best = better(best, Best{z - logf(-logf(uniform01(p, i))), i});
  }
  best = block_best(best, bscratch);
  if (threadIdx.x == 0) tokens[blockIdx.x] = best.index;
}

}  // namespace

void embed(DType dt, const std::int32_t* tokens, const std::int32_t* positions, int rows,
           const void* wte, const void* wpe, int C, void* out, void* stream) {
  if (rows == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  if (dt == DType::bf16) {
    embed_kernel<<<rows, 256, 0, s>>>(tokens, positions, C, static_cast<const __nv_bfloat16*>(wte),
                                      static_cast<const __nv_bfloat16*>(wpe),
                                      static_cast<__nv_bfloat16*>(out));
  } else {
    embed_kernel<<<rows, 256, 0, s>>>(tokens, positions, C, static_cast<const __half*>(wte),
                                      static_cast<const __half*>(wpe), static_cast<__half*>(out));
  }
  check_launch("embed");
}

void layernorm(DType dt, const void* x, const std::int32_t* src_rows, int rows, int C,
               const void* w, const void* b, float eps, void* out, void* stream) {
  if (rows == 0) return;
  constexpr int kRowsPerBlock = 4;
  const int blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  auto s = static_cast<cudaStream_t>(stream);
  if (dt == DType::bf16) {
    layernorm_kernel<<<blocks, 32 * kRowsPerBlock, 0, s>>>(
        static_cast<const __nv_bfloat16*>(x), src_rows, rows, C,
        static_cast<const __nv_bfloat16*>(w), static_cast<const __nv_bfloat16*>(b), eps,
        static_cast<__nv_bfloat16*>(out));
  } else {
    layernorm_kernel<<<blocks, 32 * kRowsPerBlock, 0, s>>>(
        static_cast<const __half*>(x), src_rows, rows, C, static_cast<const __half*>(w),
        static_cast<const __half*>(b), eps, static_cast<__half*>(out));
  }
  check_launch("layernorm");
}

void sample(const float* logits, int rows, int V, const SampleRow* params, std::int32_t* tokens,
            void* stream) {
  if (rows == 0) return;
  sample_kernel<<<rows, kSampleThreads, 0, static_cast<cudaStream_t>(stream)>>>(logits, V, params,
                                                                                tokens);
  check_launch("sample");
}

}  // namespace gpuattn::engine::cuda
