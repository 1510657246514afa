// CUDA backend entry points (host side; implemented in .cu/.cpp files under src/cuda).
#pragma once

#include "core/append_kv.h"
#include "core/fwd_params.h"
#include "core/rotary.h"
#include "core/tile_config.h"

namespace gpuattn {

// Number of visible CUDA devices (0 when the driver or device is missing).
int cuda_device_count();

// Checks that the pointers in `p` are device memory of p.device_index, validates device-resident
// cu_seqlens on a host copy, then launches the forward kernel on `stream` (cudaStream_t).
void cuda_attention_forward(const FwdParams& p, void* stream);

// gpuattn::append_kv on the device: pointers checked, cache_seqlens and the table checked on a host
// copy (p.check_indices), then the append kernel on `stream`.
void cuda_append_kv(const AppendParams& p, void* stream);

// gpuattn::apply_rotary on the device: pointers checked, seqlen_offsets checked on a host copy
// (p.check_indices), then the rotary kernel on `stream`.
void cuda_apply_rotary(const RotaryParams& p, void* stream);

// The forward kernel configuration cuda_attention_forward launches for p (select_fwd_config on
// p's device, GPUATTN_KERNEL applied), so that tests can check which kernel a call ran. An FP8
// call (p.q_quantized()) names sm90_fp8_128x128, sm90_fp8_192x128 or sm90_fp8_128x128_d256 where
// cuda_fp8_kernel_takes(p), else the kernel its dequantized path runs.
FwdKernel cuda_forward_kernel(const FwdParams& p);

// Whether FP8 call p (p.q_quantized()) runs the FP8 kernel on p's device; when not, it runs on a
// dequantized copy of q through the kernel cuda_forward_kernel names.
bool cuda_fp8_kernel_takes(const FwdParams& p);

}  // namespace gpuattn
