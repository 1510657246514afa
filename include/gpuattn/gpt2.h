// The GPT-2 inference engine (DESIGN.md's GPT-2 engine): weights from safetensors in the Hugging
// Face layout, the forward pass on the CUDA backend (cuBLASLt GEMMs with bias, GELU and residual
// fused into their epilogues, our layernorm and sampling kernels, our attention over a paged KV
// cache) or on the CPU backend (fp32), and batched generation driven by the continuous-batching
// scheduler over the KV cache manager.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpuattn/attention.h"
#include "gpuattn/scheduler.h"

namespace gpuattn {

// Hugging Face GPT2Config's fields that shape the model. n_embd / n_head is the head dim, which
// must be one the attention supports (64, 128 or 256; GPT-2's four sizes all use 64).
struct Gpt2Config {
  int n_layer = 12;
  int n_head = 12;
  int n_embd = 768;
  int n_positions = 1024;  // the longest sequence the model sees (prompt + generated - 1)
  int vocab_size = 50257;
  float layer_norm_epsilon = 1e-5f;

  int head_dim() const { return n_embd / n_head; }
  // invalid_argument naming the field for a config no kernel runs.
  void validate() const;
};

// How the engine stores the four linears of each layer (attn.c_attn, attn.c_proj, mlp.c_fc,
// mlp.c_proj). dense: in the engine's dtype. int8: weight-only int8 with group-wise scales; each
// group of kGpt2Q8Group consecutive rows of W [in, out] has one fp32 scale a column, the group's
// largest |w| / 127, and each weight is stored as the nearest multiple of it (symmetric,
// -127..127). int4: the same groups and scales with 7 for 127 (-7..7, stored two a byte;
// 4.5 bits a weight with the scales). Activations, embeddings, layernorms, biases and (unless
// EngineOptions::head_weights says otherwise) the output head keep their type; the linears compute
// with the dequantized weights exactly (Gpt2Weights::with_int8_linears / with_int4_linears give
// them).
enum class LinearWeights { dense, int8, int4 };

// How the engine stores its KV cache. model: in the activations' type (dtype on CUDA, fp32 on the
// CPU). e4m3: FP8 E4M3 with unit scales, half a 16-bit cache's bytes: each key and value x is
// stored as e4m3(x), rounded to nearest even and saturated to +-448 (a relative step of 2^-3;
// magnitudes up to 2^-10 become 0). Prompts attend to their own keys and values unquantized
// (straight from the GEMM); decode steps read the 8-bit cache in place, their own newest key and
// value included. A request preempted and recomputed (the scheduler's recompute: one prefill of
// its prompt and the tokens it has so far) attends to all of those unquantized in that prefill,
// so its later tokens can differ from an uninterrupted run's, as they cannot with model.
enum class KvCache { model, e4m3 };
constexpr int kGpt2Q8Group = 64;

// The weights, fp32 on the host, in the Hugging Face GPT-2 layout: the Conv1D weights are
// [in, out] (y = x W + b); lm_head is tied to wte.
struct Gpt2Weights {
  struct Layer {
    std::vector<float> ln_1_w, ln_1_b;            // [C]
    std::vector<float> c_attn_w, c_attn_b;        // [C, 3C], [3C]: q, k, v, each head-major
    std::vector<float> attn_proj_w, attn_proj_b;  // [C, C], [C]
    std::vector<float> ln_2_w, ln_2_b;            // [C]
    std::vector<float> c_fc_w, c_fc_b;            // [C, 4C], [4C]
    std::vector<float> mlp_proj_w, mlp_proj_b;    // [4C, C], [C]
  };
  Gpt2Config config;
  std::vector<float> wte;  // [vocab_size, C]
  std::vector<float> wpe;  // [n_positions, C]
  std::vector<Layer> layers;
  std::vector<float> ln_f_w, ln_f_b;  // [C]

