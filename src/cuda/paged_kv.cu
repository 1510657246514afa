#include <cstdint>

#include "cuda/cuda_check.h"
#include "cuda/paged_kv.h"

namespace gpuattn::paged {
namespace {

// One 16-byte chunk (8 elements) of K and of V per thread and step; consecutive threads take
// consecutive chunks of a row, then the row's heads, so the stores are coalesced and the loads
// read whole 16-byte runs of a page row.
__global__ void gather_kernel(const __grid_constant__ FwdParams p, uint4* __restrict__ k_out,
                              uint4* __restrict__ v_out, int rows) {
  const int chunks = p.head_dim / 8;
  const std::int64_t per_row = static_cast<std::int64_t>(p.hkv) * chunks;
  const std::int64_t total = static_cast<std::int64_t>(p.batch) * rows * per_row;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += step) {
    const int c = static_cast<int>(i % chunks);
    const int hk = static_cast<int>((i / chunks) % p.hkv);
    const std::int64_t row = i / per_row;  // b * rows + j
    const int j = static_cast<int>(row % rows), b = static_cast<int>(row / rows);
    if (j >= p.keys_used(b)) continue;
    const auto* k = static_cast<const std::uint16_t*>(p.k) + p.k_offset(b, j, hk) + c * 8;
    const auto* v = static_cast<const std::uint16_t*>(p.v) + p.v_offset(b, j, hk) + c * 8;
    k_out[i] = *reinterpret_cast<const uint4*>(k);
    v_out[i] = *reinterpret_cast<const uint4*>(v);
  }
}

}  // namespace

void gather(const FwdParams& p, void* k_out, void* v_out, int rows, cudaStream_t stream) {
  const std::int64_t chunks = static_cast<std::int64_t>(p.batch) * rows * p.hkv * (p.head_dim / 8);
  if (chunks == 0) return;
  constexpr int kThreads = 256;
  const std::int64_t blocks = (chunks + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
  gather_kernel<<<grid, kThreads, 0, stream>>>(p, static_cast<uint4*>(k_out),
                                               static_cast<uint4*>(v_out), rows);
  GPUATTN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gpuattn::paged
