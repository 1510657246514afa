// The rotary embedding kernel (gpuattn::apply_rotary on the device).
#pragma once

#include <cuda_runtime.h>

#include "core/rotary.h"

namespace gpuattn::rotary {

// Launches the rotation of p on `stream`. The offsets must have been checked (or be trusted).
void apply(const RotaryParams& p, cudaStream_t stream);

}  // namespace gpuattn::rotary
