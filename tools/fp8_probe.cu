// The GPU time of FP8 attention calls through the C++ API (E4M3 q, k and v, a scale per head, out
// bf16, head dim 128, or 64 / 256 with twice / half the heads) at bench/fp8_attention.py's
// shapes: each call between two events after a 256 MB memset that flushes L2, the median of REPS
// calls. Unlike do_bench, which queues its calls, it waits for each call before the next, so a
// call's host side (launch, tensor maps) shows in its time: its figures are for comparing builds of
// the FP8 kernel side by side (no Python module to build, a minute of a GPU machine's time), not
// for quoting against do_bench's. check_indices is off, as in the script's FP8 row: the call trusts
// its scales rather than synchronizing to check them. Builds compared in one run should take turns
// in balanced order (A B B A, bench/ab_probe.py): the same kernel measured 2-6% apart in two
// binaries run one after the other (2026-11-30-h200-s44).
//
//   gpuattn_fp8_probe [REPS] [--head-dim 64|128|256] [--only TEXT]      (default 50, 128)
//
// --only TEXT runs only the shapes whose line name contains TEXT ("S512 dense", "causal",
// "varlen16"), each case then in a process of its own: a probe's figures for one case can depend on
// what ran before it in the same process (2026-11-30-h200-s53 calls 5-9: the same SASS at S512 and
// S1024 dense measured 1.12x or 1.00x an older kernel, depending on which kernel had run the long
// shapes before it).
//
// GPUATTN_FP8_KERNEL=0 times the calls on the dequantized q (the path other FP8 calls take).
//
// One line a shape: "B4 H16 S4096 dense   us 703.2  TFLOP/s 781.8". The last shape is varlen:
// gpuattn bench --shapes varlen's 16 prompts of 1 to 4096 tokens in one packed causal call (until
// s46, varlen FP8 calls ran on a dequantized copy of q; since, on the FP8 kernel: 1.23x).
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "gpuattn/attention.h"
#include "gpuattn/prefill_lens.h"  // tools/gpuattn/

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "fp8_probe: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// E4M3 bytes of values in about [-4, 4] (never NaN), from a fixed xorshift stream.
__global__ void fill_e4m3(__nv_fp8_e4m3* x, long long n, unsigned seed) {
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += 256ll * gridDim.x) {
    unsigned s = static_cast<unsigned>(i) * 2654435761u ^ seed;
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    x[i] = __nv_fp8_e4m3((static_cast<float>(s & 0xffff) / 65535.f - 0.5f) * 8.f);
  }
}

struct Shape {
  int b, h, s;
  bool causal;
  std::vector<int> lens = {};  // varlen: the sequences' lengths (q and k alike), b of them
};

