// CUDA error checking that turns a failed runtime call into a gpuattn::Error naming the call.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "gpuattn/types.h"

#define GPUATTN_CUDA_CHECK(expr)                                                                   \
  do {                                                                                             \
    const cudaError_t gpuattn_err_ = (expr);                                                       \
    if (gpuattn_err_ != cudaSuccess) {                                                             \
      throw ::gpuattn::Error(::gpuattn::ErrorCode::cuda_error,                                     \
                             std::string(#expr) + " failed: " + cudaGetErrorString(gpuattn_err_) + \
                                 " (" __FILE__ ")");                                               \
    }                                                                                              \
  } while (0)
