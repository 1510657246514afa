// The split-KV decode kernels over a quantized cache of int8 with ALiBi (fwd_decode_q8.cuh,
// decode_q8_kernel's kAlibi instantiations): head dims 64, 128, 256, dense and paged. A file of
// their own, so that the build compiles them beside the plain ones.
#include "cuda/fwd_decode.h"
#include "cuda/fwd_decode_q8.cuh"

namespace gpuattn::decode {

void fwd_i8_alibi(const FwdParams& p, cudaStream_t stream) {
  run_decode_q8<true, true>(p, stream);
}

}  // namespace gpuattn::decode
