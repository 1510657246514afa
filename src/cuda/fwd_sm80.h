// Launchers of the sm_80+ forward kernel, one per (dtype, head dim); each is instantiated in its
// own .cu file so that the build compiles them in parallel.
#pragma once

#include <cuda_runtime.h>

#include "core/fwd_params.h"

namespace gpuattn::sm80 {

void fwd_f16_hdim64(const FwdParams& p, cudaStream_t stream);
void fwd_f16_hdim128(const FwdParams& p, cudaStream_t stream);
void fwd_bf16_hdim64(const FwdParams& p, cudaStream_t stream);
void fwd_bf16_hdim128(const FwdParams& p, cudaStream_t stream);

}  // namespace gpuattn::sm80
