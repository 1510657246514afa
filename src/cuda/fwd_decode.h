// Launcher of the split-KV decode kernel (src/cuda/fwd_decode.cuh), the configuration
// decode_16x64 of core/tile_config.h: one entry for every dtype and head dim, instantiated in
// fwd_decode.cu.
#pragma once

#include <cuda_runtime.h>

#include "core/fwd_params.h"

namespace gpuattn::decode {

void fwd(const FwdParams& p, cudaStream_t stream);

}  // namespace gpuattn::decode
