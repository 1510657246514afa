// The seed report 001 baseline: attention as three kernels, S = Q K^T (cuBLASLt), a row softmax
// kernel, O = P V (cuBLASLt). A comparison for `gpuattn bench` and nothing else: it materializes
// the whole [B*Hq, Sq, Sk] score matrix, so it is not a user path.
#pragma once

#include <cstddef>

#include "core/fwd_params.h"

namespace gpuattn {

// Device workspace the baseline needs for `p`: 32 MiB of cuBLASLt workspace plus the fp32 score
// matrix [B*Hq, Sq, round_up(Sk, 8)]; P is written in the input dtype over the scores in place.
std::size_t baseline_workspace_bytes(const FwdParams& p);

// out = softmax(q k^T * scale [causal mask, bottom-right aligned]) v for dense (non-varlen)
// f16/bf16 params on the CUDA device `p.device_index`; any strides FwdParams describes (the [B, S,
// H, D] layouts of the public API included). GQA/MQA: each query head reads its kv head; the GEMMs
// loop over query heads (batched over B) unless Hq == Hkv and B <= Hq, where they loop over B
// (batched over heads). `p.lse` and `p.precision` are ignored. `workspace` is device memory of at
// least baseline_workspace_bytes(p) bytes, 256-byte aligned; `stream` is a cudaStream_t (nullptr:
// default stream). Asynchronous. Throws gpuattn::Error (not_supported for varlen, softcap, f32,
// Sk == 0, a mask beyond causal, seqused_k or leftpad_k, a block table, quantized k/v or q;
// cuda_error for a failed CUDA or cuBLASLt call).
void baseline_attention_forward(const FwdParams& p, void* workspace, std::size_t workspace_bytes,
                                void* stream);

// C = A^T B (column-major; A is k x m, B is k x n, C is m x n, all tightly packed, fp32
// accumulation) in `dtype` (f16 or bf16) through the baseline's cuBLASLt handle: the GEMM ceiling
// that `gpuattn bench` reports as the measured peak. `workspace` as above (>= 32 MiB).
void baseline_gemm_tn(DType dtype, int m, int n, int k, const void* a, const void* b, void* c,
                      void* workspace, std::size_t workspace_bytes, void* stream);

}  // namespace gpuattn
