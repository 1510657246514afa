// Thin inline-PTX layer for the sm_80+ (Ampere-style) path: cp.async, ldmatrix, mma.sync.
// Works on Hopper too (sm_90a builds run it as the portable path).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <vector_types.h>

#include <cstdint>

namespace gpuattn::ptx {

// Programmatic dependent launch. A kernel launched with programmatic stream serialization
// (pdl.h) may start while the kernel before it in the stream still runs: griddep_wait() blocks
// until that kernel has completed and its writes are visible, so it comes before the kernel's
// first global access. griddep_launch_dependents() lets the next such kernel start (up to its own
// griddep_wait) once every CTA of this one has called it or exited. Both are no-ops in code
// compiled for GPUs below sm_90, which pdl.h's launch_pdl launches plainly on any GPU.
__device__ __forceinline__ void griddep_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void griddep_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// A 16-byte load through the non-coherent (read-only) path, as volatile asm: the compiler keeps
// it where it is written, ahead of a griddep_wait() (a plain __ldg may be moved below it). For
// memory no kernel writes while the reader runs.
__device__ __forceinline__ uint4 ld_nc_v4(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// A 4-byte float load through the non-coherent path, as ld_nc_v4.
__device__ __forceinline__ float ld_nc_f32(const float* p) {
  float v;
  asm volatile("ld.global.nc.f32 %0, [%1];\n" : "=f"(v) : "l"(p));
  return v;
}

// Fetches p's 128-byte line into L2, nothing into registers: memory a kernel reads later, brought
// in ahead of a griddep_wait() (ptxas may sink plain loads below the wait, having nowhere to put
// their registers; a prefetch has none).
__device__ __forceinline__ void prefetch_l2(const void* p) {
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p));
}

// Thread-block clusters (sm_90+; code for older GPUs traps, and is never launched in a cluster).
// cluster_sync(): every thread of every CTA of the cluster; shared-memory writes before it are
// visible to the cluster's reads after it.
__device__ __forceinline__ void cluster_sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "barrier.cluster.arrive.release.aligned;\n"
      "barrier.cluster.wait.acquire.aligned;\n" ::
          : "memory");
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
}
__device__ __forceinline__ unsigned cluster_ctarank() {
  unsigned r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
#endif
  return r;
}
// The float at `p` (this CTA's shared memory) in the shared memory of cluster rank `rank`.
__device__ __forceinline__ float ld_shared_cluster_f32(const float* p, unsigned rank) {
  float v = 0.0f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(p));
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(remote) : "memory");
#elif defined(__CUDA_ARCH__)
  __trap();
#endif
  return v;
}

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte global -> shared copy; when `valid` is false the destination is zero-filled and the
// source is not read (src-size 0).
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src, bool valid) {
  const int src_size = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_size));
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Four 8x8 b16 matrices; lane l supplies the row address for matrix l / 8.
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// D = A(16x16, row) * B(16x8, col) + D, fp32 accumulators.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const std::uint32_t (&a)[4],
                                          std::uint32_t b0, std::uint32_t b1);

template <>
__device__ __forceinline__ void mma_16816<__half>(float (&d)[4], const std::uint32_t (&a)[4],
                                                  std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&d)[4], const std::uint32_t (&a)[4],
                                                         std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats -> packed 16-bit pair (low half = first), round to nearest.
template <typename T>
__device__ __forceinline__ std::uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ std::uint32_t pack2<__half>(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<std::uint32_t*>(&h);
}
template <>
__device__ __forceinline__ std::uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<std::uint32_t*>(&h);
}

// Named barriers 1..15 (0 is __syncthreads): `count` threads of the CTA, a multiple of 32, take
// part per phase. sync waits for the phase to complete; arrive counts this warp in and goes on.
__device__ __forceinline__ void named_barrier_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

__device__ __forceinline__ void st_shared_b32(std::uint32_t addr, std::uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ uint4 ld_shared_v4(std::uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
// Stores four 8x8 16-bit matrices whose fragments this warp holds as an mma accumulator would
// (register i: matrix i, row lane / 4, columns 2 (lane % 4) and + 1); lane l gives the address of
// row l % 8 of matrix l / 8 (16 bytes).
__device__ __forceinline__ void stmatrix_x4(std::uint32_t addr, std::uint32_t r0, std::uint32_t r1,
                                            std::uint32_t r2, std::uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}
// One 16-byte global store (`ptr` 16-byte aligned). Written out because nvcc 13.0 split a plain
// `*reinterpret_cast<uint4*>(ptr) = v` of ld_shared_v4's result into four 4-byte stores (each
// warp store then touched 4x the sectors it needed: ncu, H200).
__device__ __forceinline__ void st_global_v4(void* ptr, uint4 v) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(ptr), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}

// atomicAdd at GPU scope with acquire-release semantics (returns the old value): release orders
// the writes that happen before it (the CTA's, after a __syncthreads) before the add; acquire
// makes the writes released by earlier adds visible to what follows it (the CTA's, after a
// __syncthreads). One instruction in place of a fence, the add and a fence.
__device__ __forceinline__ int atom_add_acq_rel_gpu(int* ptr, int v) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], %2;\n"
               : "=r"(old)
               : "l"(ptr), "r"(v)
               : "memory");
  return old;
}

