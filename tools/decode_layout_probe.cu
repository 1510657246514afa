// The split-KV decode kernel over a paged cache in two page layouts, the same keys and values in
// both: token-major pages [num_pages, page_size, H, D] (the engine's: a head's row of a page is
// 2D bytes at a pitch of 2HD), and head-major pages [num_pages, H, page_size, D] (a head's rows of
// a page contiguous). The question (s37, bench/results/2026-11-29-h200-s37/notes.md): at GPT-2
// 124M B128 the decode kernel reads its ~226 MB a layer at ~3.3 TB/s; is the token-major pitch
// part of why (DRAM locality), before the engine's cache is laid out otherwise?
// Prints the us a call and the TB/s of K and V for each layout, rounds alternated, and checks the
// two outputs are bitwise equal (the same values in the same order).
//
//   gpuattn_decode_layout_probe [B H D keys page_size rounds shuffle]
//   (default 128 12 64 576 16 5 0; shuffle 1: the pages of the pool handed out in random order)
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gpuattn/attention.h"

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "decode_layout_probe: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

__device__ __forceinline__ float hash_unit(std::uint64_t i) {
  i ^= i >> 33;
  i *= 0xff51afd7ed558ccdULL;
  i ^= i >> 33;
  i *= 0xc4ceb9fe1a85ec53ULL;
  i ^= i >> 33;
  return static_cast<float>(i >> 40) / static_cast<float>(1ULL << 24) * 2.0f - 1.0f;
}

__global__ void fill(__half* p, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    p[i] = __float2half(hash_unit(seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(i)));
  }
}

// head-major [pages, H, ps, D] from token-major [pages, ps, H, D]
__global__ void to_head_major(const __half* src, __half* dst, std::int64_t pages, int ps, int H,
                              int D) {
  const std::int64_t n = pages * ps * H * D;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int d = static_cast<int>(i % D);
    const int h = static_cast<int>(i / D % H);
    const int r = static_cast<int>(i / (static_cast<std::int64_t>(D) * H) % ps);
    const std::int64_t pg = i / (static_cast<std::int64_t>(D) * H * ps);
    dst[((pg * H + h) * ps + r) * D + d] = src[i];
  }
}

gpuattn::TensorView view(void* data, gpuattn::DType dt, std::vector<std::int64_t> shape,
                         std::vector<std::int64_t> stride) {
  gpuattn::TensorView t;
  t.data = data;
  t.dtype = dt;
  t.device = gpuattn::Device::cuda;
  t.rank = static_cast<int>(shape.size());
  std::copy(shape.begin(), shape.end(), t.shape.begin());
  std::copy(stride.begin(), stride.end(), t.stride.begin());
  return t;
}

int arg(int argc, char** argv, int i, int def) {
  return argc > i ? std::atoi(argv[i]) : def;
}

}  // namespace

