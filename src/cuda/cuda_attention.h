// CUDA backend entry points (host side; implemented in .cu/.cpp files under src/cuda).
#pragma once

#include "core/fwd_params.h"

namespace gpuattn {

// Number of visible CUDA devices (0 when the driver or device is missing).
int cuda_device_count();

// Checks that the pointers in `p` are device memory of p.device_index, validates device-resident
// cu_seqlens on a host copy, then launches the forward kernel on `stream` (cudaStream_t).
void cuda_attention_forward(const FwdParams& p, void* stream);

}  // namespace gpuattn
