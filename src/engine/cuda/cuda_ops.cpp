// ModelOps on CUDA: f16 / bf16 weights and activations on one device and a stream of the engine's
// own; one-row linears with small weights (GPT-2 124M at B1) through the engine's own fused kernel
// (skinny.h says where), the other GEMMs through cuBLASLt (gemm.cu), the rest through kernels.cu.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/env_switch.h"
#include "engine/cuda/gemm.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/skinny.h"
#include "engine/model_ops.h"
#include "engine/q8_weights.h"
#include "gpuattn/numeric.h"

namespace gpuattn::engine {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // a failed cudaMalloc left for the next launch's check to report
    throw Error(ErrorCode::cuda_error,
                std::string("gpuattn engine: ") + what + " failed: " + cudaGetErrorString(e));
  }
}

class CudaOps final : public ModelOps {
 public:
  CudaOps(DType dtype, int device_index) : dtype_(dtype), device_(device_index) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {  // no driver or no device: none visible,
      (void)cudaGetLastError();                       // named below as an argument error
      count = 0;
    }
    if (device_index < 0 || device_index >= count) {
      throw Error(ErrorCode::invalid_argument,
                  "gpuattn::Gpt2Engine: device_index is " + std::to_string(device_index) +
                      ", this machine has " + std::to_string(count) + " CUDA devices");
    }
    const int previous = enter_device();  // the caller's device is current again afterwards
    try {
      acquire();
    } catch (...) {  // the destructor does not run for a constructor that throws
      release();
      leave_device(previous);
      throw;
    }
    leave_device(previous);
  }
  ~CudaOps() override { release(); }

 private:
  // The stream, the GEMM plans and the kernels' scratch, in the constructor; release() frees
  // whatever of them exists.
  void acquire() {
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    stream_ = s;
    gemm_ = std::make_unique<cuda::Gemm>(dtype_, stream_);
    check(cudaDeviceGetAttribute(&skinny_.sm_count, cudaDevAttrMultiProcessorCount, device_),
          "cudaDeviceGetAttribute");
    skinny_.partial_floats = kSkinnyPartialFloats;
    skinny_.count_slots = kSkinnyCountSlots;
    skinny_.partials = static_cast<float*>(alloc(skinny_.partial_floats * sizeof(float)));
    skinny_.counts = static_cast<std::int32_t*>(alloc(kSkinnyCountSlots * sizeof(std::int32_t)));
    check(cudaMemsetAsync(skinny_.counts, 0, kSkinnyCountSlots * sizeof(std::int32_t), s),
          "cudaMemsetAsync of the skinny counts");
    sample_.rows = kSampleScratchRows;
    sample_.sm_count = skinny_.sm_count;
    sample_.partial = alloc(static_cast<std::size_t>(kSampleScratchRows) * cuda::kSampleSplits * 8);
    sample_.counts = static_cast<int*>(alloc(kSampleScratchRows * sizeof(int)));
    check(cudaMemsetAsync(sample_.counts, 0, kSampleScratchRows * sizeof(int), s),
          "cudaMemsetAsync of the sampler's counts");
  }
  void release() {
    gemm_.reset();
    cudaFree(skinny_.partials);
    cudaFree(skinny_.counts);
    cudaFree(dequant_);
    cudaFree(sample_.partial);
    cudaFree(sample_.counts);
    if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  }

 public:
  Device device() const override { return Device::cuda; }
  int device_index() const override { return device_; }
  DType dtype() const override { return dtype_; }
  void* stream() const override { return stream_; }

  void* alloc(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
    return p;
  }
  void free(void* p) override { cudaFree(p); }
  void* alloc_host(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMallocHost(&p, std::max<std::size_t>(bytes, 1)), "cudaMallocHost");
    return p;
  }
  void free_host(void* p) override { cudaFreeHost(p); }
  void upload(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s()), "upload");
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s()), "download");
    check(cudaStreamSynchronize(s()), "cudaStreamSynchronize");
  }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s()), "copy");
  }
  void* upload_weights(const float* src, std::size_t n) override {
    std::vector<std::uint16_t> h(n);
    for (std::size_t i = 0; i < n; ++i) {
      h[i] = dtype_ == DType::bf16 ? float_to_bf16(src[i]) : float_to_f16(src[i]);
    }
    return upload_block(h.data(), n * 2);
  }
  // New device memory holding `bytes` of pageable host memory, copied on the engine's stream and
  // waited for (the host block may go when this returns). cudaMemcpy from pageable memory (the
  // legacy stream) may return before its DMA lands, and the engine's non-blocking stream does not
  // wait for it. Nothing is left allocated on failure.
  void* upload_block(const void* src, std::size_t bytes) {
    void* p = alloc(bytes);
    const cudaError_t e = cudaMemcpyAsync(p, src, bytes, cudaMemcpyHostToDevice, s());
    const cudaError_t e2 = e == cudaSuccess ? cudaStreamSynchronize(s()) : e;
    if (e2 != cudaSuccess) {
      cudaFree(p);
      check(e2, "weights upload");
    }
    return p;
  }

  void embed(const std::int32_t* tokens, const std::int32_t* positions, int rows, const void* wte,
             const void* wpe, int C, void* out) override {
    cuda::embed(dtype_, tokens, positions, rows, wte, wpe, C, out, stream_);
  }
  void layernorm(const void* x, const std::int32_t* src_rows, int rows, int C, const void* w,
                 const void* b, float eps, void* out) override {
    cuda::layernorm(dtype_, x, src_rows, rows, C, w, b, eps, out, stream_);
  }
  void linear(const void* x, const void* W, const void* bias, const void* residual, void* out,
              int rows, int K, int N, bool gelu) override {
    if (!try_skinny(skinny_args(x, W, bias, residual, out, rows, K, N, gelu))) {
      gemm_->linear(x, W, bias, residual, out, rows, K, N, gelu);
    }
  }
  void layernorm_linear(const void* x, int rows, int K, const void* ln_w, const void* ln_b,
                        float eps, void* ln, const void* W, const void* bias, void* out, int N,
                        bool gelu) override {
    if (!try_skinny(skinny_ln_args(x, ln_w, ln_b, eps, W, LinearWeights::dense, bias, out, rows, K,
                                   N, gelu))) {
      ModelOps::layernorm_linear(x, rows, K, ln_w, ln_b, eps, ln, W, bias, out, N, gelu);
    }
  }
  // Weight-only int8 and int4 linears: quantized on the host; the dequantization scratch (the GEMM
  // path's W, for rows the kernels do not take) grows here, never during a step (a graph capture).
  void* upload_q8_weights(const float* W, int K, int N) override {
    return upload_quantized(W, K, N, LinearWeights::int8, true);
  }
  void* upload_q4_weights(const float* W, int K, int N) override {
    return upload_quantized(W, K, N, LinearWeights::int4, true);
  }
  // The quantized head needs no dequantization scratch: above the kernels' rows lm_head_quantized
  // reads the dequantized head upload_head holds.
  void* upload_quantized_head(const float* wte, int V, int C, LinearWeights w) override {
    if (w != LinearWeights::int8 && w != LinearWeights::int4) {
      return ModelOps::upload_quantized_head(wte, V, C, w);  // (its error)
    }
    const std::vector<float> W = head_linear(wte, V, C);
    return upload_quantized(W.data(), C, padded_vocab(V), w, false);
  }
  // The int8 / int4 kernel (fp32 logits out) at the rows it takes (int4 up to 16, int8 up to 8),
  // else cuBLASLt over the dequantized head.
  void lm_head_quantized(const void* x, const void* head, const void* head_q, LinearWeights w,
                         float* logits, int rows, int C, int V, int ld) override {
    if (w != LinearWeights::int8 && w != LinearWeights::int4) {
      throw Error(ErrorCode::invalid_argument,
                  "gpuattn engine: the quantized output head with LinearWeights " +
                      std::to_string(static_cast<int>(w)) + ": int8 or int4");
    }
    cuda::SkinnyArgs a =
        skinny_args(x, head_q, nullptr, nullptr, logits, rows, C, padded_vocab(V), false);
    a.q8 = w == LinearWeights::int8;
    a.q4 = w == LinearWeights::int4;
    a.f32_out = true;
    a.ld = ld;
    if (!try_skinny(a)) lm_head(x, head, logits, rows, C, V, ld);
  }
  void linear_q8(const void* x, const void* Wq, const void* bias, const void* residual, void* out,
                 int rows, int K, int N, bool gelu) override {
    linear_quantized(LinearWeights::int8, x, Wq, bias, residual, out, rows, K, N, gelu);
  }
  void layernorm_linear_q8(const void* x, int rows, int K, const void* ln_w, const void* ln_b,
                           float eps, void* ln, const void* Wq, const void* bias, void* out, int N,
                           bool gelu) override {
    layernorm_linear_quantized(LinearWeights::int8, x, rows, K, ln_w, ln_b, eps, ln, Wq, bias, out,
                               N, gelu);
  }
  void linear_q4(const void* x, const void* Wq, const void* bias, const void* residual, void* out,
                 int rows, int K, int N, bool gelu) override {
    linear_quantized(LinearWeights::int4, x, Wq, bias, residual, out, rows, K, N, gelu);
  }
  void layernorm_linear_q4(const void* x, int rows, int K, const void* ln_w, const void* ln_b,
                           float eps, void* ln, const void* Wq, const void* bias, void* out, int N,
                           bool gelu) override {
    layernorm_linear_quantized(LinearWeights::int4, x, rows, K, ln_w, ln_b, eps, ln, Wq, bias, out,
                               N, gelu);
  }
  // The keys and values written by the one-row kernel's epilogue where it takes the linear (16-bit
  // or e4m3 caches; scatter_kv's kernel fewer); elsewhere layernorm_linear(_q8, _q4) then
  // scatter_kv (which names a pool type it cannot write).
  void attn_input(const void* x, int rows, int C, const void* ln_w, const void* ln_b, float eps,
                  void* ln, const void* W, LinearWeights weights, const void* bias, void* qkv,
                  const std::int32_t* slots, void* k_pool, void* v_pool, DType pool) override {
    if (pool != dtype_ && pool != DType::e4m3) {  // before anything is launched
      throw Error(ErrorCode::invalid_argument,
                  std::string("gpuattn engine: attn_input into a ") + to_string(pool) +
                      " cache: " + to_string(dtype_) + " or float8_e4m3fn");
    }
    cuda::SkinnyArgs a =
        skinny_ln_args(x, ln_w, ln_b, eps, W, weights, bias, qkv, rows, C, 3 * C, false);
    a.kv_slots = slots;
    a.k_pool = k_pool;
    a.v_pool = v_pool;
    a.kv_e4m3 = pool == DType::e4m3;
    if (!try_skinny(a)) {
      ModelOps::attn_input(x, rows, C, ln_w, ln_b, eps, ln, W, weights, bias, qkv, slots, k_pool,
                           v_pool, pool);
    }
  }
  // wte padded with zero rows to Vp = padded_vocab(V), [Vp, C], then its transpose [C, Vp]:
  // the head GEMM reads the first at a few rows and the second above, over Vp columns (gemm.cu
  // says why both, and why padded). The first V rows are wte itself, where embed reads them.
  void* upload_head(const float* wte, int V, int C) override {
    const std::size_t Vp = static_cast<std::size_t>(padded_vocab(V));
    const std::size_t n = Vp * C;
    std::vector<float> both(2 * n, 0.0f);
    std::copy(wte, wte + static_cast<std::size_t>(V) * C, both.begin());
    for (int v = 0; v < V; ++v) {
      for (int c = 0; c < C; ++c) {
        both[n + static_cast<std::size_t>(c) * Vp + v] = wte[static_cast<std::size_t>(v) * C + c];
      }
    }
    return upload_weights(both.data(), both.size());
  }
  void lm_head(const void* x, const void* head, float* logits, int rows, int C, int V,
               int ld) override {
    const int Vp = padded_vocab(V);
    const auto* e = static_cast<const char*>(head);
    gemm_->lm_head(x, e, e + static_cast<std::size_t>(Vp) * C * 2, logits, rows, C, Vp, ld);
  }
  void scatter_kv(const void* qkv, int rows, int C, const std::int32_t* slots, void* k_pool,
                  void* v_pool, DType pool) override {
    cuda::scatter_kv(dtype_, qkv, rows, C, slots, k_pool, v_pool, pool, stream_);
  }
  void sample(const float* logits, int rows, int V, int ld, const SampleRow* params,
              std::int32_t* tokens) override {
    cuda::sample(logits, rows, V, ld, params, tokens, sample_, stream_);
  }
  void synchronize() override { check(cudaStreamSynchronize(s()), "cudaStreamSynchronize"); }
  int enter_device() override {
    int previous = 0;
    check(cudaGetDevice(&previous), "cudaGetDevice");
    if (previous != device_) check(cudaSetDevice(device_), "cudaSetDevice");
    return previous;
  }
  void leave_device(int previous) override {
    if (previous >= 0 && previous != device_) cudaSetDevice(previous);
  }

  bool supports_graphs() const override { return true; }
  void begin_capture() override {
    // Relaxed: the library's calls may query the device or pointers while the step is captured.
    check(cudaStreamBeginCapture(s(), cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
  }
  void* end_capture() override {
    cudaGraph_t graph = nullptr;
    check(cudaStreamEndCapture(s(), &graph), "cudaStreamEndCapture");
    cudaGraphExec_t exec = nullptr;
    const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    check(e, "cudaGraphInstantiate");
    return exec;
  }
  void abort_capture() override {
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(s(), &graph) == cudaSuccess && graph != nullptr) {
      cudaGraphDestroy(graph);
    }
    (void)cudaGetLastError();  // an invalidated capture's error is the step's, already thrown
  }
  void launch_graph(void* graph) override {
    check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), s()), "cudaGraphLaunch");
  }
  void destroy_graph(void* graph) override {
    cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
  }

 private:
  cudaStream_t s() const { return static_cast<cudaStream_t>(stream_); }

  // linear_q8 / linear_q4 and their layernorm forms (lw: int8 or int4): the engine's kernel
  // where it takes the call, else W dequantized for cuBLASLt.
  void linear_quantized(LinearWeights lw, const void* x, const void* Wq, const void* bias,
                        const void* residual, void* out, int rows, int K, int N, bool gelu) {
    cuda::SkinnyArgs a = skinny_args(x, Wq, bias, residual, out, rows, K, N, gelu);
    a.q8 = lw == LinearWeights::int8;
    a.q4 = lw == LinearWeights::int4;
    if (!try_skinny(a)) {
      gemm_->linear(x, dequantized(Wq, K, N, lw), bias, residual, out, rows, K, N, gelu);
    }
  }
  void layernorm_linear_quantized(LinearWeights lw, const void* x, int rows, int K,
                                  const void* ln_w, const void* ln_b, float eps, void* ln,
                                  const void* Wq, const void* bias, void* out, int N, bool gelu) {
    if (!try_skinny(skinny_ln_args(x, ln_w, ln_b, eps, Wq, lw, bias, out, rows, K, N, gelu))) {
      layernorm(x, nullptr, rows, K, ln_w, ln_b, eps, ln);
      gemm_->linear(ln, dequantized(Wq, K, N, lw), bias, nullptr, out, rows, K, N, gelu);
    }
  }

  static cuda::SkinnyArgs skinny_args(const void* x, const void* W, const void* bias,
                                      const void* residual, void* out, int rows, int K, int N,
                                      bool gelu) {
    cuda::check_linear_epilogue(gelu, residual);  // every path, whatever the rows
    cuda::SkinnyArgs a;
    a.x = x;
    a.W = W;
    a.bias = bias;
    a.residual = residual;
    a.out = out;
    a.rows = rows;
    a.K = K;
    a.N = N;
    a.gelu = gelu;
    return a;
  }
  // The same with the layernorm ahead fused (ln_w, ln_b, eps), W stored as `weights` says.
  static cuda::SkinnyArgs skinny_ln_args(const void* x, const void* ln_w, const void* ln_b,
                                         float eps, const void* W, LinearWeights weights,
                                         const void* bias, void* out, int rows, int K, int N,
                                         bool gelu) {
    cuda::SkinnyArgs a = skinny_args(x, W, bias, nullptr, out, rows, K, N, gelu);
    a.ln_w = ln_w;
    a.ln_b = ln_b;
    a.eps = eps;
    a.q8 = weights == LinearWeights::int8;
    a.q4 = weights == LinearWeights::int4;
    return a;
  }
  // The engine's own kernel where its policy takes the call (skinny.h; int8 W at up to
  // kSkinnyMaxRowsQ8 rows, 1 byte a weight read against the dequantized path's 5: int8 in, 16 bits
  // out and back); false: take the general path. Int4 W at 9 to kQ4ChunkedMaxRows rows: the int4
  // kernel once per 8 rows (0.56 bytes a weight each time, against the dequantized path's 4.6).
  bool try_skinny(const cuda::SkinnyArgs& a) {
    if (a.q8 && a.rows > cuda::kSkinnyMaxRowsQ8 && a.rows <= 2 * cuda::kSkinnyMaxRowsQ8 &&
        q8_two_launches()) {
      return try_skinny_chunks(a, cuda::kSkinnyMaxRowsQ8);
    }
    if (a.q4 && a.rows > cuda::kSkinnyMaxRowsQ4 && a.rows <= kQ4ChunkedMaxRows && q4_chunks()) {
      return try_skinny_chunks(a, cuda::kSkinnyMaxRowsQ4);
    }
    const cuda::SkinnyPlan plan =
        cuda::skinny_plan(a.rows, a.K, a.N, a.W, skinny_, true, a.q8, a.q4);
    if (!plan.ok) return false;
    cuda::skinny_linear(dtype_, plan, a, skinny_, stream_);
    return true;
  }
  // Experiment switch GPUATTN_SKINNY_Q8_TWO_LAUNCHES=1: int8 steps of 9-16 rows as two launches
  // of the kernel (rows 0-7, then the rest), reading the int8 W twice (2 bytes a weight), instead
  // of dequantizing W for cuBLASLt (5). Read once; a value other than 0 or 1 throws.
  static bool q8_two_launches() {
    static const bool on = env_flag("GPUATTN_SKINNY_Q8_TWO_LAUNCHES", false);
    return on;
  }
  // Int4 calls of 9 to kQ4ChunkedMaxRows rows as two launches of the int4 kernel
  // (GPUATTN_SKINNY_Q4_CHUNKS, default 1; 0 dequantizes W for cuBLASLt there). Read once; a value
  // other than 0 or 1 throws. H200, same runs (s41 call 5): 124M B16 int4 30.2K tok/s against
  // 26.8-27.0K dequantized; at B32, as four launches, 32.8-33.5K against 49.9-51.2K: so 16 rows.
  static constexpr int kQ4ChunkedMaxRows = 16;
  static bool q4_chunks() {
    static const bool on = env_flag("GPUATTN_SKINNY_Q4_CHUNKS", true);
    return on;
  }
  // The call as launches over `chunk` rows each (the last takes the rest; at most two: both
  // callers split at most 2 x chunk rows); false, launching nothing, where the kernel's plan takes
  // any of them not.
  static_assert(kQ4ChunkedMaxRows <= 2 * cuda::kSkinnyMaxRowsQ4, "int4 chunks: two launches");
  bool try_skinny_chunks(const cuda::SkinnyArgs& a, int chunk) {
    constexpr int kMaxParts = 2;
    if (chunk < 1 || a.rows > kMaxParts * chunk) return false;
    const std::size_t elem = element_size(dtype_);
    const auto at = [&](const void* p, int row, int width) -> const void* {
      return p == nullptr
                 ? nullptr
                 : static_cast<const char*>(p) + static_cast<std::size_t>(row) * width * elem;
    };
    std::array<std::pair<cuda::SkinnyArgs, cuda::SkinnyPlan>, kMaxParts> parts;
    int n = 0;
    for (int r0 = 0; r0 < a.rows; r0 += chunk) {
      cuda::SkinnyArgs c = a;
      c.rows = std::min(chunk, a.rows - r0);
      c.x = at(a.x, r0, a.K);
      c.residual = at(a.residual, r0, a.N);
      c.out =
          a.f32_out
              ? static_cast<void*>(static_cast<float*>(a.out) + static_cast<std::size_t>(r0) * a.ld)
              : const_cast<void*>(at(a.out, r0, a.N));
      if (a.kv_slots != nullptr) c.kv_slots = a.kv_slots + r0;
      const cuda::SkinnyPlan plan =
          cuda::skinny_plan(c.rows, c.K, c.N, c.W, skinny_, true, c.q8, c.q4);
      if (!plan.ok) return false;
      parts[static_cast<std::size_t>(n++)] = {c, plan};
    }
    for (int i = 0; i < n; ++i) {
      cuda::skinny_linear(dtype_, parts[static_cast<std::size_t>(i)].second,
                          parts[static_cast<std::size_t>(i)].first, skinny_, stream_);
    }
    return true;
  }

  // The skinny kernel's split-K partials (16 MB: 8 rows x 64 splits of 8192 columns) and counts
  // (a 64-column slice each: up to 262144 columns).
  static constexpr std::size_t kSkinnyPartialFloats = std::size_t(4) << 20;
  static constexpr int kSkinnyCountSlots = 4096;

  // W [K, N] quantized (lw: int8 or int4) in the kernels' fragment order (shuffle_q8_mma /
  // shuffle_q4_mma), then the scales, as one block of device memory; with gemm_path the
  // dequantization scratch first grown to K x N (so that a failed allocation leaves no uploaded
  // block behind).
  void* upload_quantized(const float* W, int K, int N, LinearWeights lw, bool gemm_path) {
    const bool q4 = lw == LinearWeights::int4;
    check_quantized_shape(K, N, q4 ? "int4" : "int8");  // before any size is computed from K, N
    if (gemm_path) reserve_dequant(K, N);
    std::vector<unsigned char> block(q4 ? q4_mma_bytes(K, N) : q8_mma_bytes(K, N), 0);
    std::vector<std::int8_t> q(static_cast<std::size_t>(K) * static_cast<std::size_t>(N));
    if (q4) {
      quantize_q4(W, K, N, q.data(),
                  reinterpret_cast<float*>(block.data() + q4_mma_scales_offset(K, N)));
      shuffle_q4_mma(q.data(), K, N, block.data());
    } else {
      quantize_q8(W, K, N, q.data(),
                  reinterpret_cast<float*>(block.data() + q8_mma_scales_offset(K, N)));
      shuffle_q8_mma(q.data(), K, N, reinterpret_cast<std::int8_t*>(block.data()));
    }
    return upload_block(block.data(), block.size());
  }

  // The sampler's split greedy rows (kernels.h): partial bests and counts for up to this many
  // rows a call (256 KB and 16 KB; more rows take one block a row).
  static constexpr int kSampleScratchRows = 4096;
  cuda::SampleScratch sample_;

  DType dtype_;
  int device_;
  void* stream_ = nullptr;
  std::unique_ptr<cuda::Gemm> gemm_;
  cuda::SkinnyScratch skinny_;
  // W of an int8 or int4 linear dequantized for the GEMM path (the largest K x N uploaded, dtype).
  void* dequant_ = nullptr;
  std::size_t dequant_bytes_ = 0;
  // W of an int8 or int4 block (lw), dequantized into dequant_ for the GEMM path.
  const void* dequantized(const void* Wq, int K, int N, LinearWeights lw) {
    const bool q4 = lw == LinearWeights::int4;
    if (static_cast<std::size_t>(K) * static_cast<std::size_t>(N) * 2 > dequant_bytes_) {
      throw Error(ErrorCode::invalid_argument,
                  std::string("gpuattn engine: ") + (q4 ? "int4" : "int8") + " linear of " +
                      std::to_string(K) + " x " + std::to_string(N) + " was not uploaded by " +
                      (q4 ? "upload_q4_weights" : "upload_q8_weights"));
    }
    if (q4) {
      cuda::dequant_q4(dtype_, Wq, K, N, dequant_, stream_);
    } else {
      cuda::dequant_q8(dtype_, Wq, K, N, dequant_, stream_);
    }
    return dequant_;
  }
  // The dequantization scratch grown to K x N (at upload, never during a step: a graph capture).
  void reserve_dequant(int K, int N) {
    const std::size_t need = static_cast<std::size_t>(K) * static_cast<std::size_t>(N) * 2;
    if (need > dequant_bytes_) {  // first, so that a failed allocation leaks nothing
      check(cudaStreamSynchronize(s()), "cudaStreamSynchronize");
      cudaFree(dequant_);
      dequant_ = nullptr;
      dequant_bytes_ = 0;
      dequant_ = alloc(need);
      dequant_bytes_ = need;
    }
  }
};

}  // namespace

std::unique_ptr<ModelOps> make_cuda_ops(DType dtype, int device_index) {
  return std::make_unique<CudaOps>(dtype, device_index);
}

}  // namespace gpuattn::engine
