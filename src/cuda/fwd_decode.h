// Launcher of the split-KV decode kernel (src/cuda/fwd_decode.cuh), the configuration
// decode_16x64 of core/tile_config.h: one entry for every dtype and head dim, instantiated in
// fwd_decode.cu.
#pragma once

#include <cuda_runtime.h>

#include "core/fwd_params.h"

namespace gpuattn::decode {

// Every decode call: a quantized cache (p.kv_quantized()) goes to fwd_i8 / fwd_e4m3.
void fwd(const FwdParams& p, cudaStream_t stream);

// Whether a decode call with AttentionArgs::pdl on the current device really launches with PDL:
// PDL is on (sm80::pdl_enabled) and the decode kernel's code that runs here was compiled for
// sm_90+ (sm80::kernel_waits_for_pdl of the fp16 head-dim-128 kernel; every decode kernel is
// built for the same architectures).
bool pdl_active();

// Decode over an 8-bit quantized cache (fwd_decode_q8.cuh), one .cu file each; the _alibi ones
// take the calls with AttentionArgs::alibi_slopes, the others those without.
void fwd_i8(const FwdParams& p, cudaStream_t stream);
void fwd_e4m3(const FwdParams& p, cudaStream_t stream);
void fwd_i8_alibi(const FwdParams& p, cudaStream_t stream);
void fwd_e4m3_alibi(const FwdParams& p, cudaStream_t stream);

}  // namespace gpuattn::decode
