// Launcher of the split-KV decode kernel (src/cuda/fwd_decode.cuh), the configuration
// decode_16x64 of core/tile_config.h: one entry for every dtype and head dim, instantiated in
// fwd_decode.cu.
#pragma once

#include <cuda_runtime.h>

#include "core/fwd_params.h"

namespace gpuattn::decode {

// Every decode call: a quantized cache (p.kv_quantized()) goes to fwd_i8 / fwd_e4m3.
void fwd(const FwdParams& p, cudaStream_t stream);

// Decode over an 8-bit quantized cache (fwd_decode_q8.cuh), one .cu file each.
void fwd_i8(const FwdParams& p, cudaStream_t stream);
void fwd_e4m3(const FwdParams& p, cudaStream_t stream);

}  // namespace gpuattn::decode
