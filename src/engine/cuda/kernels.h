// The GPT-2 engine's own CUDA kernels (the GEMMs are cuBLASLt's: gemm.h). Host-callable launchers;
// pointers are device memory, `stream` a cudaStream_t.
#pragma once

#include <cstdint>

#include "engine/sampling.h"
#include "gpuattn/types.h"

namespace gpuattn::engine::cuda {

void embed(DType dt, const std::int32_t* tokens, const std::int32_t* positions, int rows,
           const void* wte, const void* wpe, int C, void* out, void* stream);
// C a multiple of 8, at most 4096.
void layernorm(DType dt, const void* x, const std::int32_t* src_rows, int rows, int C,
               const void* w, const void* b, float eps, void* out, void* stream);
// 16-bit rows (dt): C a multiple of 8 (16-byte vectors), at most 4096; the caches hold dt (a
// copy) or e4m3 (pool: ModelOps::scatter_kv's rounding); another pool is invalid_argument.
void scatter_kv(DType dt, const void* qkv, int rows, int C, const std::int32_t* slots, void* k_pool,
                void* v_pool, DType pool, void* stream);
// A greedy row's argmax over up to kSampleSplits blocks: each puts its best in `partial` (8 bytes
// a row and split) and counts itself in `counts` (an int a row, zero between calls: each call
// leaves them zero), for up to `rows` rows. Null, or more rows: one block a row. The splits stay
// within one block an SM (sm_count / rows; 0: no such limit): at 124M B128 8 splits a row (1,024
// blocks of 1,024 threads) cost 1.3% against one block a row (s42 call 4).
constexpr int kSampleSplits = 8;
constexpr int kSampleSplitMin = 4096;  // logits a block at least
struct SampleScratch {
  void* partial = nullptr;  // rows x kSampleSplits x 8 bytes
  int* counts = nullptr;    // rows ints, zeroed once
  int rows = 0;
  int sm_count = 0;
};
// logits rows of pitch ld, a multiple of 4 (float4 loads) and at least V (else invalid_argument).
void sample(const float* logits, int rows, int V, int ld, const SampleRow* params,
            std::int32_t* tokens, const SampleScratch& scratch, void* stream);

}  // namespace gpuattn::engine::cuda
