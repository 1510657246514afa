// The engine's linears at 1-8 rows, optionally with the layernorm ahead of them fused
// (skinny.cu says how and why). Host-callable; pointers are device memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpuattn/types.h"

namespace gpuattn::engine::cuda {

constexpr int kSkinnyMaxRows = 8;
constexpr int kSkinnyMaxRowsQ8 = 8;  // int8 W (SkinnyArgs::q8)
constexpr int kSkinnyMaxRowsQ4 = 8;  // int4 W (SkinnyArgs::q4)

// Device memory the kernel keeps between calls, one set per stream: fp32 split-K partial sums
// and a count a 64-column slice, zeroed once (each call leaves them zero).
struct SkinnyScratch {
  float* partials = nullptr;
  std::size_t partial_floats = 0;
  std::int32_t* counts = nullptr;
  int count_slots = 0;
  int sm_count = 1;
};

// out[rows, N] = act(ln(x)[rows, K] W[K, N] + bias[N]) (+ residual[rows, N]): x, W, out and
// residual row-major and contiguous; ln is the layernorm with ln_w / ln_b over K features (eps),
// or none when ln_w is null; bias may be null; residual may alias out; gelu is the tanh form.
struct SkinnyArgs {
  const void* x = nullptr;
  const void* ln_w = nullptr;
  const void* ln_b = nullptr;
  float eps = 0.0f;
  const void* W = nullptr;
  const void* bias = nullptr;
  const void* residual = nullptr;
  void* out = nullptr;
  int rows = 0, K = 0, N = 0;
  bool gelu = false;
  // W is a weight-only int8 block (q8_weights.h: int8 [K, N], then fp32 scales a 64 rows and
  // column); K a multiple of 64.
  bool q8 = false;
  // W is a weight-only int4 block (q8_weights.h: shuffle_q4_mma's nibbles, then fp32 scales a 64
  // rows and column); K a multiple of 64. Not with q8.
  bool q4 = false;
  // With kv_slots: out is a layer's qkv (N = 3C), and its keys and values also go to the caches as
  // scatter_kv puts them: columns [C, 2C) of row m to k_pool[kv_slots[m] * C ..], [2C, 3C) to
  // v_pool. All backend memory.
  const std::int32_t* kv_slots = nullptr;
  void* k_pool = nullptr;
  void* v_pool = nullptr;
  // The caches hold FP8 E4M3 (KvCache::e4m3): each key and value is written as scatter_kv's
  // quantizing form writes it (its 16-bit value rounded to nearest even, saturated).
  bool kv_e4m3 = false;
  // out is fp32 [rows, ld] (ld >= N) instead of rows of N in the activations' type: the output
  // head's logits. Not with a bias, GELU, a residual or the k/v scatter.
  bool f32_out = false;
  int ld = 0;
};

struct SkinnyPlan {
  bool ok = false;  // false: the call is not one the kernel takes; use the general path
  int slices = 0, splits = 0, chunk = 0;
  bool cluster = false;  // the splits of a 64-column slice reduce in a thread-block cluster
  // int8 at one row (unless GPUATTN_SKINNY_Q8_NARROW=0): a CTA a 16-column
  // tile over the whole of K (slices tiles, one split), no cluster, no workspace.
  bool narrow = false;
  // int4 (q4): q4_kernel, a CTA a 16-column tile over the whole of K at 1-8 rows (slices tiles,
  // one split), no cluster, no workspace.
  bool q4 = false;
};

// Where the engine uses the kernel (engine_policy): one row and at most this many weights.
// GPUATTN_SKINNY_GEMM=0 turns it off, =all takes it wherever it can run (1-8 rows, any W; for
// measuring), =1 is the default; another value throws invalid_argument. Read once. Measured on an
// H200 (bench/results/2026-11-29-h200-s34, calls 1-2, same runs): GPT-2 124M B1, whose linears
// have 0.6-2.4 M weights, 2,817-2,878 tokens/s against 2,439-2,440 on cuBLASLt and 2,577-2,582
// with the kernel before clusters. Everywhere (=all) it lost: 124M B4 -12%, B8 -31%; GPT-2 1.5B
// B1 (2.6-10.2 M weights) -15% in s34, a tie (472 against 469) once the clusters were sized to fit
// at once (s35 call 2).
constexpr std::int64_t kSkinnyPolicyMaxElements = 2400000;

// Whether (and how) the kernel takes a call: 1..kSkinnyMaxRows rows, N a multiple of 8, W on 16
// bytes, the scratch large enough, and, with engine_policy, the policy above. q8 (int8 W): K a
// multiple of 64, at most kSkinnyMaxRowsQ8 rows; the policy takes every row count it can (not
// with GPUATTN_SKINNY_GEMM=0). q4 (int4 W): the same, at most kSkinnyMaxRowsQ4 rows, where the
// CTA's shared memory (W, scales and x: about K x (8.25 + 2 rows) bytes) fits the device.
SkinnyPlan skinny_plan(int rows, int K, int N, const void* W, const SkinnyScratch& s,
                       bool engine_policy = true, bool q8 = false, bool q4 = false);
// W_out [K, N] (dt) = the dequantized int8 block Wq (q * scale); N a multiple of 8.
void dequant_q8(DType dt, const void* Wq, int K, int N, void* W_out, void* stream);
// The same for an int4 block (shuffle_q4_mma's order); K a multiple of 64, N of 8.
void dequant_q4(DType dt, const void* Wq, int K, int N, void* W_out, void* stream);
// Launches the call as planned, on `stream` (a cudaStream_t), with programmatic dependent launch.
void skinny_linear(DType dt, const SkinnyPlan& plan, const SkinnyArgs& a, const SkinnyScratch& s,
                   void* stream);

}  // namespace gpuattn::engine::cuda
