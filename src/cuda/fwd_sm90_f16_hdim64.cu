#include "cuda/fwd_sm90.cuh"
#include "cuda/fwd_sm90.h"

namespace gpuattn::sm90 {

void fwd_f16_hdim64(FwdKernel kernel, const FwdParams& p, cudaStream_t stream) {
  run_fwd<__half, 64>(kernel, p, stream);
}
bool usable_f16_hdim64() {
  return usable<__half, 64>();
}

}  // namespace gpuattn::sm90
