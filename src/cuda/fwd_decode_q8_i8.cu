// The split-KV decode kernels over a quantized cache of int8 (fwd_decode_q8.cuh): head dims 64,
// 128, 256, dense and paged, without ALiBi (fwd_decode_q8_i8_alibi.cu: with).
#include "cuda/fwd_decode.h"
#include "cuda/fwd_decode_q8.cuh"

namespace gpuattn::decode {

void fwd_i8(const FwdParams& p, cudaStream_t stream) {
  run_decode_q8<true, false>(p, stream);
}

}  // namespace gpuattn::decode
