// The GPT-2 engine's kernels: embedding, layernorm and sampling. Element-wise and row-wise work,
// memory bound; fp32 math on f16 / bf16 storage. Each is launched with programmatic dependent
// launch (cuda/pdl.h), waits for the kernel ahead at its start and then lets the next be
// scheduled: the decode kernel behind the k/v scatter (asked for with AttentionArgs::pdl) starts
// early, 9-15 us a B1 step. These kernels' own PDL launches measured no gain (most follow a
// cuBLASLt kernel, which is launched plainly).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <string>
#include <utility>

#include "cuda/half_convert.cuh"
#include "cuda/pdl.h"
#include "cuda/ptx.cuh"
#include "engine/cuda/kernels.h"

namespace gpuattn::engine::cuda {
namespace {

// Launched through launch(): wait for the kernel ahead, then let the next one be scheduled.
__device__ __forceinline__ void chain_start() {
  ptx::griddep_wait();
  ptx::griddep_launch_dependents();
}

template <typename... Params, typename... Args>
void launch(const char* what, void (*kernel)(Params...), int grid, int block, void* stream,
            Args&&... args) {
  const cudaError_t e = sm80::launch_pdl(
      kernel, dim3(static_cast<unsigned>(grid)), dim3(static_cast<unsigned>(block)), 0,
      static_cast<cudaStream_t>(stream), std::forward<Args>(args)...);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // reported here, not again by the next launch's check
    throw Error(ErrorCode::cuda_error, std::string("gpuattn engine: ") + what +
                                           " launch failed: " + cudaGetErrorString(e));
  }
}

using cvt::from_f;
using cvt::to_f;

template <typename T>
__global__ void embed_kernel(const std::int32_t* tokens, const std::int32_t* positions, int C,
                             const T* wte, const T* wpe, T* out) {
  chain_start();
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

// Eight 16-bit values <-> floats through one 16-byte access.
template <typename T>
__device__ inline void load8(const T* p, float (&f)[8]) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const T* h = reinterpret_cast<const T*>(&u);
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] = to_f(h[i]);
}
template <typename T>
__device__ inline void store8(T* p, const float (&f)[8]) {
  uint4 u;
  T* h = reinterpret_cast<T*>(&u);
#pragma unroll
  for (int i = 0; i < 8; ++i) h[i] = from_f<T>(f[i]);
  *reinterpret_cast<uint4*>(p) = u;
}

constexpr int kRowThreads = 128;
constexpr int kRowVectors = 4;  // 8-element vectors a thread: rows of up to 4096

__device__ inline float row_sum(float v, float* scratch) {
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by the previous sum
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float t = 0.0f;
#pragma unroll
  for (int i = 0; i < kRowThreads / 32; ++i) t += scratch[i];
  return t;
}

// One block a row, the row in registers (one 16-byte load a vector, all issued before any use):
// a decode step's single row costs one memory round trip, not one per element. Mean, then the
// variance about it (no cancellation).
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    layernorm_kernel(const T* x, const std::int32_t* src_rows, int C, const T* w, const T* b,
                     float eps, T* out) {
  __shared__ float scratch[kRowThreads / 32];
  chain_start();
  const int r = blockIdx.x;
  const T* xr = x + static_cast<std::int64_t>(src_rows ? src_rows[r] : r) * C;
  const int nvec = C / 8;
  float v[kRowVectors][8];
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < kRowVectors; ++i) {
    const int vi = threadIdx.x + i * kRowThreads;
    if (vi < nvec) {
      load8(xr + vi * 8, v[i]);
#pragma unroll
      for (int j = 0; j < 8; ++j) s += v[i][j];
    }
  }
  const float mean = row_sum(s, scratch) / static_cast<float>(C);
  float q = 0.0f;
#pragma unroll
  for (int i = 0; i < kRowVectors; ++i) {
    if (threadIdx.x + i * kRowThreads < nvec) {
#pragma unroll
      for (int j = 0; j < 8; ++j) q += (v[i][j] - mean) * (v[i][j] - mean);
    }
  }
  const float rstd = rsqrtf(row_sum(q, scratch) / static_cast<float>(C) + eps);
  T* o = out + static_cast<std::int64_t>(r) * C;
#pragma unroll
  for (int i = 0; i < kRowVectors; ++i) {
    const int vi = threadIdx.x + i * kRowThreads;
    if (vi < nvec) {
      float g[8], bb[8], y[8];
      load8(w + vi * 8, g);
      load8(b + vi * 8, bb);
#pragma unroll
      for (int j = 0; j < 8; ++j) y[j] = (v[i][j] - mean) * rstd * g[j] + bb[j];
      store8(o + vi * 8, y);
    }
  }
}

