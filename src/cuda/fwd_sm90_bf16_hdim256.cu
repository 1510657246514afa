#include "cuda/fwd_sm90.cuh"
#include "cuda/fwd_sm90.h"

namespace gpuattn::sm90 {

void fwd_bf16_hdim256(FwdKernel kernel, const FwdParams& p, cudaStream_t stream) {
  run_fwd<__nv_bfloat16, 256>(kernel, p, stream);
}
bool usable_bf16_hdim256() {
  return usable<__nv_bfloat16, 256>();
}

}  // namespace gpuattn::sm90
