#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/cuda_check.h"
#include "cuda/paged_kv.h"
#include "cuda/rotary.cuh"
#include "cuda/rotary.h"

namespace gpuattn::rotary {
namespace {

// One work item (rotate_item) a thread and step.
template <typename T, typename Table>
__global__ void rotary_kernel(const __grid_constant__ RotaryParams p) {
  const std::int64_t total = items_of(p);
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t w = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; w < total;
       w += step) {
    rotate_item<T, Table>(p, w);
  }
}

template <typename T>
void launch(const RotaryParams& p, unsigned grid, cudaStream_t stream) {
  if (p.table_dtype == DType::f32) {
    rotary_kernel<T, float><<<grid, 256, 0, stream>>>(p);
  } else {
    rotary_kernel<T, T><<<grid, 256, 0, stream>>>(p);
  }
}

}  // namespace

void apply(const RotaryParams& p, cudaStream_t stream) {
  const std::int64_t total = items_of(p);
  if (total == 0) return;
  const unsigned grid = paged::grid_for(total);
  if (p.dtype == DType::bf16) {
    launch<__nv_bfloat16>(p, grid, stream);
  } else {
    launch<__half>(p, grid, stream);
  }
  GPUATTN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpuattn::rotary