// Row r's k and v (16-byte vectors of its qkv row) into cache slot slots[r].
__global__ void __launch_bounds__(kRowThreads)
    scatter_kv_kernel(const std::uint16_t* qkv, int C, const std::int32_t* slots,
                      std::uint16_t* k_pool, std::uint16_t* v_pool) {
  chain_start();
  const int r = blockIdx.x;
  const std::uint16_t* row = qkv + static_cast<std::int64_t>(r) * 3 * C;
  const std::int64_t dst = static_cast<std::int64_t>(slots[r]) * C;
  for (int vi = threadIdx.x; vi < C / 8; vi += kRowThreads) {
    *reinterpret_cast<uint4*>(k_pool + dst + vi * 8) =
        *reinterpret_cast<const uint4*>(row + C + vi * 8);
    *reinterpret_cast<uint4*>(v_pool + dst + vi * 8) =
        *reinterpret_cast<const uint4*>(row + 2 * C + vi * 8);
  }
}

// The same into an FP8 E4M3 cache (KvCache::e4m3): each value rounded to nearest even from its
// fp32 value and saturated to +-448 (cvt.rn.satfinite, numeric.h's float_to_e4m3), 8 bytes a
// thread a vector.
__device__ inline uint2 e4m3x8(const float (&f)[8]) {
  std::uint32_t w[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const std::uint32_t lo =
        __nv_cvt_float2_to_fp8x2(make_float2(f[4 * h], f[4 * h + 1]), __NV_SATFINITE, __NV_E4M3);
    const std::uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(f[4 * h + 2], f[4 * h + 3]),
                                                      __NV_SATFINITE, __NV_E4M3);
    w[h] = lo | hi << 16;
  }
  return make_uint2(w[0], w[1]);
}
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    scatter_kv_e4m3_kernel(const T* qkv, int C, const std::int32_t* slots, std::uint8_t* k_pool,
                           std::uint8_t* v_pool) {
  chain_start();
  const int r = blockIdx.x;
  const T* row = qkv + static_cast<std::int64_t>(r) * 3 * C;
  const std::int64_t dst = static_cast<std::int64_t>(slots[r]) * C;
  for (int vi = threadIdx.x; vi < C / 8; vi += kRowThreads) {
    float k[8], v[8];
    load8(row + C + vi * 8, k);
    load8(row + 2 * C + vi * 8, v);
    *reinterpret_cast<uint2*>(k_pool + dst + vi * 8) = e4m3x8(k);
    *reinterpret_cast<uint2*>(v_pool + dst + vi * 8) = e4m3x8(v);
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

// f(value, index) over logits[begin, end) of one row (begin a multiple of 4), float4 loads four
// at a time per thread (issued before any use, so one pass costs a few memory round trips, not
// one per element). The row pitch is a multiple of 4: the pad past `end` is read but never passed
// on. Each thread sees its indices in increasing order.
template <typename F>
__device__ inline void for_each_logit(const float* row, int end, F&& f, int begin = 0) {
  const int n4 = (end + 3) / 4;
  const float4* r4 = reinterpret_cast<const float4*>(row);
  const int V = end;
  for (int base = begin / 4 + threadIdx.x; base < n4; base += 4 * kSampleThreads) {
    float4 q[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int i = base + j * kSampleThreads;
      if (i < n4) q[j] = r4[i];
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int i = base + j * kSampleThreads;
      if (i < n4) {
        const int e = 4 * i;
        f(q[j].x, e);
        if (e + 1 < V) f(q[j].y, e + 1);
        if (e + 2 < V) f(q[j].z, e + 2);
        if (e + 3 < V) f(q[j].w, e + 3);
      }
    }
  }
}

// Blocks (row, split) of a grid of `splits` blocks a row; sampling.h's definition
// (sample_row_host) on the device. A greedy row's argmax is split: block `split` takes its
// logits [split * span, (split + 1) * span) (span a multiple of 4), puts its best in
// partial[row * splits + split] and counts itself in counts[row]; the last of the row's blocks to
// count merges the partials in split order (ties to the lower id, as one block would), writes the
// token and sets the count back to 0 for the next call. One block reading a whole GPT-2 row
// (50,257 logits) took 8.2 us a B1 decode step (s42 call 1). A row drawn at a temperature is one
// block's (split 0; the others leave): the top_k and top_p thresholds are found by bisection over
// the floats' ordered bit patterns, 32 counting (or mass) passes over the row, which stays in
// L1/L2. With splits == 1, partial and counts are not touched (may be null). A row with a NaN or
// +inf logit, or every logit -inf, gets kBadLogits (a bad split's partial carries it).
__global__ void __launch_bounds__(kSampleThreads)
    sample_kernel(const float* logits, int V, int ld, const SampleRow* params, std::int32_t* tokens,
                  int splits, Best* partial, int* counts) {
  __shared__ float fscratch[32];
  __shared__ int iscratch[32];
  __shared__ Best bscratch[32];
  __shared__ bool last;
  chain_start();
  const int r = blockIdx.x, split = blockIdx.y;
  const SampleRow p = params[r];
  const float* row = logits + static_cast<std::int64_t>(r) * ld;
  auto add_f = [](float a, float b) { return a + b; };
  auto add_i = [](int a, int b) { return a + b; };
  auto max_f = [](float a, float b) { return fmaxf(a, b); };
  if (p.temperature <= 0.0f) {
    const int span = (V + 4 * splits - 1) / (4 * splits) * 4;
    const int begin = split * span, end = min(V, begin + span);
    // Each thread sees increasing indices: a strictly greater score alone replaces its best.
    Best best{-INFINITY, -1};
    int bad = 0;  // a NaN or +inf logit: the row cannot be drawn from (kBadLogits)
    for_each_logit(
        row, end,
        [&](float z, int i) {
          bad |= isnan(z) || z == INFINITY;
          if (z > best.score || best.index < 0) best = Best{z, i};
        },
        begin);
    best = block_best(best, bscratch);
    bad = block_reduce(bad, add_i, iscratch);
    if (splits == 1) {  // a best of -inf: every logit -inf
      if (threadIdx.x == 0) tokens[r] = bad || best.score == -INFINITY ? kBadLogits : best.index;
      return;
    }
    if (threadIdx.x == 0) {
      partial[r * splits + split] = bad ? Best{INFINITY, kBadLogits} : best;
      __threadfence();  // the partial before the count
      last = atomicAdd(&counts[r], 1) == splits - 1;
    }
    __syncthreads();
    if (!last) return;
    if (threadIdx.x < 32) {
      __threadfence();  // the other blocks' partials after their counts
      Best b{0.0f, -1};
      if (threadIdx.x < splits) {
        const Best* q = partial + r * splits + threadIdx.x;
        b.score = __ldcg(&q->score);
        b.index = __ldcg(&q->index);
      }
      const bool any_bad = __any_sync(0xffffffffu, b.index == kBadLogits);
      for (int o = 16; o > 0; o >>= 1) b = better(b, shfl_best(b, o));
      if (threadIdx.x == 0) {
        tokens[r] = any_bad || b.score == -INFINITY ? kBadLogits : b.index;
        counts[r] = 0;
      }
    }
    return;
  }
  if (split != 0) return;
  const float T = p.temperature;
  // z = (logit - lmax) / T <= 0: no temperature overflows it (a tiny one draws among the maxima).
  float lmax = -INFINITY;
  int bad = 0;
  for_each_logit(row, V, [&](float l, int) {
    bad |= isnan(l) || l == INFINITY;
    lmax = fmaxf(lmax, l);
  });
  lmax = block_reduce(lmax, max_f, fscratch);
  bad = block_reduce(bad, add_i, iscratch);
  if (bad || lmax == -INFINITY) {
    if (threadIdx.x == 0) tokens[r] = kBadLogits;
    return;
  }
  // Kept: ordered(z) >= lo.
  long long lo = INT_MIN;
  if (p.top_k > 0 && p.top_k < V) {
    long long hi = INT_MAX;
    while (lo < hi) {
      const long long mid = lo + (hi - lo + 1) / 2;
      int count = 0;
      for_each_logit(row, V, [&](float l, int) { count += ordered_bits((l - lmax) / T) >= mid; });
      if (block_reduce(count, add_i, iscratch) >= p.top_k) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
  }
  if (p.top_p < 1.0f) {
    float zmax = -INFINITY;
    for_each_logit(row, V, [&](float l, int) { zmax = fmaxf(zmax, (l - lmax) / T); });
    zmax = block_reduce(zmax, max_f, fscratch);
    auto mass = [&](long long t) {
      float m = 0.0f;
      for_each_logit(row, V, [&](float l, int) {
        const float z = (l - lmax) / T;
        if (ordered_bits(z) >= t) m += expf(z - zmax);
      });
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
  for_each_logit(row, V, [&](float l, int i) {
    const float z = (l - lmax) / T;
    if (ordered_bits(z) >= lo) best = better(best, Best{z - logf(-logf(uniform01(p, i))), i});
  });
  best = block_best(best, bscratch);
  if (threadIdx.x == 0) tokens[r] = best.index;
}

}  // namespace

void embed(DType dt, const std::int32_t* tokens, const std::int32_t* positions, int rows,
           const void* wte, const void* wpe, int C, void* out, void* stream) {
  if (rows == 0) return;
  if (dt == DType::bf16) {
    launch("embed", embed_kernel<__nv_bfloat16>, rows, 256, stream, tokens, positions, C,
           static_cast<const __nv_bfloat16*>(wte), static_cast<const __nv_bfloat16*>(wpe),
           static_cast<__nv_bfloat16*>(out));
  } else {
    launch("embed", embed_kernel<__half>, rows, 256, stream, tokens, positions, C,
           static_cast<const __half*>(wte), static_cast<const __half*>(wpe),
           static_cast<__half*>(out));
  }
}

namespace {

// A row of C features in one block's 16-byte vectors: C a multiple of 8, at most 4096 (a larger C
// would leave the row's tail out of the sums and unwritten).
void check_row_width(const char* what, int C) {
  if (C < 8 || C % 8 != 0 || C > 4096) {
    throw Error(ErrorCode::invalid_argument,
                std::string("gpuattn engine: ") + what + " of C = " + std::to_string(C) +
                    " features: C must be a multiple of 8 in [8, 4096]");
  }
}

}  // namespace

void layernorm(DType dt, const void* x, const std::int32_t* src_rows, int rows, int C,
               const void* w, const void* b, float eps, void* out, void* stream) {
  if (rows == 0) return;
  check_row_width("layernorm", C);
  if (dt == DType::bf16) {
    launch("layernorm", layernorm_kernel<__nv_bfloat16>, rows, kRowThreads, stream,
           static_cast<const __nv_bfloat16*>(x), src_rows, C, static_cast<const __nv_bfloat16*>(w),
           static_cast<const __nv_bfloat16*>(b), eps, static_cast<__nv_bfloat16*>(out));
  } else {
    launch("layernorm", layernorm_kernel<__half>, rows, kRowThreads, stream,
           static_cast<const __half*>(x), src_rows, C, static_cast<const __half*>(w),
           static_cast<const __half*>(b), eps, static_cast<__half*>(out));
  }
}

void scatter_kv(DType dt, const void* qkv, int rows, int C, const std::int32_t* slots, void* k_pool,
                void* v_pool, DType pool, void* stream) {
  if (pool != dt && pool != DType::e4m3) {
    throw Error(ErrorCode::invalid_argument, std::string("gpuattn engine: scatter_kv of ") +
                                                 to_string(dt) + " rows into a " + to_string(pool) +
                                                 " cache: " + to_string(dt) + " or float8_e4m3fn");
  }
  if (rows == 0) return;
  check_row_width("scatter_kv", C);
  auto* k8 = static_cast<std::uint8_t*>(k_pool);
  auto* v8 = static_cast<std::uint8_t*>(v_pool);
  if (pool == DType::e4m3 && dt == DType::bf16) {
    launch("scatter_kv", scatter_kv_e4m3_kernel<__nv_bfloat16>, rows, kRowThreads, stream,
           static_cast<const __nv_bfloat16*>(qkv), C, slots, k8, v8);
  } else if (pool == DType::e4m3) {
    launch("scatter_kv", scatter_kv_e4m3_kernel<__half>, rows, kRowThreads, stream,
           static_cast<const __half*>(qkv), C, slots, k8, v8);
  } else {
    launch("scatter_kv", scatter_kv_kernel, rows, kRowThreads, stream,
           static_cast<const std::uint16_t*>(qkv), C, slots, static_cast<std::uint16_t*>(k_pool),
           static_cast<std::uint16_t*>(v_pool));
  }
}

void sample(const float* logits, int rows, int V, int ld, const SampleRow* params,
            std::int32_t* tokens, const SampleScratch& scratch, void* stream) {
  if (V < 1 || ld < V || ld % 4 != 0) {  // the float4 loads read rows at pitch ld, up to V
    throw Error(ErrorCode::invalid_argument,
                "gpuattn engine: sample of " + std::to_string(V) + " logits a row at pitch " +
                    std::to_string(ld) + ": the pitch must be at least V and a multiple of 4");
  }
  if (rows == 0) return;
  // A greedy row over up to kSampleSplits blocks of at least kSampleSplitMin logits each, at most
  // one block an SM, where the scratch covers the rows (else one block a row).
  int splits = std::clamp(V / kSampleSplitMin, 1, kSampleSplits);
  if (scratch.sm_count > 0) splits = std::min(splits, std::max(1, scratch.sm_count / rows));
  if (scratch.partial == nullptr || scratch.counts == nullptr || rows > scratch.rows) splits = 1;
  const cudaError_t e = sm80::launch_pdl(
      sample_kernel, dim3(static_cast<unsigned>(rows), static_cast<unsigned>(splits)),
      dim3(kSampleThreads), 0, static_cast<cudaStream_t>(stream), logits, V, ld, params, tokens,
      splits, static_cast<Best*>(scratch.partial), scratch.counts);
  if (e != cudaSuccess) {
    throw Error(ErrorCode::cuda_error,
                std::string("gpuattn engine: sample launch failed: ") + cudaGetErrorString(e));
  }
}

}  // namespace gpuattn::engine::cuda
