// What a dependency between two memory-bound steps costs: GPT-2 1.5B at one row is 192 int8
// linears a step, each reading 2.6-10 MB that the one before it must finish first, and s37-s38
// measured ~4-5 us a linear beyond its bytes at HBM speed. This probe runs a chain of S such steps
// (each CTA sums its slice of the step's weights, staged by cp.async ahead of the wait, and adds a
// fold of the whole previous step's output: an all-to-all dependency, as a linear's input is)
// four ways, and prints microseconds a step against the bytes-only floor:
//   floor       one kernel reading all S steps' bytes, no dependencies;
//   kernels     S kernels in a CUDA graph, plain stream order;
//   kernels+pdl S kernels in a CUDA graph with programmatic dependent launch (the engine's way):
//               each stages its slice, waits (griddepcontrol.wait), then lets the next launch;
//   persistent  one cooperative kernel of one CTA an SM looping over the S steps, a flag barrier
//               (a release add, an acquire spin) between steps, the next step's slice staged
//               before the spin: the "megakernel" shape.
// Every way's final output is checked against the host's (integer sums, exact).
//
//   gpuattn_boundary_probe [STEPS] [REPEATS]     (defaults 192 and 20; sm_90 for the pdl row)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "boundary_probe: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

constexpr int kThreads = 256;
constexpr std::uint32_t kMul = 2654435761u;

__host__ __device__ std::uint32_t word(std::uint64_t i) {  // the weights' contents
  std::uint64_t z = i * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ULL;
  return static_cast<std::uint32_t>(z >> 32);
}

__global__ void fill(std::uint32_t* w, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    w[i] = word(i);
  }
}

__device__ void cp_async16(void* smem, const void* gmem) {
  const auto s = static_cast<std::uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ void cp_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N>
__device__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
__device__ void pdl_wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ void pdl_launch() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// The block's wrapping sum of v (every thread gets it).
__device__ std::uint32_t block_sum(std::uint32_t v, std::uint32_t* red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  std::uint32_t s = 0;
  for (int i = 0; i < kThreads / 32; ++i) s += red[i];
  return s;
}

// Stage this CTA's slice of step s (words per CTA: per) into smem.
__device__ void stage(const std::uint32_t* w, int s, int per, int ctas, std::uint32_t* buf) {
  const std::uint32_t* src = w + (static_cast<std::uint64_t>(s) * ctas + blockIdx.x) * per;
  for (int i = threadIdx.x * 4; i < per; i += kThreads * 4) cp_async16(buf + i, src + i);
  cp_commit();
}

// One step's work once its slice is in buf and the previous output y_prev is complete.
__device__ std::uint32_t step_out(const std::uint32_t* y_prev, int ctas, const std::uint32_t* buf,
                                  int per, std::uint32_t* red) {
  std::uint32_t x = 0;
  for (int i = threadIdx.x; i < ctas; i += kThreads) x += y_prev == nullptr ? 0u : y_prev[i];
  x = y_prev == nullptr ? 1u : block_sum(x, red);
  std::uint32_t v = 0;
  for (int i = threadIdx.x; i < per; i += kThreads) v += buf[i];
  return block_sum(v, red) + x * kMul;
}

__global__ void __launch_bounds__(kThreads)
    step_kernel(const std::uint32_t* w, int s, int per, const std::uint32_t* y_prev,
                std::uint32_t* y, int pdl) {
  extern __shared__ __align__(16) std::uint32_t smem[];
  __shared__ std::uint32_t red[kThreads / 32];
  stage(w, s, per, gridDim.x, smem);  // nothing earlier writes the weights
  if (pdl) {
    pdl_wait();
    pdl_launch();
  }
  cp_wait<0>();
  __syncthreads();
  const std::uint32_t out = step_out(y_prev, gridDim.x, smem, per, red);
  if (threadIdx.x == 0) y[blockIdx.x] = out;
}

__global__ void __launch_bounds__(kThreads)
    persistent_kernel(const std::uint32_t* w, int steps, int per, std::uint32_t* y,
                      unsigned int* count) {
  extern __shared__ __align__(16) std::uint32_t smem[];
  __shared__ std::uint32_t red[kThreads / 32];
  const int ctas = gridDim.x;
  stage(w, 0, per, ctas, smem);
  for (int s = 0; s < steps; ++s) {
    if (s + 1 < steps) {
      stage(w, s + 1, per, ctas, smem + ((s + 1) % 2) * per);
    } else {
      cp_commit();  // an empty group keeps the count of groups in flight the same
    }
    if (s > 0 && threadIdx.x == 0) {  // every CTA's step s - 1 is out
      const unsigned int want = static_cast<unsigned int>(s) * ctas;
      unsigned int seen = 0;
      do {
        asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(seen) : "l"(count) : "memory");
      } while (seen < want);
    }
    cp_wait<1>();
    __syncthreads();
    const std::uint32_t out = step_out(s > 0 ? y + static_cast<std::size_t>(s - 1) * ctas : nullptr,
                                       ctas, smem + (s % 2) * per, per, red);
    if (threadIdx.x == 0) {
      y[static_cast<std::size_t>(s) * ctas + blockIdx.x] = out;
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(count) : "memory");
    }
    __syncthreads();  // the buffer is read before the next step refills it
  }
}

