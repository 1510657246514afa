#include "cuda/fwd_sm80.cuh"
#include "cuda/fwd_sm80.h"

namespace gpuattn::sm80 {

void fwd_bf16_hdim256(FwdKernel kernel, const FwdParams& p, cudaStream_t stream) {
  run_fwd<__nv_bfloat16, 256>(kernel, p, stream);
}

}  // namespace gpuattn::sm80
