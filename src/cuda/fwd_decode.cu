#include "core/env_switch.h"
#include "cuda/fwd_decode.cuh"
#include "cuda/fwd_decode.h"

namespace gpuattn::decode {

void fwd(const FwdParams& p, cudaStream_t stream) {
  if (p.kv_quantized()) {
    const bool i8 = p.kv_dtype == DType::i8;
    if (p.has_alibi()) return i8 ? fwd_i8_alibi(p, stream) : fwd_e4m3_alibi(p, stream);
    return i8 ? fwd_i8(p, stream) : fwd_e4m3(p, stream);
  }
  if (p.dtype == DType::f16) {
    if (p.head_dim == 64) return run_decode<__half, 64>(p, stream);
    if (p.head_dim == 128) return run_decode<__half, 128>(p, stream);
    if (p.head_dim == 256) return run_decode<__half, 256>(p, stream);
  } else if (p.dtype == DType::bf16) {
    if (p.head_dim == 64) return run_decode<__nv_bfloat16, 64>(p, stream);
    if (p.head_dim == 128) return run_decode<__nv_bfloat16, 128>(p, stream);
    if (p.head_dim == 256) return run_decode<__nv_bfloat16, 256>(p, stream);
  }
  throw Error(ErrorCode::not_supported, std::string("gpuattn: no decode kernel for dtype ") +
                                            to_string(p.dtype) + " head dim " +
                                            std::to_string(p.head_dim));
}

int lean_force() {
  static const int force = [] {
    const int c = env_choice("GPUATTN_DECODE_LEAN", {"auto", "0", "1"});
    return c == 0 ? -1 : c - 1;
  }();
  return force;
}

bool pdl_active() {
  using Tr = DecodeTraits<__half, 128>;
  return sm80::pdl_enabled() &&
         sm80::kernel_waits_for_pdl(reinterpret_cast<const void*>(&decode_kernel<Tr, false>));
}

}  // namespace gpuattn::decode