__global__ void __launch_bounds__(kThreads)
    floor_kernel(const uint4* w, std::uint64_t n, std::uint32_t* sink) {
  // 8 independent 16-byte loads in flight a thread (one a thread left HBM short of requests).
  constexpr int kUnroll = 8;
  const std::uint64_t stride = std::uint64_t{gridDim.x} * kThreads;
  std::uint32_t v = 0;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{kThreads} + threadIdx.x; i < n;
       i += kUnroll * stride) {
    uint4 q[kUnroll];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      q[j] = i + j * stride < n ? __ldcs(w + i + j * stride) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) v += q[j].x ^ q[j].y ^ q[j].z ^ q[j].w;
  }
  if (v == 0x12345678u) sink[0] = v;  // keeps the loads
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

int parse(const char* s, int lo, int hi, const char* name) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi) {
    std::fprintf(stderr, "boundary_probe: %s must be an integer in [%d, %d], not '%s'\n", name, lo,
                 hi, s);
    std::exit(2);
  }
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? parse(argv[1], 2, 4096, "STEPS") : 192;
  const int repeats = argc > 2 ? parse(argv[2], 1, 1000, "REPEATS") : 20;
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  const int ctas = prop.multiProcessorCount;
  // griddepcontrol is in the sm_90a code only: a GPU that runs another build's code (the
  // compute_80 PTX) has no waits in it, and its pdl row would be wrong.
  cudaFuncAttributes fa{};
  check(cudaFuncGetAttributes(&fa, step_kernel), "cudaFuncGetAttributes");
  const bool pdl_ok = prop.major >= 9 && fa.binaryVersion >= 90;
  cudaFuncAttributes pa{};
  check(cudaFuncGetAttributes(&pa, persistent_kernel), "cudaFuncGetAttributes");
  std::printf("device: %s, %d SMs; %d steps, one CTA an SM, median of %d runs\n", prop.name, ctas,
              steps, repeats);
  std::printf(
      "| MB a step | floor us/step (TB/s) | kernels | kernels+pdl | persistent | "
      "(each minus the floor) |\n|---:|---:|---:|---:|---:|---|\n");
  cudaStream_t st;
  check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate");
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "cudaEventCreate");
  check(cudaEventCreate(&e1), "cudaEventCreate");
  int failures = 0;
  // 2.6 MB is 1.5B's attn proj in int8; 10 MB its fc and mlp proj.
  for (const double mb : {0.5, 2.6, 10.0}) {
    const int per = std::max(4, static_cast<int>(mb * 1e6 / 4 / ctas) / 4 * 4);  // words a CTA
    const std::size_t smem1 = static_cast<std::size_t>(per) * 4;
    if (2 * smem1 + pa.sharedSizeBytes > prop.sharedMemPerBlockOptin) {
      std::printf(
          "| %.2f | skipped: two slices of %zu bytes do not fit a block's shared memory |\n", mb,
          smem1);
      continue;
    }
    const std::uint64_t words = static_cast<std::uint64_t>(steps) * ctas * per;
    std::uint32_t *w = nullptr, *y = nullptr, *sink = nullptr;
    unsigned int* count = nullptr;
    check(cudaMalloc(&w, words * 4), "cudaMalloc");
    check(cudaMalloc(&y, static_cast<std::size_t>(steps + 1) * ctas * 4), "cudaMalloc");
    check(cudaMalloc(&sink, 4), "cudaMalloc");
    check(cudaMalloc(&count, 4), "cudaMalloc");
    fill<<<4 * ctas, kThreads, 0, st>>>(w, words);
    check(cudaFuncSetAttribute(step_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(smem1)),
          "cudaFuncSetAttribute");
    check(cudaFuncSetAttribute(persistent_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(2 * smem1)),
          "cudaFuncSetAttribute");
    // The host's final output: y_s[c] = sum of c's slice of step s + (sum of y_{s-1}) * kMul.
    std::vector<std::uint32_t> want(static_cast<std::size_t>(ctas));
    std::uint32_t x = 1;
    for (int s = 0; s < steps; ++s) {
      std::uint32_t next = 0;
      for (int c = 0; c < ctas; ++c) {
        std::uint32_t v = 0;
        const std::uint64_t base = (static_cast<std::uint64_t>(s) * ctas + c) * per;
        for (int i = 0; i < per; ++i) v += word(base + i);
        want[c] = v + x * kMul;
        next += want[c];
      }
      x = next;
    }
    const auto verify = [&](const std::uint32_t* last, const char* how) {
      std::vector<std::uint32_t> got(static_cast<std::size_t>(ctas));
      check(cudaMemcpy(got.data(), last, got.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
      if (got != want) {
        std::fprintf(stderr, "boundary_probe: %s at %.1f MB a step: wrong output\n", how, mb);
        ++failures;
      }
    };
    // The kernel chains as graphs: y ping-pongs between two rows.
    const auto chain = [&](bool pdl) {
      cudaGraph_t g;
      check(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), "capture");
      for (int s = 0; s < steps; ++s) {
        cudaLaunchConfig_t cfg{};
        cfg.gridDim = dim3(ctas);
        cfg.blockDim = dim3(kThreads);
        cfg.dynamicSmemBytes = smem1;
        cfg.stream = st;
        cudaLaunchAttribute attr{};
        attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr.val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = &attr;
        cfg.numAttrs = pdl ? 1 : 0;
        const std::uint32_t* prev =
            s == 0 ? nullptr : y + static_cast<std::size_t>((s - 1) % 2) * ctas;
        check(cudaLaunchKernelEx(&cfg, step_kernel, static_cast<const std::uint32_t*>(w), s, per,
                                 prev, y + static_cast<std::size_t>(s % 2) * ctas, pdl ? 1 : 0),
              "cudaLaunchKernelEx");
      }
      check(cudaStreamEndCapture(st, &g), "capture");
      cudaGraphExec_t ge;
      check(cudaGraphInstantiate(&ge, g, 0), "cudaGraphInstantiate");
      check(cudaGraphDestroy(g), "cudaGraphDestroy");
      return ge;
    };
    // One run on y poisoned (0xff) and checked, then `repeats` timed ones (each between two
    // events; the host's submission of a launch is inside, ~0.05 us a step at 192 steps).
    const auto measure = [&](auto&& launch, const std::uint32_t* last, const char* how) {
      if (last != nullptr) {
        check(cudaMemsetAsync(y, 0xff, static_cast<std::size_t>(steps + 1) * ctas * 4, st),
              "cudaMemsetAsync");
        launch();
        check(cudaStreamSynchronize(st), "cudaStreamSynchronize");
        verify(last, how);
      } else {
        launch();  // warm-up
      }
      std::vector<double> us;
      for (int r = 0; r < repeats; ++r) {
        check(cudaEventRecord(e0, st), "cudaEventRecord");
        launch();
        check(cudaEventRecord(e1, st), "cudaEventRecord");
        check(cudaEventSynchronize(e1), "cudaEventSynchronize");
        float ms = 0.f;
        check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
        us.push_back(1000.0 * ms / steps);
      }
      return median(us);
    };
    const double floor_us = measure(
        [&] {
          floor_kernel<<<4 * ctas, kThreads, 0, st>>>(reinterpret_cast<const uint4*>(w), words / 4,
                                                      sink);
          check(cudaGetLastError(), "floor_kernel");
        },
        nullptr, "floor");
    const std::uint32_t* chain_last = y + static_cast<std::size_t>((steps - 1) % 2) * ctas;
    cudaGraphExec_t plain = chain(false);
    const double plain_us = measure([&] { check(cudaGraphLaunch(plain, st), "cudaGraphLaunch"); },
                                    chain_last, "kernels");
    check(cudaGraphExecDestroy(plain), "cudaGraphExecDestroy");
    double pdl_us = -1.0;
    if (pdl_ok) {
      cudaGraphExec_t pdl = chain(true);
      pdl_us = measure([&] { check(cudaGraphLaunch(pdl, st), "cudaGraphLaunch"); }, chain_last,
                       "kernels+pdl");
      check(cudaGraphExecDestroy(pdl), "cudaGraphExecDestroy");
    }
    const double persistent_us = measure(
        [&] {
          check(cudaMemsetAsync(count, 0, 4, st), "cudaMemsetAsync");
          int steps_arg = steps, per_arg = per;
          const std::uint32_t* w_arg = w;
          void* args[] = {&w_arg, &steps_arg, &per_arg, &y, &count};
          check(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(persistent_kernel), dim3(ctas),
                                            dim3(kThreads), args, 2 * smem1, st),
                "cudaLaunchCooperativeKernel");
        },
        y + static_cast<std::size_t>(steps - 1) * ctas, "persistent");
    const double step_mb = 4.0 * per * ctas / 1e6;
    char pdl_col[32] = "n/a", pdl_diff[32] = "n/a";
    if (pdl_ok) {
      std::snprintf(pdl_col, sizeof pdl_col, "%.2f", pdl_us);
      std::snprintf(pdl_diff, sizeof pdl_diff, "%+.2f", pdl_us - floor_us);
    }
    std::printf("| %.2f | %.2f (%.2f) | %.2f | %s | %.2f | %+.2f / %s / %+.2f |\n", step_mb,
                floor_us, step_mb / floor_us, plain_us, pdl_col, persistent_us, plain_us - floor_us,
                pdl_diff, persistent_us - floor_us);
    check(cudaFree(w), "cudaFree");
    check(cudaFree(y), "cudaFree");
    check(cudaFree(sink), "cudaFree");
    check(cudaFree(count), "cudaFree");
  }
  if (failures > 0) {
    std::fprintf(stderr, "boundary_probe: %d wrong outputs\n", failures);
    return 1;
  }
  return 0;
}
