// Launchers of the sm_80+ forward kernel, one per (dtype, head dim); each is instantiated in its
// own .cu file so that the build compiles them in parallel. `kernel` is the tile configuration the
// dispatch chose (select_fwd_config, core/tile_config.h): one of the sm80_* kernels.
#pragma once

#include <cuda_runtime.h>

#include "core/fwd_params.h"
#include "core/tile_config.h"

namespace gpuattn::sm80 {

void fwd_f16_hdim64(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);
void fwd_f16_hdim128(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);
void fwd_f16_hdim256(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);  // 64x64 only
void fwd_bf16_hdim64(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);
void fwd_bf16_hdim128(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);
void fwd_bf16_hdim256(FwdKernel kernel, const FwdParams& p, cudaStream_t stream);  // 64x64 only

int num_sms();  // of the current device, cached per device (fwd_launch.cu)
// Opt-in shared memory per block of the current device, cached per device (fwd_launch.cu): 163 KB
// on an A100, 227 KB on an H100, 99 KB on sm_86/sm_89.
int max_smem_per_block();
int compute_capability_major();  // of the current device, cached per device (fwd_launch.cu)

// A zeroed int in device memory for one kernel launch on `stream` (a persistent kernel's work-item
// counter), from a pool of this library's per device, stream-ordered: allocated and zeroed on the
// stream before the launch, freed on it after, so concurrent launches on other streams, and CUDA
// graphs captured from them, each get their own (fwd_launch.cu).
class LaunchCounter {
 public:
  explicit LaunchCounter(cudaStream_t stream);
  ~LaunchCounter();
  LaunchCounter(const LaunchCounter&) = delete;
  LaunchCounter& operator=(const LaunchCounter&) = delete;
  int* get() const { return ptr_; }

 private:
  cudaStream_t stream_;
  int* ptr_ = nullptr;
};

}  // namespace gpuattn::sm80
