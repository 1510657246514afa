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
// 16-bit rows: C a multiple of 8 (16-byte vectors), at most 4096.
void scatter_kv(const void* qkv, int rows, int C, const std::int32_t* slots, void* k_pool,
                void* v_pool, void* stream);
// logits rows of pitch ld, a multiple of 4 (float4 loads) and at least V (else invalid_argument).
void sample(const float* logits, int rows, int V, int ld, const SampleRow* params,
            std::int32_t* tokens, void* stream);

}  // namespace gpuattn::engine::cuda
