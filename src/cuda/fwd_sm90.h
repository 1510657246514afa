// Launchers of the sm_90a (wgmma) forward kernel, one per (dtype, head dim), each instantiated in
// its own .cu file with both variants: dense / causal / a window alone, and every other mask
// (global tokens, block-sparse, each with or without a window; p.dense_or_causal() and
// p.banded() pick); at head dims 64 and 128 also the compensated-precision
// kernel (every mask; p.precision picks: the configs sm90_ws_128x128 and
// sm90_ws_128x64_compensated of core/tile_config.h both launch through these). `*_usable` says
// whether the running device executes its sm_90a code.
#pragma once

#include <cuda_runtime.h>

#include "core/fwd_params.h"

namespace gpuattn::sm90 {

void fwd_f16_hdim64(const FwdParams& p, cudaStream_t stream);
void fwd_f16_hdim128(const FwdParams& p, cudaStream_t stream);
void fwd_f16_hdim256(const FwdParams& p, cudaStream_t stream);  // 64-key tiles, standard only
void fwd_bf16_hdim64(const FwdParams& p, cudaStream_t stream);
void fwd_bf16_hdim128(const FwdParams& p, cudaStream_t stream);
void fwd_bf16_hdim256(const FwdParams& p, cudaStream_t stream);  // 64-key tiles, standard only
bool usable(DType dtype, int head_dim);

}  // namespace gpuattn::sm90
