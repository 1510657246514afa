// Launches with programmatic stream serialization (programmatic dependent launch, PDL): on sm_90+
// the kernel may be scheduled while the previous kernel in its stream is still running, and waits
// for it in ptx::griddep_wait(). In a chain of small kernels it hides part of a launch's
// latency: the GPT-2 engine's decode kernel, right behind its k/v scatter, 9-15 us of a 0.43 ms
// B1 step (H200, bench/results/2026-11-29-h200-s32). Only kernels that call ptx::griddep_wait()
// before their first global memory access may be launched this way.
#pragma once

#include <cuda_runtime.h>

#include <utility>

namespace gpuattn::sm80 {

// Whether launch_pdl asks for PDL: the current device is sm_90+ and GPUATTN_PDL is not "0"
// (fwd_launch.cu; the variable is read once).
bool pdl_enabled();

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
  cfg.numAttrs = pdl_enabled() ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

}  // namespace gpuattn::sm80
