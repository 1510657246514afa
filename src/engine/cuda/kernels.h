// The GPT-2 engine's own CUDA kernels (the GEMMs are cuBLASLt's: gemm.h). Host-callable launchers;
// pointers are device memory, `stream` a cudaStream_t.
#pragma once

#include <cstdint>

#include "engine/sampling.h"
#include "gpuattn/types.h"

namespace gpuattn::engine::cuda {

void embed(DType dt, const std::int32_t* tokens, const std::int32_t* positions, int rows,
           const void* wte, const void* wpe, int C, void* out, void* stream);
void layernorm(DType dt, const void* x, const std::int32_t* src_rows, int rows, int C,
               const void* w, const void* b, float eps, void* out, void* stream);
void sample(const float* logits, int rows, int V, const SampleRow* params, std::int32_t* tokens,
            void* stream);

}  // namespace gpuattn::engine::cuda
