// The operations one GPT-2 step is made of, behind one small interface with a CPU (fp32) and a
// CUDA (f16/bf16, cuBLASLt) implementation. The engine writes the step once against it; attention
// goes through the library's own attention_forward on the same buffers, on either backend.
// Activations are row-major [rows, features] in dtype().
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/sampling.h"
#include "gpuattn/gpt2.h"
#include "gpuattn/types.h"

namespace gpuattn::engine {

// The vocabulary rounded up to 64: lm_head's logits row pitch is at least this, and a backend may
// write the columns from V up to it (the CUDA head is padded with zero rows to aligned shapes:
// gemm.cu says why). Whoever reads logits reads the first V columns of each row.
inline int padded_vocab(int V) {
  return (V + 63) / 64 * 64;
}

class ModelOps {
 public:
  virtual ~ModelOps() = default;

  virtual Device device() const = 0;
  virtual int device_index() const = 0;
  virtual DType dtype() const = 0;   // weights and activations
  virtual void* stream() const = 0;  // cudaStream_t, or nullptr on the CPU

  // Memory of the backend (freed by free(); never null for bytes > 0).
  virtual void* alloc(std::size_t bytes) = 0;
  virtual void free(void* p) = 0;
  // Host <-> backend copies, stream-ordered; download returns when the bytes are on the host.
  virtual void upload(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void download(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;  // within the backend
  // Host memory the backend copies from and to fastest (CUDA: pinned, so that upload and download
  // are plain DMA without a staging copy), freed by free_host().
  virtual void* alloc_host(std::size_t bytes) {
    return ::operator new(std::max<std::size_t>(bytes, 1));
  }
  virtual void free_host(void* p) { ::operator delete(p); }
  // n floats from the host into new backend memory of dtype().
  virtual void* upload_weights(const float* src, std::size_t n) = 0;
  // The output head's weights from wte [V, C] on the host, in the layout lm_head reads; the
  // first V x C elements are wte itself, row-major (what embed reads).
  virtual void* upload_head(const float* wte, int V, int C) = 0;

  // out[r] = wte[tokens[r]] + wpe[positions[r]]; tokens/positions are backend int32 [rows].
  virtual void embed(const std::int32_t* tokens, const std::int32_t* positions, int rows,
                     const void* wte, const void* wpe, int C, void* out) = 0;
  // out[r] = layernorm(x[src_rows ? src_rows[r] : r]) * w + b, over C features (fp32 math).
  virtual void layernorm(const void* x, const std::int32_t* src_rows, int rows, int C,
                         const void* w, const void* b, float eps, void* out) = 0;
  // out[rows, N] = act(x[rows, K] W[K, N] + bias[N]) (+ residual[rows, N]); act = GELU (tanh
  // form) when gelu. residual may alias out. gelu and residual are not both set (CUDA:
  // invalid_argument, whatever the rows).
  virtual void linear(const void* x, const void* W, const void* bias, const void* residual,
                      void* out, int rows, int K, int N, bool gelu) = 0;
  // linear(layernorm(x), ...) without a residual: x's rows layer-normed over K features (w, b,
  // eps) into ln [rows, K], then out[rows, N] = act(ln W + bias). A backend may fuse the two and
  // leave ln unwritten (CUDA does where its skinny kernel takes the call: dense weights at one row
  // of up to 2.4 M weights (cuda/skinny.h's policy), int8 / int4 at up to 8 rows, int4 at 9-16 as
  // two launches).
  virtual void layernorm_linear(const void* x, int rows, int K, const void* ln_w, const void* ln_b,
                                float eps, void* ln, const void* W, const void* bias, void* out,
                                int N, bool gelu) {
    layernorm(x, nullptr, rows, K, ln_w, ln_b, eps, ln);
    linear(ln, W, bias, nullptr, out, rows, K, N, gelu);
  }
  // Weight-only int8 linears (LinearWeights::int8, gpt2.h). upload_q8_weights quantizes W [K, N]
  // (fp32, host) with quantize_q8 into one block of backend memory laid out as q8_weights.h says;
  // linear_q8 and layernorm_linear_q8 are linear and layernorm_linear with such a W, computing
  // with the dequantized weights (q * scale). A backend without them throws not_supported.
  virtual void* upload_q8_weights(const float* W, int K, int N);
  virtual void linear_q8(const void* x, const void* Wq, const void* bias, const void* residual,
                         void* out, int rows, int K, int N, bool gelu);
  virtual void layernorm_linear_q8(const void* x, int rows, int K, const void* ln_w,
                                   const void* ln_b, float eps, void* ln, const void* Wq,
                                   const void* bias, void* out, int N, bool gelu) {
    layernorm(x, nullptr, rows, K, ln_w, ln_b, eps, ln);
    linear_q8(ln, Wq, bias, nullptr, out, rows, K, N, gelu);
  }
  // Weight-only int4 linears (LinearWeights::int4), as the int8 ones: upload_q4_weights quantizes
  // W with quantize_q4, by default into q4_bytes' layout (two values a byte along W's rows: the
  // CPU backend's); the CUDA backend stores shuffle_q4_mma's. Both take 4.5 bits a weight with the
  // scales. A backend without linear_q4 throws not_supported.
  virtual void* upload_q4_weights(const float* W, int K, int N);
  virtual void linear_q4(const void* x, const void* Wq, const void* bias, const void* residual,
                         void* out, int rows, int K, int N, bool gelu);
  virtual void layernorm_linear_q4(const void* x, int rows, int K, const void* ln_w,
                                   const void* ln_b, float eps, void* ln, const void* Wq,
                                   const void* bias, void* out, int N, bool gelu) {
    layernorm(x, nullptr, rows, K, ln_w, ln_b, eps, ln);
    linear_q4(ln, Wq, bias, nullptr, out, rows, K, N, gelu);
  }
  // A layer's attention input: qkv[rows, 3C] = layernorm_linear(x, ...) with W [C, 3C] (stored as
  // `weights` says: dense, or int8 / int4 as upload_q8_weights / upload_q4_weights made it), then
  // the keys and values into the caches (of `pool` elements) as scatter_kv. A backend may write
  // the caches from the linear itself (CUDA does where its one-row kernel takes the call: one
  // kernel fewer a layer).
  virtual void attn_input(const void* x, int rows, int C, const void* ln_w, const void* ln_b,
                          float eps, void* ln, const void* W, LinearWeights weights,
                          const void* bias, void* qkv, const std::int32_t* slots, void* k_pool,
                          void* v_pool, DType pool) {
    layernorm_linear_as(weights, x, rows, C, ln_w, ln_b, eps, ln, W, bias, qkv, 3 * C, false);
    scatter_kv(qkv, rows, C, slots, k_pool, v_pool, pool);
  }
  // linear / layernorm_linear with W stored as `weights` says (dense, int8, int4): the _q8 / _q4
  // form for a quantized W.
  void linear_as(LinearWeights weights, const void* x, const void* W, const void* bias,
                 const void* residual, void* out, int rows, int K, int N, bool gelu) {
    switch (weights) {
      case LinearWeights::int8: linear_q8(x, W, bias, residual, out, rows, K, N, gelu); break;
      case LinearWeights::int4: linear_q4(x, W, bias, residual, out, rows, K, N, gelu); break;
      default: linear(x, W, bias, residual, out, rows, K, N, gelu); break;
    }
  }
  void layernorm_linear_as(LinearWeights weights, const void* x, int rows, int K, const void* ln_w,
                           const void* ln_b, float eps, void* ln, const void* W, const void* bias,
                           void* out, int N, bool gelu) {
    switch (weights) {
      case LinearWeights::int8:
        layernorm_linear_q8(x, rows, K, ln_w, ln_b, eps, ln, W, bias, out, N, gelu);
        break;
      case LinearWeights::int4:
        layernorm_linear_q4(x, rows, K, ln_w, ln_b, eps, ln, W, bias, out, N, gelu);
        break;
      default: layernorm_linear(x, rows, K, ln_w, ln_b, eps, ln, W, bias, out, N, gelu); break;
    }
  }
  // logits fp32 [rows, V] (row pitch ld >= padded_vocab(V)) = x[rows, C] wte^T, head from
  // upload_head. Columns V to padded_vocab(V) may be written (zeros on CUDA); they are no logits.
  virtual void lm_head(const void* x, const void* head, float* logits, int rows, int C, int V,
                       int ld) = 0;
  // The output head stored as int8 / int4 (EngineOptions::head_weights; w is one of those):
  // upload_quantized_head stores head_linear(wte) [C, padded_vocab(V)] (q8_weights.h) as
  // upload_q8_weights / upload_q4_weights would, and lm_head_quantized computes lm_head's logits
  // (row pitch ld = padded_vocab(V); the padded columns come out 0) from it: those of wte's
  // dequantized values, which upload_head was given (`head`). By default it is the backend's
  // linear_q8 / linear_q4 into the logits, which needs fp32 activations (the CPU backend's) and
  // ld == padded_vocab(V): otherwise invalid_argument. The CUDA backend runs its int8 / int4
  // kernel with fp32 output where that takes the call, and lm_head over `head` elsewhere.
  virtual void* upload_quantized_head(const float* wte, int V, int C, LinearWeights w);
  virtual void lm_head_quantized(const void* x, const void* head, const void* head_q,
                                 LinearWeights w, float* logits, int rows, int C, int V, int ld);
  // The keys and values of every row into the paged caches: row r's k (qkv columns [C, 2C)) and
  // v ([2C, 3C)) go to slot slots[r] (page * page_size + row in page) of k_pool / v_pool
  // ([slots, C] each). The caches and slots are backend memory. The caches hold `pool` elements:
  // dtype() (a copy), or DType::e4m3 (KvCache::e4m3: each value rounded to nearest even,
  // saturated to +-448, as numeric.h's float_to_e4m3 from its fp32 value); any other is
  // invalid_argument.
  virtual void scatter_kv(const void* qkv, int rows, int C, const std::int32_t* slots, void* k_pool,
                          void* v_pool, DType pool) = 0;
  // tokens[r] = the token SampleRow r draws from logits row r (fp32, row pitch ld); rows and
  // tokens are backend memory. Every row is drawn on the backend, whatever its top_k / top_p.
  virtual void sample(const float* logits, int rows, int V, int ld, const SampleRow* params,
                      std::int32_t* tokens) = 0;
  virtual void synchronize() = 0;
  // Makes the backend's device current on the calling thread and returns the one that was, for
  // leave_device (CUDA; the CPU backend: nothing, -1). The engine holds it over each entry point,
  // so that its allocations, launches and cuBLASLt calls go to its device whatever the caller's.
  virtual int enter_device() { return -1; }
  virtual void leave_device(int /*previous*/) {}

  // CUDA graphs of the work enqueued between begin_capture and end_capture on stream() (CUDA
  // only; the CPU backend has none: supports_graphs() false). The handle replays it.
  virtual bool supports_graphs() const { return false; }
  virtual void begin_capture() {}
  virtual void* end_capture() { return nullptr; }
  // Ends a capture whose work threw, keeping nothing of it and no error of its own: the step's
  // exception is the one reported.
  virtual void abort_capture() {}
  virtual void launch_graph(void* /*graph*/) {}
  virtual void destroy_graph(void* /*graph*/) {}
};

// threads: CPU worker threads (0: hardware concurrency).
std::unique_ptr<ModelOps> make_cpu_ops(int threads);
// dtype f16 or bf16 on CUDA device `device_index` (a stream of its own). not_supported in a build
// without the CUDA backend.
std::unique_ptr<ModelOps> make_cuda_ops(DType dtype, int device_index);

}  // namespace gpuattn::engine
