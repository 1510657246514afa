#include "cuda/fwd_sm90.cuh"
#include "cuda/fwd_sm90.h"

namespace gpuattn::sm90 {

void fwd_bf16_hdim64(FwdKernel kernel, const FwdParams& p, cudaStream_t stream) {
  run_fwd<__nv_bfloat16, 64>(kernel, p, stream);
}
bool usable_bf16_hdim64() {
  return usable<__nv_bfloat16, 64>();
}

}  // namespace gpuattn::sm90
