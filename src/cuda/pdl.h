// Launches with programmatic stream serialization (programmatic dependent launch, PDL): on sm_90+
// the kernel may be scheduled while the previous kernel in its stream is still running, and waits
// for it in ptx::griddep_wait(). In a chain of small kernels it hides part of a launch's
// latency: the GPT-2 engine's decode kernel, right behind its k/v scatter, 9-15 us of a 0.43 ms
// B1 step (H200, bench/results/2026-11-29-h200-s32). Only kernels that call ptx::griddep_wait()
// before they touch memory an earlier kernel may write may be launched this way (the engine's
// skinny linears read their weights, which nothing writes, ahead of the wait).
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace gpuattn::sm80 {

// Whether launch_pdl asks for PDL at all: the current device is sm_90+, the CUDA runtime is 12.3+
// (graphs capture PDL launches from then on) and GPUATTN_PDL is not "0" (fwd_launch.cu; read
// once).
bool pdl_enabled();
// Whether `kernel` as it runs on the current device was compiled for sm_90+ (its PTX version), so
// that its ptx::griddep_wait() is real: a build for 80;90a runs the compute_80 code on a GPU newer
// than sm_90 (90a code runs on sm_90 only), and that code has no wait. Cached per device and
// kernel (fwd_launch.cu).
bool kernel_waits_for_pdl(const void* kernel);

// Asks for the largest shared-memory carveout for `kernel` on the current device
// (cudaFuncAttributePreferredSharedMemoryCarveout), unless GPUATTN_CARVEOUT_MAX is "0" (read once;
// another value than 0 or 1 throws). Callers ask once per device and kernel, where they set the
// kernel's other attributes (launch_narrow, skinny_linear, the decode launcher's ctas_per_sm). For
// the kernels of a PDL chain that stage their loads in shared memory: the driver picks an SM's L1 /
// shared split per launch from the kernel's own needs, and a CTA starts beside the kernel ahead's
// only where the split suits both. H200, s39 calls 4-5 (bench/results/2026-11-29-h200-s39), asked
// for the engine's int8 linears and every split-KV decode kernel (launch_decode; the 8-bit-cache
// ones too, whose speed was not measured with it): 1.5B B1 int8 687-692 -> 767-769 tok/s, 124M B1
// int8 3,843-3,873 -> 4,305-4,355; 124M B1 dense, B8 int8 and B32 within noise. Asked for the dense
// one-row linear too, 124M B1 lost 5%.
void prefer_max_shared(const void* kernel);

template <typename... Params, typename... Args>
cudaError_t launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem,
                       cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs =
      pdl_enabled() && kernel_waits_for_pdl(reinterpret_cast<const void*>(kernel)) ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

}  // namespace gpuattn::sm80