int main(int argc, char** argv) {
  const int B = arg(argc, argv, 1, 128), H = arg(argc, argv, 2, 12), D = arg(argc, argv, 3, 64);
  const int keys = arg(argc, argv, 4, 576), ps = arg(argc, argv, 5, 16);
  const int rounds = arg(argc, argv, 6, 5), shuffle = arg(argc, argv, 7, 0);
  if (B < 1 || H < 1 || keys < 1 || ps < 1 || rounds < 1 || (D != 64 && D != 128 && D != 256)) {
    std::fprintf(stderr,
                 "decode_layout_probe: B %d H %d D %d keys %d page_size %d rounds %d: "
                 "need positive sizes and D 64, 128 or 256\n",
                 B, H, D, keys, ps, rounds);
    return 2;
  }
  const int per_seq = (keys + ps - 1) / ps;
  const std::int64_t pages = static_cast<std::int64_t>(B) * per_seq;
  const std::int64_t pool_elems = pages * ps * H * D;
  // The keys each sequence uses: keys - (b % 64) (a batch whose lengths differ, as a generation's
  // do when its prompts do), at least 1.
  std::vector<std::int32_t> used(B), table(static_cast<std::size_t>(B) * per_seq);
  std::vector<std::int32_t> order(static_cast<std::size_t>(pages));
  std::iota(order.begin(), order.end(), 0);
  if (shuffle) std::shuffle(order.begin(), order.end(), std::mt19937(7));
  for (int b = 0; b < B; ++b) {
    used[b] = std::max(1, keys - b % 64);
    for (int j = 0; j < per_seq; ++j)
      table[static_cast<std::size_t>(b) * per_seq + j] =
          order[static_cast<std::size_t>(b) * per_seq + j];
  }

  __half *k_tok, *v_tok, *k_head, *v_head, *q, *out_tok, *out_head;
  std::int32_t *d_used, *d_table;
  const std::size_t pool_bytes = static_cast<std::size_t>(pool_elems) * sizeof(__half);
  const std::size_t qo_bytes = static_cast<std::size_t>(B) * H * D * sizeof(__half);
  check(cudaMalloc(&k_tok, pool_bytes), "cudaMalloc");
  check(cudaMalloc(&v_tok, pool_bytes), "cudaMalloc");
  check(cudaMalloc(&k_head, pool_bytes), "cudaMalloc");
  check(cudaMalloc(&v_head, pool_bytes), "cudaMalloc");
  check(cudaMalloc(&q, qo_bytes), "cudaMalloc");
  check(cudaMalloc(&out_tok, qo_bytes), "cudaMalloc");
  check(cudaMalloc(&out_head, qo_bytes), "cudaMalloc");
  check(cudaMalloc(&d_used, used.size() * 4), "cudaMalloc");
  check(cudaMalloc(&d_table, table.size() * 4), "cudaMalloc");
  check(cudaMemcpy(d_used, used.data(), used.size() * 4, cudaMemcpyHostToDevice), "copy");
  check(cudaMemcpy(d_table, table.data(), table.size() * 4, cudaMemcpyHostToDevice), "copy");
  fill<<<1024, 256>>>(k_tok, pool_elems, 1);
  fill<<<1024, 256>>>(v_tok, pool_elems, 2);
  fill<<<256, 256>>>(q, static_cast<std::int64_t>(B) * H * D, 3);
  to_head_major<<<1024, 256>>>(k_tok, k_head, pages, ps, H, D);
  to_head_major<<<1024, 256>>>(v_tok, v_head, pages, ps, H, D);
  check(cudaMemset(out_tok, 0xff, qo_bytes), "poison");  // NaN halves
  check(cudaMemset(out_head, 0xff, qo_bytes), "poison");
  check(cudaDeviceSynchronize(), "setup");

  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  const std::int64_t C = static_cast<std::int64_t>(H) * D;
  const auto call = [&](bool head_major) {
    gpuattn::AttentionArgs a;
    const gpuattn::DType f16 = gpuattn::DType::f16;
    a.q = view(q, f16, {B, 1, H, D}, {C, C, D, 1});
    a.out = view(head_major ? out_head : out_tok, f16, {B, 1, H, D}, {C, C, D, 1});
    const std::vector<std::int64_t> shape = {pages, ps, H, D};
    const std::vector<std::int64_t> stride =
        head_major ? std::vector<std::int64_t>{ps * C, D, static_cast<std::int64_t>(ps) * D, 1}
                   : std::vector<std::int64_t>{ps * C, C, D, 1};
    a.k = view(head_major ? k_head : k_tok, f16, shape, stride);
    a.v = view(head_major ? v_head : v_tok, f16, shape, stride);
    a.seqused_k = view(d_used, gpuattn::DType::i32, {B}, {1});
    a.block_table = view(d_table, gpuattn::DType::i32, {B, per_seq}, {per_seq, 1});
    a.causal = true;
    a.check_indices = false;
    a.stream = stream;
    gpuattn::attention_forward(a);
  };
  // Every call reads the whole pool's used part once; nothing of it stays in L2 between calls
  // at the default size (226 MB a layout).
  double bytes = 0;
  for (int b = 0; b < B; ++b) bytes += 2.0 * used[b] * C * sizeof(__half);
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "cudaEventCreate");
  check(cudaEventCreate(&e1), "cudaEventCreate");
  call(false);
  call(true);
  check(cudaStreamSynchronize(stream), "warm-up");
  std::printf("B %d H %d D %d keys %d-%d page_size %d pages %s: %.1f MB of K and V a call\n", B, H,
              D, std::max(1, keys - std::min(B - 1, 63)), keys, ps,
              shuffle ? "shuffled" : "in order", bytes / 1e6);
  constexpr int kCalls = 20;
  for (int r = 0; r < rounds; ++r) {
    for (const bool hm : {false, true}) {
      check(cudaEventRecord(e0, stream), "record");
      for (int i = 0; i < kCalls; ++i) call(hm);
      check(cudaEventRecord(e1, stream), "record");
      check(cudaEventSynchronize(e1), "sync");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
      const double us = 1e3 * ms / kCalls;
      std::printf("round %d %-12s %8.2f us  %5.2f TB/s\n", r, hm ? "head-major" : "token-major", us,
                  bytes / (us * 1e-6) / 1e12);
    }
  }
  std::vector<std::uint16_t> a(qo_bytes / 2), b(qo_bytes / 2);
  check(cudaMemcpy(a.data(), out_tok, qo_bytes, cudaMemcpyDeviceToHost), "copy back");
  check(cudaMemcpy(b.data(), out_head, qo_bytes, cudaMemcpyDeviceToHost), "copy back");
  std::size_t differ = 0, nan = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    differ += a[i] != b[i];
    nan += (a[i] & 0x7c00) == 0x7c00 && (a[i] & 0x3ff) != 0;
  }
  std::printf(
      "outputs: %zu of %zu halves differ between the layouts; %zu NaN (poisoned, unwritten)\n",
      differ, a.size(), nan);
  return differ == 0 && nan == 0 ? 0 : 1;
}