  // Loads `path`: a model.safetensors file, or a directory holding one. The config comes from
  // config.json beside it when there is one (n_layer, n_head, n_embd, n_positions, vocab_size,
  // layer_norm_epsilon), otherwise from the tensors' shapes with n_head = n_embd / 64. Tensor
  // names may carry the "transformer." prefix (GPT2LMHeadModel.save_pretrained) or not (the
  // original checkpoints); F32, F16 and BF16 tensors are read; lm_head.weight, when present, must
  // equal wte (GPT-2 ties them) and the attention mask buffers (attn.bias, attn.masked_bias) are
  // ignored. Every missing tensor, wrong shape or dtype is an invalid_argument naming it.
  static Gpt2Weights load(const std::string& path);
  // Writes model.safetensors (F32, "transformer."-prefixed names, no lm_head) and config.json
  // into directory `dir` (created if missing), as GPT2LMHeadModel.save_pretrained would. What
  // load() would refuse (a layer count other than n_layer, a tensor of the wrong size, a value not
  // finite) is an invalid_argument before anything is written; each file is written whole or not
  // at all.
  void save(const std::string& dir) const;
  // invalid_argument, prefixed `who`, naming the first tensor whose size is not the config's, or
  // a layer count other than n_layer (the engine and the reference check this first).
  void check_shapes(const std::string& who) const;
  // Random weights from `seed`: N(0, 0.02) matrices and embeddings (HF's init); every bias and
  // layernorm bias N(0, 0.1), layernorm weights 1 + N(0, 0.1) (HF's 0 and 1, with noise so that
  // the tests see them).
  static Gpt2Weights random(const Gpt2Config& config, std::uint64_t seed);
  // The same distributions as random(), drawn on `threads` threads (0: every core) by a
  // counter-based generator: each tensor's blocks of 65,536 values have their own stream, so the
  // values depend on `seed` alone, not on the thread count, but differ from random()'s. For
  // benchmarking large models: random() draws GPT-2 1.5B's 1.56 billion values one at a time
  // (~56 s on the 2-core CPU machine). invalid_argument for a negative thread count.
  static Gpt2Weights random_parallel(const Gpt2Config& config, std::uint64_t seed, int threads = 0);
  // A copy whose four linears a layer hold the values an engine with LinearWeights::int8 computes
  // with (each weight quantized and dequantized): the model that engine runs, for
  // gpt2_reference_logits. invalid_argument when a linear's rows are not a multiple of
  // kGpt2Q8Group.
  Gpt2Weights with_int8_linears() const;
  // The same for LinearWeights::int4.
  Gpt2Weights with_int4_linears() const;
  // A copy whose wte (the embedding and the output head tied to it) holds the values an engine
  // with EngineOptions::head_weights = `head` computes with: each token's row quantized in groups
  // of kGpt2Q8Group features (one scale each, as a linear's groups of rows: the head is the linear
  // x wte^T) and dequantized. dense: an unchanged copy. Composes with with_int8_linears /
  // with_int4_linears. invalid_argument when n_embd is not a multiple of kGpt2Q8Group, or for a
  // non-finite value of wte (naming its token and feature).
  Gpt2Weights with_quantized_head(LinearWeights head) const;
};

// How each new token is drawn from the logits. temperature 0 is greedy (argmax, ties to the lower
// id). Otherwise the token is drawn from softmax(logits / temperature) restricted to the top_k
// largest (0: all) and then to the smallest set of those whose probability reaches top_p
// (1: all), by the Gumbel-max trick with noise that depends only on (seed, request id, position,
// token), never on the batch. On the CPU a request draws the same tokens alone or in any batch;
// on CUDA the GEMM kernels (and so the logits' rounding) depend on the step's row count, and a
// near tie can go either way, as it can between the two backends. The request id is the
// request's index in generate()'s list.
struct SamplingParams {
  float temperature = 0.0f;  // finite, >= 0 (any positive one: logits shifted to a maximum of 0)
  int top_k = 0;             // >= 0
  float top_p = 1.0f;        // in (0, 1]
  std::uint64_t seed = 0;
};

struct GenerationRequest {
  std::vector<std::int32_t> prompt;  // token ids in [0, vocab_size); at least one
  int max_new_tokens = 16;           // > 0; prompt + max_new_tokens - 1 <= n_positions
  SamplingParams sampling;
  int priority = 0;       // the scheduler's: higher first
  std::int32_t eos = -1;  // a token that ends the request (kept in its output); -1: none
};

struct EngineOptions {
  Backend backend = Backend::automatic;  // automatic: CUDA when a device is visible, else CPU
  // CUDA: the storage and GEMM type of weights and activations, f16 or bf16 (fp32 accumulation;
  // the logits are fp32). The CPU backend computes in fp32 whatever this says.
  DType dtype = DType::f16;
  int page_size = 16;  // keys a KV cache page
  // 0: each generate() sizes the pool to its requests (every one at once, within max_batch
  // sequences of n_positions keys, at least one such sequence); the pool only grows.
  int num_pages = 0;
  SchedulerConfig scheduler;
  // The linears' storage (LinearWeights above). CUDA: steps of 1-8 rows run an int8 (int4) kernel
  // that dequantizes as it reads (int4 also at 9-16 rows, as two launches); larger ones dequantize
  // W into a scratch buffer for cuBLASLt. On
  // an H200 int8 is faster than dense at one row only (GPT-2 1.5B B1 +17%; docs/gpt2-engine.md).
  LinearWeights linear_weights = LinearWeights::dense;
  // The output head's storage: dense (the default), or int8 / int4 as the linears' (groups of 64
  // features of each token's row of wte, whatever linear_weights is). The head is tied to the
  // embedding, so both read the dequantized values (Gpt2Weights::with_quantized_head). CUDA: steps
  // of up to 8 rows (int4: 16) read the quantized head in the linears' kernel, fp32 logits out;
  // larger steps use cuBLASLt over the dequantized head. GPT-2 124M's head is 11% of a B1 decode
  // step on an H200 (docs/gpt2-engine.md has the figures). It is for speed, not memory: the
  // dequantized head stays beside the quantized one (the embedding and the larger steps read it),
  // 0.56 (int4) or 1.06 (int8) bytes a value more with the scales.
  LinearWeights head_weights = LinearWeights::dense;
  KvCache kv_cache = KvCache::model;  // the cache's storage (KvCache above)
  bool cuda_graphs = true;            // CUDA: decode-only steps replay captured graphs
  // CUDA: graphs kept at once, one a (batch, block-table width) of decode-only steps; past it the
  // least recently replayed is dropped (each holds its ~112 launches' device resources). >= 1.
  int max_cuda_graphs = 64;
  int num_threads = 0;   // CPU backend threads (0: hardware concurrency)
  int device_index = 0;  // CUDA ordinal
};

struct GenerationStats {
  int steps = 0;
  std::int64_t prefill_tokens = 0;  // prompt tokens run (recomputed ones included)
  std::int64_t decode_tokens = 0;   // tokens produced by decode steps
  int preemptions = 0;
  // CUDA graphs of decode-only steps (EngineOptions::cuda_graphs): captured, replayed, and dropped
  // to stay within max_cuda_graphs, during this generate().
  int graphs_captured = 0;
  int graph_replays = 0;
  int graphs_dropped = 0;
  double seconds = 0.0;  // wall time of generate(), device work included
};

// One call at a time per engine: its KV pool, step buffers, CUDA graphs and stream are the
// instance's (the Python Gpt2Engine serializes its calls); separate engines run independently,
// from several threads at once.
class Gpt2Engine {
 public:
  // Copies the weights to the backend (converted to options.dtype on CUDA) and allocates the KV
  // cache pool and the step buffers. invalid_argument for bad options, naming them.
  Gpt2Engine(const Gpt2Weights& weights, const EngineOptions& options);
  ~Gpt2Engine();
  Gpt2Engine(const Gpt2Engine&) = delete;
  Gpt2Engine& operator=(const Gpt2Engine&) = delete;

