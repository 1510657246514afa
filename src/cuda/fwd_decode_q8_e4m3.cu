// The split-KV decode kernels over a quantized cache of FP8 E4M3 (fwd_decode_q8.cuh): head dims 64,
// 128, 256, dense and paged, without ALiBi (fwd_decode_q8_e4m3_alibi.cu: with).
#include "cuda/fwd_decode.h"
#include "cuda/fwd_decode_q8.cuh"

namespace gpuattn::decode {

void fwd_e4m3(const FwdParams& p, cudaStream_t stream) {
  run_decode_q8<false, false>(p, stream);
}

}  // namespace gpuattn::decode