// A shape's line name, as printed before its figures.
std::string name_of(const Shape& sh) {
  char buf[96];
  if (!sh.lens.empty()) {
    std::snprintf(buf, sizeof buf, "varlen16 H%d max%d causal", sh.h, sh.s);
  } else {
    std::snprintf(buf, sizeof buf, "B%d H%d S%d %s", sh.b, sh.h, sh.s,
                  sh.causal ? "causal" : "dense ");
  }
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 50, D = 128;
  bool have_reps = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--only") {
      if (i + 1 == argc || argv[i + 1][0] == '\0') {
        std::fprintf(stderr, "fp8_probe: --only takes a non-empty part of a shape's name\n");
        return 2;
      }
      only = argv[++i];
      continue;
    }
    if (arg == "--head-dim") {
      if (i + 1 == argc || (std::string(argv[i + 1]) != "64" && std::string(argv[i + 1]) != "128" &&
                            std::string(argv[i + 1]) != "256")) {
        std::fprintf(stderr, "fp8_probe: --head-dim takes 64, 128 or 256, got '%s'\n",
                     i + 1 == argc ? "" : argv[i + 1]);
        return 2;
      }
      D = std::atoi(argv[++i]);
      continue;
    }
    char* end = nullptr;
    const long n = std::strtol(argv[i], &end, 10);
    if (have_reps || end == argv[i] || *end != '\0' || n < 1 || n > 10000) {
      std::fprintf(stderr,
                   "usage: %s [REPS] [--head-dim 64|128|256] [--only TEXT]: REPS a whole number in "
                   "[1, 10000], got '%s'\n",
                   argv[0], argv[i]);
      return 2;
    }
    reps = static_cast<int>(n);
    have_reps = true;
  }
  // Each shape's heads at head dim 128, scaled to keep H x D (H x D = 2048 for the sweep). The
  // script's fourth named shape, B16 H16 S1024 causal, is the sweep's S1024 causal point (listed
  // once: until s54 it ran twice, and ab_probe.py averaged the two).
  const auto heads = [&](int h) { return h * 128 / D; };
  std::vector<Shape> shapes = {
      {4, heads(16), 4096, false}, {4, heads(16), 4096, true}, {1, heads(32), 32768, true}};
  for (const bool causal : {false, true}) {
    for (const int s : {512, 1024, 2048, 4096, 8192, 16384}) {
      shapes.push_back({16384 / s, heads(16), s, causal});
    }
  }
  shapes.push_back({16, heads(16), 4096, true, gpuattn::tool::prefill_lens()});
  if (!only.empty()) {
    std::vector<Shape> picked;
    for (const Shape& sh : shapes) {
      if (name_of(sh).find(only) != std::string::npos) picked.push_back(sh);
    }
    if (picked.empty()) {
      std::fprintf(stderr, "fp8_probe: --only '%s' matches no shape's name (e.g. '%s')\n",
                   only.c_str(), name_of(shapes.front()).c_str());
      return 2;
    }
    shapes = picked;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "fp8_probe: no CUDA device\n");
    return 1;
  }
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  constexpr std::size_t kFlushBytes = 256u << 20;
  void* flush = nullptr;
  check(cudaMalloc(&flush, kFlushBytes), "cudaMalloc");
  float* scales = nullptr;
  check(cudaMalloc(&scales, 64 * sizeof(float)), "cudaMalloc");
  const std::vector<float> host_scales(64, 0.05f);
  check(cudaMemcpy(scales, host_scales.data(), 64 * sizeof(float), cudaMemcpyHostToDevice),
        "cudaMemcpy");
  cudaEvent_t t0, t1;
  check(cudaEventCreate(&t0), "cudaEventCreate");
  check(cudaEventCreate(&t1), "cudaEventCreate");

  for (const Shape& sh : shapes) {
    const bool varlen = !sh.lens.empty();
    std::vector<int> cu = {0};
    for (const int l : sh.lens) cu.push_back(cu.back() + l);
    const long long rows = varlen ? cu.back() : 1ll * sh.b * sh.s;
    const long long n = rows * sh.h * D;
    __nv_fp8_e4m3 *q, *k, *v;
    void* o;
    check(cudaMalloc(&q, n), "cudaMalloc");
    check(cudaMalloc(&k, n), "cudaMalloc");
    check(cudaMalloc(&v, n), "cudaMalloc");
    check(cudaMalloc(&o, 2 * n), "cudaMalloc");
    fill_e4m3<<<1024, 256, 0, stream>>>(q, n, 1u);
    fill_e4m3<<<1024, 256, 0, stream>>>(k, n, 2u);
    fill_e4m3<<<1024, 256, 0, stream>>>(v, n, 3u);
    check(cudaGetLastError(), "fill");
    using gpuattn::Device;
    using gpuattn::DType;
    using gpuattn::TensorView;
    gpuattn::AttentionArgs a;
    int* dcu = nullptr;
    if (varlen) {
      a.q = TensorView::contiguous(q, DType::e4m3, Device::cuda, {rows, sh.h, D});
      a.k = TensorView::contiguous(k, DType::e4m3, Device::cuda, {rows, sh.h, D});
      a.v = TensorView::contiguous(v, DType::e4m3, Device::cuda, {rows, sh.h, D});
      a.out = TensorView::contiguous(o, DType::bf16, Device::cuda, {rows, sh.h, D});
      check(cudaMalloc(&dcu, cu.size() * sizeof(int)), "cudaMalloc");
      check(cudaMemcpy(dcu, cu.data(), cu.size() * sizeof(int), cudaMemcpyHostToDevice),
            "cudaMemcpy");
      const auto entries = static_cast<std::int64_t>(cu.size());
      a.cu_seqlens_q = TensorView::contiguous(dcu, DType::i32, Device::cuda, {entries});
      a.cu_seqlens_k = a.cu_seqlens_q;
      a.max_seqlen_q = a.max_seqlen_k = *std::max_element(sh.lens.begin(), sh.lens.end());
    } else {
      a.q = TensorView::contiguous(q, DType::e4m3, Device::cuda, {sh.b, sh.s, sh.h, D});
      a.k = TensorView::contiguous(k, DType::e4m3, Device::cuda, {sh.b, sh.s, sh.h, D});
      a.v = TensorView::contiguous(v, DType::e4m3, Device::cuda, {sh.b, sh.s, sh.h, D});
      a.out = TensorView::contiguous(o, DType::bf16, Device::cuda, {sh.b, sh.s, sh.h, D});
    }
    a.q_scale = TensorView::contiguous(scales, DType::f32, Device::cuda, {sh.h});
    a.k_scale = TensorView::contiguous(scales, DType::f32, Device::cuda, {sh.h});
    a.v_scale = TensorView::contiguous(scales, DType::f32, Device::cuda, {sh.h});
    a.causal = sh.causal;
    a.check_indices = false;
    a.stream = stream;
    std::vector<float> ms(static_cast<std::size_t>(reps));
    try {
      for (int i = 0; i < 3; ++i) gpuattn::attention_forward(a);  // warm-up
      for (float& t : ms) {
        check(cudaMemsetAsync(flush, 0, kFlushBytes, stream), "flush");
        check(cudaEventRecord(t0, stream), "cudaEventRecord");
        gpuattn::attention_forward(a);
        check(cudaEventRecord(t1, stream), "cudaEventRecord");
        check(cudaEventSynchronize(t1), "cudaEventSynchronize");
        check(cudaEventElapsedTime(&t, t0, t1), "cudaEventElapsedTime");
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fp8_probe: %s\n", e.what());
      return 1;
    }
    std::sort(ms.begin(), ms.end());
    const double us = 1e3 * ms[ms.size() / 2];
    // Causal: the visible (row, key) pairs, s (s + 1) / 2 a sequence (s^2 / 2 for the dense
    // shapes, as bench/fp8_attention.py counts them).
    double pairs = 0;
    for (const int l : sh.lens) pairs += 0.5 * l * (l + 1.0);
    if (!varlen) pairs = sh.b * static_cast<double>(sh.s) * sh.s * (sh.causal ? 0.5 : 1.0);
    const double flop = 4.0 * sh.h * D * pairs;
    std::printf("%s  us %.1f  TFLOP/s %.1f\n", name_of(sh).c_str(), us, flop / us / 1e6);
    std::fflush(stdout);
    for (void* ptr : {static_cast<void*>(q), static_cast<void*>(k), static_cast<void*>(v), o,
                      static_cast<void*>(dcu)}) {
      check(cudaFree(ptr), "cudaFree");
    }
  }
  return 0;
}