  const Gpt2Config& config() const;
  Backend backend() const;  // cpu or cuda, as resolved

  // The logits, fp32 [tokens.size(), vocab_size] row-major, of one sequence run through the model
  // in one pass (a prefill through the same paged cache; the cache is left empty afterwards).
  // With prompt in [1, tokens.size()): the first `prompt` tokens run as one prefill and each
  // later one as a decode step through the KV cache, as generate() runs a request with that
  // prompt that produced those tokens (the decode rows' logits are what it sampled from; one row
  // a step, no graphs). prompt 0 or tokens.size(): one pass. Another prompt is an
  // invalid_argument naming it.
  std::vector<float> forward_logits(const std::vector<std::int32_t>& tokens, int prompt = 0);

  // Runs every request to completion through the scheduler (continuous batching: prefills of
  // similar length grouped, decodes of all running requests batched, preemption by recompute when
  // the cache is full) and returns the tokens each generated, in request order. Every request is
  // validated before any work, an invalid_argument naming the request and field.
  // A request whose logits hold a NaN or +inf (or are all -inf) at some step ends the call with an
  // invalid_argument naming it and the position.
  std::vector<std::vector<std::int32_t>> generate(const std::vector<GenerationRequest>& requests,
                                                  GenerationStats* stats = nullptr);

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The checks generate() makes before any work, for a model of `cfg`: an invalid_argument naming
// the request and field (a prompt empty or with an id outside the vocabulary, max_new_tokens not
// positive, prompt + max_new_tokens - 1 past n_positions, a sampling parameter or eos out of
// range).
void check_generation_requests(const Gpt2Config& cfg,
                               const std::vector<GenerationRequest>& requests);

// The fp64 reference forward of one sequence (no cache, plain loops), logits [len, vocab_size]:
// the oracle the engine's tests compare against. Slow; for small models. With kv e4m3 the rows
// from `prompt` on attend to keys and values rounded to E4M3, as the decode steps of an engine
// with KvCache::e4m3 do (generating tokens[prompt..] after a prompt of `prompt` tokens); the rows
// before it attend to exact ones, as a prompt does to itself. prompt 0 is the whole sequence as
// one prompt (every row exact), as forward_logits reads it. The weights are checked as the engine
// checks them (layers and tensor sizes against the config).
std::vector<double> gpt2_reference_logits(const Gpt2Weights& weights,
                                          const std::vector<std::int32_t>& tokens,
                                          KvCache kv = KvCache::model, int prompt = 0);

}  // namespace gpuattn
