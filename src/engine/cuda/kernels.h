// The GPT-2 engine's own CUDA kernels (the GEMMs are cuBLASLt's: gemm.h). Host-callable launchers;
// pointers are device memory, `stream` a cudaStream_t.
#pragma once

#include <cstdint>

#include "engine/sampling.h"
#include "gpuattn/types.h"

namespace gpuattn::engine::cuda {

// decode_gemv (decode_gemv.cu): rows and K it takes.
constexpr int kDecodeGemvRows = 4;
constexpr int kDecodeGemvMaxK = 4096;

// out[rows, N] = act(LN(x)[rows, K] W[K, N] + bias) (+ residual), LN when ln_w is given (over K,
// eps), act = GELU (tanh) when gelu; residual may alias out. rows <= kDecodeGemvRows, K <=
// kDecodeGemvMaxK, N a multiple of 8. 16-bit tensors, fp32 math.
void decode_gemv(DType dt, const void* x, const void* ln_w, const void* ln_b, float eps,
                 const void* W, const void* bias, const void* residual, void* out, int rows, int K,
                 int N, bool gelu, void* stream);

void embed(DType dt, const std::int32_t* tokens, const std::int32_t* positions, int rows,
           const void* wte, const void* wpe, int C, void* out, void* stream);
// C a multiple of 8, at most 4096.
void layernorm(DType dt, const void* x, const std::int32_t* src_rows, int rows, int C,
               const void* w, const void* b, float eps, void* out, void* stream);
// 16-bit rows: C a multiple of 8 (16-byte vectors), at most 4096.
void scatter_kv(const void* qkv, int rows, int C, const std::int32_t* slots, void* k_pool,
                void* v_pool, void* stream);
// logits rows of pitch ld, a multiple of 4 (float4 loads).
void sample(const float* logits, int rows, int V, int ld, const SampleRow* params,
            std::int32_t* tokens, void* stream);

}  // namespace gpuattn::engine::cuda