// Max and sum over the 4 lanes of a quad (the lanes that hold one row of an mma accumulator).
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// exp2 of both halves of an f16x2 (ex2.approx.f16x2). On sm_90 ptxas makes it two MUFU.EX2.F16,
// one a half (tools/mufu_probe.cu times them against MUFU.EX2 of f32).
__device__ __forceinline__ std::uint32_t fast_exp2_h2(std::uint32_t x) {
  std::uint32_t y;
  asm("ex2.approx.f16x2 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

// 1 / x and log2(x) in one MUFU instruction each (rcp.approx, lg2.approx: relative error about
// 2^-23 and absolute about 2^-22), for x a normal positive float.
__device__ __forceinline__ float fast_rcp(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float fast_log2(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// min / max that return NaN when either operand is one (fminf / fmaxf return the other).
__device__ __forceinline__ float min_nan(float a, float b) {
  float y;
  asm("min.NaN.f32 %0, %1, %2;\n" : "=f"(y) : "f"(a), "f"(b));
  return y;
}
__device__ __forceinline__ float max_nan(float a, float b) {
  float y;
  asm("max.NaN.f32 %0, %1, %2;\n" : "=f"(y) : "f"(a), "f"(b));
  return y;
}

// tanh(x) from y = 2 x log2(e), as 1 - 2 / (1 + 2^y), for soft-capped scores. One MUFU.EX2, and
// the reciprocal either on MUFU.RCP (kFmaReciprocal false: 2 MUFU ops and 3 FP32 ops an element)
// or by Newton's method on the FMA pipe (true: 1 MUFU op, ~11 others). Which is faster depends on
// the kernel's busier pipe: against MUFU.RCP the FMA version took 0.90-0.93x the time of
// soft-capped calls at head dim 64 (the sm_90a softmax MUFU-bound) and 1.02-1.11x at head dims
// 128 and 256 (issue-bound), H200, bench/results/2026-12-02-h200-s65 call 4.
// The FMA version clamps y to [-27, 27] (|x| <= 9.36, where tanh is +-1 in float), so that
// 1 + 2^y lies in [1, 1.35e8]; the bit trick's first guess is within 5.1% of its reciprocal and
// three Newton steps (2 FFMA each) take that to 9e-8. Both: absolute error about 2.5e-7 over all x,
// so a soft-capped logit (softcap * tanh) is within softcap * 2.5e-7 of its value: at most 6.4e-5
// for the caps these serve (FwdParams::kFastTanhMaxCap); tanh_of_log2_exact serves larger ones.
// +-inf give +-1, NaN stays NaN.
template <bool kFmaReciprocal>
__device__ __forceinline__ float tanh_of_log2(float y) {
  if constexpr (kFmaReciprocal) {
    y = min_nan(max_nan(y, -27.f), 27.f);
    const float d = 1.f + fast_exp2(y);
    float r = __int_as_float(0x7EF311C7 - __float_as_int(d));
#pragma unroll
    for (int i = 0; i < 3; ++i) r = fmaf(r, fmaf(-d, r, 1.f), r);
    return fmaf(-2.f, r, 1.f);
  } else {
    return fmaf(-2.f, fast_rcp(1.f + fast_exp2(y)), 1.f);  // rcp(inf) = 0: +-1 at the ends
  }
}

// tanh_of_log2 with relative error about 1e-6 for every x: below |x| = 0.25 the odd Taylor
// polynomial to x^9 (truncation 9e-9 of tanh there), above it tanh_of_log2 (whose absolute error
// 2.5e-7 is then at most 1e-6 of tanh). Six FP32 ops and a select more an element.
template <bool kFmaReciprocal>
__device__ __forceinline__ float tanh_of_log2_exact(float y) {
  const float x = y * 0.34657359027997264f;  // ln(2) / 2
  const float x2 = x * x;
  float q = fmaf(x2, 0.021869488536155203f, -0.053968253968253971f);  // 62/2835, -17/315
  q = fmaf(x2, q, 0.13333333333333333f);                              // 2/15
  q = fmaf(x2, q, -0.33333333333333333f);                             // -1/3
  const float small = fmaf(x * x2, q, x);
  return fabsf(x) < 0.25f ? small : tanh_of_log2<kFmaReciprocal>(y);
}

// tanh_of_log2's factor for x = s * pre: pre * 2 log2(e), kept finite (a score of 0 must give 0,
// not 0 * inf).
__device__ __forceinline__ float tanh_log2_factor(float pre) {
  return fminf(pre * 2.8853900817779268f, 3.4028234663852886e38f);
}

}  // namespace gpuattn::ptx
