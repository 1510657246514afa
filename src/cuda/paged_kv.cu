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

// One 16-byte chunk of K and of V per thread and step, over (b, i, hk, chunk) of the new rows.
__global__ void append_kernel(const __grid_constant__ AppendParams p) {
  const int chunks = p.head_dim / 8;
  const std::int64_t per_row = static_cast<std::int64_t>(p.hkv) * chunks;
  const std::int64_t total = static_cast<std::int64_t>(p.batch) * p.seqlen_new * per_row;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += step) {
    const int c = static_cast<int>(i % chunks);
    const int hk = static_cast<int>((i / chunks) % p.hkv);
    const std::int64_t row = i / per_row;  // b * seqlen_new + r
    const int r = static_cast<int>(row % p.seqlen_new), b = static_cast<int>(row / p.seqlen_new);
    const std::int64_t j = static_cast<std::int64_t>(p.cache_seqlens[b]) + r;
    const auto* kn = static_cast<const std::uint16_t*>(p.k_new) + b * p.kn_batch_stride +
                     r * p.kn_row_stride + hk * p.kn_head_stride + c * 8;
    const auto* vn = static_cast<const std::uint16_t*>(p.v_new) + b * p.vn_batch_stride +
                     r * p.vn_row_stride + hk * p.vn_head_stride + c * 8;
    auto* kc = static_cast<std::uint16_t*>(p.k_cache) + p.kc_offset(b, j, hk) + c * 8;
    auto* vc = static_cast<std::uint16_t*>(p.v_cache) + p.vc_offset(b, j, hk) + c * 8;
    *reinterpret_cast<uint4*>(kc) = *reinterpret_cast<const uint4*>(kn);
    *reinterpret_cast<uint4*>(vc) = *reinterpret_cast<const uint4*>(vn);
  }
}

}  // namespace

void append(const AppendParams& p, cudaStream_t stream) {
  const std::int64_t chunks =
      static_cast<std::int64_t>(p.batch) * p.seqlen_new * p.hkv * (p.head_dim / 8);
  if (chunks == 0) return;
  constexpr int kThreads = 256;
  const std::int64_t blocks = (chunks + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
  append_kernel<<<grid, kThreads, 0, stream>>>(p);
  GPUATTN_CUDA_CHECK(cudaGetLastError());
}

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
