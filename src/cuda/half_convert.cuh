// Device conversions between float and the 16-bit storage types, round to nearest even; shared by
// the engine's and the distributed layer's kernels.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace gpuattn::cvt {

__device__ inline float to_f(__half v) {
  return __half2float(v);
}
__device__ inline float to_f(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
__device__ inline T from_f(float v);
template <>
__device__ inline __half from_f<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ inline __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

}  // namespace gpuattn::cvt
