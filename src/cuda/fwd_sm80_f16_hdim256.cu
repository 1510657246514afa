#include "cuda/fwd_sm80.cuh"
#include "cuda/fwd_sm80.h"

namespace gpuattn::sm80 {

void fwd_f16_hdim256(FwdKernel kernel, const FwdParams& p, cudaStream_t stream) {
  run_fwd<__half, 256>(kernel, p, stream);
}

}  // namespace gpuattn::sm80
