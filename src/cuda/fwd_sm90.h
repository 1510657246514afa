// Launchers of the sm_90a (wgmma) forward kernel, one per (dtype, head dim), each instantiated in
// its own .cu file. `kernel` is the tile configuration the dispatch chose (select_fwd_config,
// core/tile_config.h): sm90_ws_128x128 or sm90_ws_128x64_d256 run the 2-consumer kernel's two
// variants (dense / causal / at head dim 128 a window alone, and every other mask: global tokens,
// block-sparse, each with or without a window; p.dense_or_causal() and p.banded() pick);
// sm90_ws_192x128 (head dim 64, dense and causal) the 3-consumer one; sm90_ws_128x80_d256 (head
// dim 256, dense and causal) its 80-key-tile instantiation, sm90_ws_128x128_s3 (head dim 128, dense
// and causal) its 3-stage one (causal calls its causal twin: half last tiles on one tile loop),
// sm90_ws_128x128_s4 (head dim 64, causal) its 4-stage one, sm90_ws_64x128_2cta (head dim 64,
// dense and causal) its one-consumer one, two CTAs an SM;
// sm90_ws_128x64_compensated (head dims 64 and 128) the compensated-precision kernel, every mask.
// `*_usable` says whether the running device executes its sm_90a code.
#pragma once

#include <cuda_runtime.h>

#include "core/fwd_params.h"
#include "core/tile_config.h"

namespace gpuattn::sm90 {

void fwd_f16_hdim64(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);
void fwd_f16_hdim128(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);
// 64-key tiles, standard precision only:
void fwd_f16_hdim256(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);
void fwd_bf16_hdim64(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);
void fwd_bf16_hdim128(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);
// 64-key tiles, standard precision only:
void fwd_bf16_hdim256(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);
bool usable(DType dtype, int head_dim);

// FP8 attention (p.q_quantized(): E4M3 q, k and v with their scales, out f16 or bf16) at head dims
// 64, 128 and 256, dense or causal, varlen or not, without seqused_k or a block table
// (fwd_sm90_fp8.cu), on `kernel`: sm90_fp8_128x128, sm90_fp8_192x128 (head dims 64 and 128) or
// sm90_fp8_128x128_d256 (head dim 256).
// fp8_usable says whether this device runs its sm_90a code.
void fwd_fp8(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);
bool fp8_usable();

}  // namespace gpuattn::sm90
