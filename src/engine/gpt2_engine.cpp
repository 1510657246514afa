// Gpt2Engine: one step of the model written once against ModelOps (either backend), with the
// attention through the library's attention_forward over a paged cache, and the generation loop
// around the scheduler.
//
// A step runs the rows of every scheduled sequence together: first one row per decoding sequence,
// then every prompt row of the sequences admitted this step. The GEMMs see all rows at once; one
// scatter puts every row's keys and values into its cache slot; the decodes then take one paged
// attention call (the split-KV decode kernel on CUDA), and the prefills one varlen causal call
// over their own q/k/v, straight from the QKV GEMM's output.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <unordered_map>

#include "core/env_switch.h"
#include "engine/model_ops.h"
#include "engine/q8_weights.h"
#include "gpuattn/gpt2.h"

namespace gpuattn {
namespace {

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(ErrorCode::invalid_argument, "gpuattn::Gpt2Engine: " + msg);
}

// A float as it was given (9 significant digits: -1e-09, not -0.000000).
std::string number(float v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", static_cast<double>(v));
  return b;
}

// The backend's device, current over an engine entry point (ModelOps::enter_device).
class DeviceScope {
 public:
  explicit DeviceScope(engine::ModelOps& ops) : ops_(&ops), previous_(ops.enter_device()) {}
  ~DeviceScope() { ops_->leave_device(previous_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  engine::ModelOps* ops_;
  int previous_;
};

std::size_t align_up(std::size_t x, std::size_t a) {
  return (x + a - 1) / a * a;
}

// Experiment switch GPUATTN_DECODE_EARLY: "1" (the default) lets the decode kernel issue its older
// keys before its PDL wait (AttentionArgs::pdl_cache_ready), "0" does not (to measure it). Read
// once; another value throws.
bool decode_early() {
  static const bool on = env_flag("GPUATTN_DECODE_EARLY", true);
  return on;
}

}  // namespace

namespace engine {

// A buffer of the backend, freed with it.
struct BackendBuffer {
  ModelOps* ops = nullptr;
  void* ptr = nullptr;
  BackendBuffer() = default;
  BackendBuffer(ModelOps* o, void* p) : ops(o), ptr(p) {}
  BackendBuffer(BackendBuffer&& o) noexcept : ops(o.ops), ptr(o.ptr) { o.ptr = nullptr; }
  BackendBuffer& operator=(BackendBuffer&& o) noexcept {
    std::swap(ops, o.ops);
    std::swap(ptr, o.ptr);
    return *this;
  }
  ~BackendBuffer() {
    if (ptr) ops->free(ptr);
  }
};

}  // namespace engine

class Gpt2Engine::Impl {
 public:
  struct LayerWeights {
    engine::BackendBuffer ln_1_w, ln_1_b, c_attn_w, c_attn_b, attn_proj_w, attn_proj_b;
    engine::BackendBuffer ln_2_w, ln_2_b, c_fc_w, c_fc_b, mlp_proj_w, mlp_proj_b;
  };
  // One sequence's part of a step.
  struct Segment {
    const std::int32_t* tokens = nullptr;  // n tokens at positions start .. start + n - 1
    int n = 0;
    int start = 0;
    std::vector<std::int32_t> pages;  // its block table row (pages of the cache manager)
    engine::SampleRow sample;
  };

  Impl(const Gpt2Weights& w, const EngineOptions& o);

  // Runs decodes (n == 1, start = keys already cached) then prefills (start == 0) through the
  // model; returns one token per segment. With logits_out (one prefill segment, or one decode),
  // fills it with every row's logits instead of sampling.
  std::vector<std::int32_t> run_step(const std::vector<Segment>& decodes,
                                     const std::vector<Segment>& prefills,
                                     std::vector<float>* logits_out = nullptr);
  void ensure_pool(int num_pages);
  void apply_copies(const std::vector<PageCopy>& copies);

  Gpt2Config cfg;
  EngineOptions opts;
  std::unique_ptr<engine::ModelOps> ops;
  LinearWeights lw = LinearWeights::dense;  // how the linears' weights are stored
  LinearWeights hw = LinearWeights::dense;  // how the output head is stored
  DType kv_dtype = DType::f16;              // the KV cache's elements: ops->dtype() or e4m3
  int max_pages = 0;                        // block table width: n_positions keys
  int max_rows = 0;                         // rows one step may run
  int max_seqs = 0;                         // sequences one step may run

  engine::BackendBuffer wpe, ln_f_w, ln_f_b;
  // wte as the output head reads it; it starts with wte [V, C] itself (with hw int8 / int4: the
  // dequantized values, which the embedding reads too, and head_q the quantized head).
  engine::BackendBuffer head, head_q;
  int logits_ld = 0;  // logits row pitch: padded_vocab(V), V rounded up to 64
  std::vector<LayerWeights> layers;
  int pool_pages = 0;
  std::vector<engine::BackendBuffer> k_pool, v_pool;  // per layer [pool_pages, page_size, H, D]
  engine::BackendBuffer kv_scale;  // KvCache::e4m3: the cache's scale, one float 1.0 (all heads)
  engine::BackendBuffer x, ln, qkv, attn, fc, logits, tokens_out, meta;
  std::size_t meta_bytes = 0;
  // CUDA: the attention calls' counters (AttentionArgs::counters), zeroed once; every call leaves
  // them zeroed, and the steps run one after the other on the engine's stream, so the decode
  // steps' graphs hold no memset node. Decode calls need max_seqs x H (one row block a KV head),
  // a prefill call 1.
  engine::BackendBuffer counters;
  std::int64_t counters_count = 0;
  // Host side of a step, kept across steps (no allocation per step): the metadata as it is
  // built, and the backend's host buffers the metadata and the sampled tokens cross through.
  std::vector<std::int32_t> m;
  std::unique_ptr<void, std::function<void(void*)>> staging, tokens_host;
  // Decode-only steps' graphs by (batch, table width), each with the tick of its last replay (at
  // most opts.max_cuda_graphs, the least recently replayed dropped first), and the key of the step
  // before when it was a decode-only step run plainly (batch 0: it was not). The counts are the
  // engine's totals (generate() reports its own share).
  struct Graph {
    void* exec = nullptr;
    std::uint64_t used = 0;
  };
  std::map<std::pair<int, int>, Graph> graphs;
  std::pair<int, int> plain_before{0, 0};
  std::uint64_t graph_tick = 0;
  std::int64_t graphs_captured = 0, graph_replays = 0, graphs_dropped = 0;

  void drop_graphs() {
    for (auto& [bd, g] : graphs) ops->destroy_graph(g.exec);
    graphs.clear();
    plain_before = {0, 0};
  }
  // Makes room for one more graph: drops the least recently replayed while at the cap.
  void make_room_for_a_graph() {
    while (!graphs.empty() && graphs.size() >= static_cast<std::size_t>(opts.max_cuda_graphs)) {
      auto oldest = graphs.begin();
      for (auto it = graphs.begin(); it != graphs.end(); ++it) {
        if (it->second.used < oldest->second.used) oldest = it;
      }
      ops->destroy_graph(oldest->second.exec);
      graphs.erase(oldest);
      ++graphs_dropped;
    }
  }
  ~Impl() {
    if (!ops) return;
    const DeviceScope scope(*ops);
    drop_graphs();
  }

 private:
  engine::BackendBuffer weights(const std::vector<float>& v) {
    return engine::BackendBuffer(ops.get(), ops->upload_weights(v.data(), v.size()));
  }
  // A linear's W [K, N]: in dtype, or int8 / int4 with its scales (lw).
  engine::BackendBuffer linear_weights(const std::vector<float>& v, int K, int N) {
    switch (lw) {
      case LinearWeights::int8:
        return engine::BackendBuffer(ops.get(), ops->upload_q8_weights(v.data(), K, N));
      case LinearWeights::int4:
        return engine::BackendBuffer(ops.get(), ops->upload_q4_weights(v.data(), K, N));
      default: return weights(v);
    }
  }
  // logits [rows, logits_ld] = the output head of ln's first rows, stored as hw says.
  void head_logits(float* out, int rows) {
    const int C = cfg.n_embd, V = cfg.vocab_size;
    if (hw == LinearWeights::dense) {
      ops->lm_head(ln.ptr, head.ptr, out, rows, C, V, logits_ld);
    } else {
      ops->lm_head_quantized(ln.ptr, head.ptr, head_q.ptr, hw, out, rows, C, V, logits_ld);
    }
  }
  engine::BackendBuffer buffer(std::size_t bytes) {
    return engine::BackendBuffer(ops.get(), ops->alloc(bytes));
  }
  TensorView view(void* data, std::initializer_list<std::int64_t> shape,
                  std::initializer_list<std::int64_t> stride, DType dt) const {
    TensorView t;
    t.data = data;
    t.dtype = dt;
    t.device = ops->device();
    t.device_index = ops->device_index();
    t.rank = static_cast<int>(shape.size());
    std::copy(shape.begin(), shape.end(), t.shape.begin());
    std::copy(stride.begin(), stride.end(), t.stride.begin());
    return t;
  }
};

Gpt2Engine::Impl::Impl(const Gpt2Weights& w, const EngineOptions& o) : cfg(w.config), opts(o) {
  cfg.validate();
  if (opts.num_threads < 0) {
    invalid("num_threads is " + std::to_string(opts.num_threads) +
            ", must be >= 0 (0: hardware concurrency)");
  }
  if (opts.max_cuda_graphs < 1) {
    invalid("max_cuda_graphs is " + std::to_string(opts.max_cuda_graphs) +
            ", must be >= 1 (cuda_graphs = false runs without graphs)");
  }
  if (opts.page_size <= 0) {
    invalid("page_size is " + std::to_string(opts.page_size) + ", must be positive");
  }
  if (opts.num_pages < 0) {
    invalid("num_pages is " + std::to_string(opts.num_pages) + ", must be >= 0 (0: automatic)");
  }
  if (opts.scheduler.max_batch <= 0 || opts.scheduler.max_prefill_tokens <= 0) {
    invalid("scheduler.max_batch and max_prefill_tokens must be positive, not " +
            std::to_string(opts.scheduler.max_batch) + " and " +
            std::to_string(opts.scheduler.max_prefill_tokens));
  }
  const auto storage = [](LinearWeights w, const char* name) {
    if (w != LinearWeights::dense && w != LinearWeights::int8 && w != LinearWeights::int4) {
      invalid(std::string(name) + " is " + std::to_string(static_cast<int>(w)) +
              ", must be LinearWeights::dense, int8 or int4");
    }
    return w;
  };
  lw = storage(opts.linear_weights, "linear_weights");
  hw = storage(opts.head_weights, "head_weights");
  if (opts.kv_cache != KvCache::model && opts.kv_cache != KvCache::e4m3) {
    invalid("kv_cache is " + std::to_string(static_cast<int>(opts.kv_cache)) +
            ", must be KvCache::model or e4m3");
  }
  if (opts.backend != Backend::automatic && opts.backend != Backend::cpu &&
      opts.backend != Backend::cuda) {
    invalid("backend is " + std::to_string(static_cast<int>(opts.backend)) +
            ", must be Backend::automatic, cpu or cuda");
  }
  Backend b = opts.backend;
  if (b == Backend::automatic) b = cuda_available() ? Backend::cuda : Backend::cpu;
  if (b == Backend::cuda) {
    if (opts.dtype != DType::f16 && opts.dtype != DType::bf16) {
      invalid(std::string("dtype is ") + to_string(opts.dtype) +
              ", the CUDA backend takes f16 or bf16");
    }
    if (cfg.n_embd > 4096) {  // the layernorm kernel holds a row in one block's registers
      invalid("n_embd is " + std::to_string(cfg.n_embd) + ", the CUDA backend takes up to 4096");
    }
    ops = engine::make_cuda_ops(opts.dtype, opts.device_index);
  } else {
    ops = engine::make_cpu_ops(opts.num_threads);
  }
  const DeviceScope scope(*ops);
  kv_dtype = opts.kv_cache == KvCache::e4m3 ? DType::e4m3 : ops->dtype();
  w.check_shapes("gpuattn::Gpt2Engine");
  const std::int64_t C = cfg.n_embd;
  if (hw == LinearWeights::dense) {
    head = engine::BackendBuffer(ops.get(),
                                 ops->upload_head(w.wte.data(), cfg.vocab_size, cfg.n_embd));
  } else {  // the embedding and the head both read the dequantized values (tied)
    head_q = engine::BackendBuffer(
        ops.get(), ops->upload_quantized_head(w.wte.data(), cfg.vocab_size, cfg.n_embd, hw));
    std::vector<float> wte = w.wte;
    engine::round_trip_head(wte, cfg.vocab_size, cfg.n_embd, hw);
    head =
        engine::BackendBuffer(ops.get(), ops->upload_head(wte.data(), cfg.vocab_size, cfg.n_embd));
  }
  wpe = weights(w.wpe);
  ln_f_w = weights(w.ln_f_w);
  ln_f_b = weights(w.ln_f_b);
  layers.resize(static_cast<std::size_t>(cfg.n_layer));
  for (int l = 0; l < cfg.n_layer; ++l) {
    const Gpt2Weights::Layer& L = w.layers[l];
    LayerWeights& d = layers[l];
    d.ln_1_w = weights(L.ln_1_w);
    d.ln_1_b = weights(L.ln_1_b);
    d.c_attn_w = linear_weights(L.c_attn_w, C, 3 * C);
    d.c_attn_b = weights(L.c_attn_b);
    d.attn_proj_w = linear_weights(L.attn_proj_w, C, C);
    d.attn_proj_b = weights(L.attn_proj_b);
    d.ln_2_w = weights(L.ln_2_w);
    d.ln_2_b = weights(L.ln_2_b);
    d.c_fc_w = linear_weights(L.c_fc_w, C, 4 * C);
    d.c_fc_b = weights(L.c_fc_b);
    d.mlp_proj_w = linear_weights(L.mlp_proj_w, 4 * C, C);
    d.mlp_proj_b = weights(L.mlp_proj_b);
  }
  max_pages = static_cast<int>((std::int64_t{cfg.n_positions} + opts.page_size - 1) /
                               opts.page_size);  // 64-bit: a page_size near 2^31 wrapped
  max_seqs = opts.scheduler.max_batch;
  // A step: every decode plus the admitted prompts, which stay within max_prefill_tokens unless
  // one lone prompt (at most n_positions) is longer.
  max_rows = std::max(opts.scheduler.max_prefill_tokens, cfg.n_positions) + max_seqs;
  const std::size_t es = element_size(ops->dtype());
  x = buffer(static_cast<std::size_t>(max_rows) * C * es);
  ln = buffer(static_cast<std::size_t>(max_rows) * C * es);
  qkv = buffer(static_cast<std::size_t>(max_rows) * 3 * C * es);
  attn = buffer(static_cast<std::size_t>(max_rows) * C * es);
  fc = buffer(static_cast<std::size_t>(max_rows) * 4 * C * es);
  // V rounded up to 64: the CUDA head writes the padded columns too (its GEMM runs over aligned
  // shapes: gemm.cu); the sampler and the logits download read only the first V of each row.
  logits_ld = engine::padded_vocab(cfg.vocab_size);
  logits = buffer(static_cast<std::size_t>(max_seqs) * logits_ld * sizeof(float));
  tokens_out = buffer(static_cast<std::size_t>(max_seqs) * sizeof(std::int32_t));
  // Step metadata, one upload: tokens, positions, cache slots and the rows the head reads (every
  // row for forward_logits), all [rows]; the decodes' key counts, the prefills' cu_seqlens and
  // the decodes' block table; then the sample rows.
  meta_bytes =
      align_up(sizeof(std::int32_t) * (4 * static_cast<std::size_t>(max_rows) + 2 * max_seqs + 1 +
                                       static_cast<std::size_t>(max_seqs) * max_pages),
               64) +
      sizeof(engine::SampleRow) * max_seqs;
  meta = buffer(meta_bytes);
  if (ops->device() == Device::cuda) {
    counters_count = std::max<std::int64_t>(1, static_cast<std::int64_t>(max_seqs) * cfg.n_head);
    counters = buffer(static_cast<std::size_t>(counters_count) * sizeof(std::int32_t));
    const std::vector<std::int32_t> zeros(static_cast<std::size_t>(counters_count), 0);
    ops->upload(counters.ptr, zeros.data(), zeros.size() * sizeof(std::int32_t));
  }
  const auto host = [this](std::size_t bytes) {
    return std::unique_ptr<void, std::function<void(void*)>>(
        ops->alloc_host(bytes), [o = ops.get()](void* p) { o->free_host(p); });
  };
  if (kv_dtype == DType::e4m3) {
    const float one = 1.0f;
    kv_scale = buffer(sizeof(float));
    ops->upload(kv_scale.ptr, &one, sizeof(float));
  }
  staging = host(meta_bytes);
  tokens_host = host(static_cast<std::size_t>(max_seqs) * sizeof(std::int32_t));
  m.reserve(meta_bytes / 4);
  if (opts.num_pages > 0) ensure_pool(opts.num_pages);
}

void Gpt2Engine::Impl::ensure_pool(int num_pages) {
  if (num_pages <= pool_pages) return;
  if (static_cast<std::int64_t>(num_pages) * opts.page_size > INT32_MAX) {
    invalid("num_pages x page_size is " +
            std::to_string(static_cast<std::int64_t>(num_pages) * opts.page_size) +
            " slots, more than int32 cache slots address");
  }
  ops->synchronize();
  drop_graphs();  // they hold the old pool's addresses
  pool_pages =
      0;  // until the new pool is whole: an allocation that fails leaves none, not a freed one
  k_pool.clear();
  v_pool.clear();
  const std::size_t bytes =
      static_cast<std::size_t>(num_pages) * opts.page_size * cfg.n_embd * element_size(kv_dtype);
  for (int l = 0; l < cfg.n_layer; ++l) {
    k_pool.push_back(buffer(bytes));
    v_pool.push_back(buffer(bytes));
  }
  pool_pages = num_pages;
}

void Gpt2Engine::Impl::apply_copies(const std::vector<PageCopy>& copies) {
  const std::size_t row = static_cast<std::size_t>(cfg.n_embd) * element_size(kv_dtype);
  const std::size_t page = row * opts.page_size;
  for (const PageCopy& c : copies) {
    for (int l = 0; l < cfg.n_layer; ++l) {
      for (engine::BackendBuffer* pool : {&k_pool[l], &v_pool[l]}) {
        char* base = static_cast<char*>(pool->ptr);
        ops->copy(base + page * c.dst, base + page * c.src, row * c.rows);
      }
    }
  }
}

std::vector<std::int32_t> Gpt2Engine::Impl::run_step(const std::vector<Segment>& decodes,
                                                     const std::vector<Segment>& prefills,
                                                     std::vector<float>* logits_out) {
  const int C = cfg.n_embd, H = cfg.n_head, D = cfg.head_dim(), V = cfg.vocab_size;
  const int bd = static_cast<int>(decodes.size());
  const int np = static_cast<int>(prefills.size());
  const int nseg = bd + np;
  int rows = bd, max_prefill = 0;
  for (const Segment& s : prefills) {
    rows += s.n;
    max_prefill = std::max(max_prefill, s.n);
  }
  if (nseg == 0) return {};
  if (rows > max_rows || nseg > max_seqs) {
    invalid("a step of " + std::to_string(rows) + " rows and " + std::to_string(nseg) +
            " sequences exceeds the step buffers (" + std::to_string(max_rows) + ", " +
            std::to_string(max_seqs) + ")");
  }
  if (logits_out && !(np == 1 && bd == 0) && !(np == 0 && bd == 1)) {
    invalid("logits of one prefill or one decode only");
  }
  // The decodes' block table is as wide as the next power of two of pages the longest of them
  // holds: the decode kernel then splits about the keys in use (at most twice them), and a graph
  // serves every step of the same (batch, width).
  int width = 0;
  if (bd > 0) {
    std::size_t most = 1;
    for (const Segment& s : decodes) most = std::max(most, s.pages.size());
    width = 1;
    while (static_cast<std::size_t>(width) < most) width *= 2;
    width = std::min(width, max_pages);
  }

  // Host staging of the step's metadata, uploaded at once.
  m.clear();
  const std::size_t o_tokens = m.size();
  for (const Segment& s : decodes) m.push_back(s.tokens[0]);
  for (const Segment& s : prefills) m.insert(m.end(), s.tokens, s.tokens + s.n);
  const std::size_t o_pos = m.size();
  for (const Segment& s : decodes) m.push_back(s.start);
  for (const Segment& s : prefills) {
    for (int i = 0; i < s.n; ++i) m.push_back(s.start + i);
  }
  const std::size_t o_slots = m.size();  // each row's cache slot: page * page_size + row
  const int ps = opts.page_size;
  for (const Segment& s : decodes) m.push_back(s.pages[s.start / ps] * ps + s.start % ps);
  for (const Segment& s : prefills) {
    for (int i = s.start; i < s.start + s.n; ++i) m.push_back(s.pages[i / ps] * ps + i % ps);
  }
  const std::size_t o_last = m.size();
  if (logits_out) {
    for (int r = 0; r < rows; ++r) m.push_back(r);
  } else {
    int row = 0;
    for (int i = 0; i < bd; ++i) m.push_back(row++);
    for (const Segment& s : prefills) {
      row += s.n;
      m.push_back(row - 1);
    }
  }
  const std::size_t o_used = m.size();
  for (const Segment& s : decodes) m.push_back(s.start + 1);
  const std::size_t o_cu = m.size();
  m.push_back(0);
  for (const Segment& s : prefills) m.push_back(m.back() + s.n);
  const std::size_t o_table = m.size();
  for (const Segment& s : decodes) {
    const std::size_t n = std::min(s.pages.size(), static_cast<std::size_t>(width));
    m.insert(m.end(), s.pages.begin(), s.pages.begin() + static_cast<std::ptrdiff_t>(n));
    m.insert(m.end(), static_cast<std::size_t>(width) - n, -1);
  }
  const std::size_t o_sample = align_up(m.size() * 4, 64);
  const std::size_t staged = o_sample + sizeof(engine::SampleRow) * nseg;
  if (staged > meta_bytes) invalid("internal: step metadata exceeds its buffer");
  char* st = static_cast<char*>(staging.get());
  std::memcpy(st, m.data(), m.size() * 4);
  for (int i = 0; i < nseg; ++i) {
    const Segment& s = i < bd ? decodes[i] : prefills[i - bd];
    std::memcpy(st + o_sample + sizeof(engine::SampleRow) * i, &s.sample,
                sizeof(engine::SampleRow));
  }
  // Every step ends in a download, which waits for the stream: the upload of the step before has
  // been done with `staging` by the time this one is filled.
  ops->upload(meta.ptr, st, staged);
  const auto* mi = static_cast<const std::int32_t*>(meta.ptr);
  const auto i32 = [&](std::size_t offset) { return const_cast<std::int32_t*>(mi + offset); };

  const DType dt = ops->dtype();
  const std::size_t es = element_size(dt);
  char* qkv_p = static_cast<char*>(qkv.ptr);
  char* attn_p = static_cast<char*>(attn.ptr);
  const std::int64_t C3 = 3 * static_cast<std::int64_t>(C);
  const bool check = ops->device() == Device::cpu;  // CUDA: trusted, no host round trip

  // The four linears a layer, with W in dtype, int8 or int4 (lw).
  const auto linear = [&](const void* in, const void* W, const void* bias, const void* residual,
                          void* out, int K, int N, bool gelu) {
    ops->linear_as(lw, in, W, bias, residual, out, rows, K, N, gelu);
  };
  const auto ln_linear = [&](const void* in, int K, const void* ln_w, const void* ln_b,
                             const void* W, const void* bias, void* out, int N, bool gelu) {
    ops->layernorm_linear_as(lw, in, rows, K, ln_w, ln_b, cfg.layer_norm_epsilon, ln.ptr, W, bias,
                             out, N, gelu);
  };
  // Everything from the embedding to the final layernorm, enqueued (or captured) in one go.
  const int out_rows = logits_out ? rows : nseg;
  const auto body = [&] {
    ops->embed(mi + o_tokens, mi + o_pos, rows, head.ptr, wpe.ptr, C, x.ptr);
    for (int l = 0; l < cfg.n_layer; ++l) {
      const LayerWeights& L = layers[l];
      // qkv, and every row's keys and values into the cache (the decodes read theirs back at
      // once).
      ops->attn_input(x.ptr, rows, C, L.ln_1_w.ptr, L.ln_1_b.ptr, cfg.layer_norm_epsilon, ln.ptr,
                      L.c_attn_w.ptr, lw, L.c_attn_b.ptr, qkv.ptr, mi + o_slots, k_pool[l].ptr,
                      v_pool[l].ptr, kv_dtype);
      if (bd > 0) {
        AttentionArgs at;
        at.q = view(qkv_p, {bd, 1, H, D}, {C3, C3, D, 1}, dt);
        at.k = view(k_pool[l].ptr, {pool_pages, ps, H, D},
                    {static_cast<std::int64_t>(ps) * C, C, D, 1}, kv_dtype);
        at.v = view(v_pool[l].ptr, {pool_pages, ps, H, D},
                    {static_cast<std::int64_t>(ps) * C, C, D, 1}, kv_dtype);
        if (kv_dtype == DType::e4m3) {  // unit scales: one for every head
          at.k_scale = view(kv_scale.ptr, {1}, {1}, DType::f32);
          at.v_scale = at.k_scale;
        }
        at.out = view(attn_p, {bd, 1, H, D}, {C, C, D, 1}, dt);
        at.seqused_k = view(i32(o_used), {bd}, {1}, DType::i32);
        at.block_table = view(i32(o_table), {bd, width}, {width, 1}, DType::i32);
        at.causal = true;
        at.check_indices = check;
        if (counters_count > 0) at.counters = view(counters.ptr, {counters_count}, {1}, DType::i32);
        // Right behind the kernel that wrote the caches (the k/v scatter, or c_attn's one-row
        // kernel where it wrote them itself): +2-3% tok/s at B1 (s32, behind the scatter).
        at.pdl = true;
        // The kernel ahead wrote qkv and the step's keys and values (each decode's newest) and
        // nothing else the call reads: the kernel issues the older keys before it waits for it.
        at.pdl_cache_ready = decode_early();
        at.stream = ops->stream();
        at.num_threads = opts.num_threads;
        attention_forward(at);
      }
      if (np > 0) {  // the prompts attend to themselves: q, k and v straight from the GEMM
        const std::int64_t r0 = bd;
        AttentionArgs at;
        at.q = view(qkv_p + r0 * C3 * es, {rows - bd, H, D}, {C3, D, 1}, dt);
        at.k = view(qkv_p + (r0 * C3 + C) * es, {rows - bd, H, D}, {C3, D, 1}, dt);
        at.v = view(qkv_p + (r0 * C3 + 2 * C) * es, {rows - bd, H, D}, {C3, D, 1}, dt);
        at.out = view(attn_p + r0 * C * es, {rows - bd, H, D}, {C, D, 1}, dt);
        at.cu_seqlens_q = view(i32(o_cu), {np + 1}, {1}, DType::i32);
        at.cu_seqlens_k = at.cu_seqlens_q;
        at.max_seqlen_q = max_prefill;
        at.max_seqlen_k = max_prefill;
        at.causal = true;
        at.check_indices = check;
        if (counters_count > 0) at.counters = view(counters.ptr, {counters_count}, {1}, DType::i32);
        at.stream = ops->stream();
        at.num_threads = opts.num_threads;
        attention_forward(at);
      }
      linear(attn.ptr, L.attn_proj_w.ptr, L.attn_proj_b.ptr, x.ptr, x.ptr, C, C, false);
      ln_linear(x.ptr, C, L.ln_2_w.ptr, L.ln_2_b.ptr, L.c_fc_w.ptr, L.c_fc_b.ptr, fc.ptr, 4 * C,
                true);
      linear(fc.ptr, L.mlp_proj_w.ptr, L.mlp_proj_b.ptr, x.ptr, x.ptr, 4 * C, C, false);
    }
    ops->layernorm(x.ptr, mi + o_last, out_rows, C, ln_f_w.ptr, ln_f_b.ptr, cfg.layer_norm_epsilon,
                   ln.ptr);
  };
  if (logits_out) {
    body();
    engine::BackendBuffer all = buffer(static_cast<std::size_t>(rows) * logits_ld * sizeof(float));
    head_logits(static_cast<float*>(all.ptr), rows);
    std::vector<float> pitched(static_cast<std::size_t>(rows) * logits_ld);
    ops->download(pitched.data(), all.ptr, pitched.size() * sizeof(float));
    logits_out->resize(static_cast<std::size_t>(rows) * V);
    for (int r = 0; r < rows; ++r) {
      std::copy_n(pitched.begin() + static_cast<std::ptrdiff_t>(r) * logits_ld, V,
                  logits_out->begin() + static_cast<std::ptrdiff_t>(r) * V);
    }
    return {};
  }
  const auto* rows_dev =
      reinterpret_cast<const engine::SampleRow*>(static_cast<const char*>(meta.ptr) + o_sample);
  const auto step = [&] {
    body();
    head_logits(static_cast<float*>(logits.ptr), nseg);
    ops->sample(static_cast<const float*>(logits.ptr), nseg, V, logits_ld, rows_dev,
                static_cast<std::int32_t*>(tokens_out.ptr));
  };
  // A decode-only step of bd sequences and table width `width` has the same launches, pointers
  // and metadata offsets every time: it replays a graph, captured when the step before was the
  // same and ran plainly (so cuBLASLt plans and the library's pool exist before any capture).
  // A (batch, width) that lasts one step, as each of the shrinking batches at the end of a run
  // whose sequences end in waves, runs plainly: capturing and instantiating 112 launches cost
  // ~1.4 ms under the tracer, for a graph replayed never (7 of them in a 124M B128 run; H200, s37
  // calls 1 and 5: +1-5% tok/s without them).
  if (np == 0 && opts.cuda_graphs && ops->supports_graphs()) {
    const auto key = std::make_pair(bd, width);
    auto it = graphs.find(key);
    if (it == graphs.end() && plain_before == key) {
      make_room_for_a_graph();
      ops->begin_capture();
      try {
        step();
      } catch (...) {  // the step's error, not one from instantiating half a graph
        ops->abort_capture();
        plain_before = {0, 0};
        throw;
      }
      it = graphs.emplace(key, Graph{ops->end_capture(), 0}).first;
      ++graphs_captured;
    }
    if (it != graphs.end()) {
      ops->launch_graph(it->second.exec);
      it->second.used = ++graph_tick;
      ++graph_replays;
      plain_before = {0, 0};
    } else {
      step();
      plain_before = key;
    }
  } else {
    step();
    plain_before = {0, 0};
  }
  std::vector<std::int32_t> out(static_cast<std::size_t>(nseg));
  ops->download(tokens_host.get(), tokens_out.ptr, out.size() * sizeof(std::int32_t));
  std::memcpy(out.data(), tokens_host.get(), out.size() * sizeof(std::int32_t));
  return out;
}

Gpt2Engine::Gpt2Engine(const Gpt2Weights& weights, const EngineOptions& options)
    : impl_(std::make_unique<Impl>(weights, options)) {}
Gpt2Engine::~Gpt2Engine() = default;

const Gpt2Config& Gpt2Engine::config() const {
  return impl_->cfg;
}
Backend Gpt2Engine::backend() const {
  return impl_->ops->device() == Device::cuda ? Backend::cuda : Backend::cpu;
}

std::vector<float> Gpt2Engine::forward_logits(const std::vector<std::int32_t>& tokens, int prompt) {
  Impl& e = *impl_;
  const DeviceScope scope(*e.ops);
  e.ops->synchronize();  // a step that threw may have left an upload from the staging buffer queued
  const int n = static_cast<int>(tokens.size());
  if (n <= 0 || n > e.cfg.n_positions) {
    invalid("forward_logits takes 1 to n_positions = " + std::to_string(e.cfg.n_positions) +
            " tokens, not " + std::to_string(n));
  }
  if (prompt < 0 || prompt > n) {
    invalid("forward_logits: prompt is " + std::to_string(prompt) + ", must be 0 to " +
            std::to_string(n) + " (the tokens)");
  }
  if (prompt == 0) prompt = n;
  for (int i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= e.cfg.vocab_size) {
      invalid("token " + std::to_string(i) + " is " + std::to_string(tokens[i]) +
              ", must be in [0, " + std::to_string(e.cfg.vocab_size) + ")");
    }
  }
  KvCacheManager kv(
      std::max(e.pool_pages,
               static_cast<int>((std::int64_t{n} + e.opts.page_size - 1) / e.opts.page_size)),
      e.opts.page_size);
  e.ensure_pool(kv.num_pages());
  const KvCacheManager::SeqId seq = kv.add_sequence();
  kv.append(seq, prompt);
  Impl::Segment s;
  s.tokens = tokens.data();
  s.n = prompt;
  s.pages = kv.pages(seq);
  std::vector<float> out;
  e.run_step({}, {s}, &out);
  for (int i = prompt; i < n; ++i) {  // decode steps: token i at position i, keys 0..i cached
    kv.append(seq, 1);
    Impl::Segment d;
    d.tokens = tokens.data() + i;
    d.n = 1;
    d.start = i;
    d.pages = kv.pages(seq);
    std::vector<float> row;
    e.run_step({d}, {}, &row);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

void check_generation_requests(const Gpt2Config& cfg,
                               const std::vector<GenerationRequest>& requests) {
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const GenerationRequest& r = requests[i];
    const std::string who = "request " + std::to_string(i) + ": ";
    if (r.prompt.empty()) invalid(who + "the prompt is empty");
    for (std::size_t j = 0; j < r.prompt.size(); ++j) {
      if (r.prompt[j] < 0 || r.prompt[j] >= cfg.vocab_size) {
        invalid(who + "prompt[" + std::to_string(j) + "] is " + std::to_string(r.prompt[j]) +
                ", must be in [0, " + std::to_string(cfg.vocab_size) + ")");
      }
    }
    if (r.max_new_tokens <= 0) {
      invalid(who + "max_new_tokens is " + std::to_string(r.max_new_tokens) + ", must be positive");
    }
    // The last token drawn is never fed: the model sees prompt + max_new_tokens - 1 positions.
    const std::int64_t fed = static_cast<std::int64_t>(r.prompt.size()) + r.max_new_tokens - 1;
    if (fed > cfg.n_positions) {
      invalid(who + "prompt (" + std::to_string(r.prompt.size()) + ") + max_new_tokens (" +
              std::to_string(r.max_new_tokens) + ") - 1 is " + std::to_string(fed) +
              ", more positions than n_positions = " + std::to_string(cfg.n_positions));
    }
    const SamplingParams& s = r.sampling;
    if (!(s.temperature >= 0.0f) || !std::isfinite(s.temperature)) {
      invalid(who + "temperature is " + number(s.temperature) + ", must be finite and >= 0");
    }
    if (s.top_k < 0) invalid(who + "top_k is " + std::to_string(s.top_k) + ", must be >= 0");
    if (!(s.top_p > 0.0f && s.top_p <= 1.0f)) {
      invalid(who + "top_p is " + number(s.top_p) + ", must be in (0, 1]");
    }
    if (r.eos < -1 || r.eos >= cfg.vocab_size) {
      invalid(who + "eos is " + std::to_string(r.eos) + ", must be -1 or a token in [0, " +
              std::to_string(cfg.vocab_size) + ")");
    }
  }
}

std::vector<std::vector<std::int32_t>> Gpt2Engine::generate(
    const std::vector<GenerationRequest>& requests, GenerationStats* stats) {
  Impl& e = *impl_;
  const DeviceScope scope(*e.ops);
  e.ops->synchronize();  // a step that threw may have left an upload from the staging buffer queued
  const auto t0 = std::chrono::steady_clock::now();
  const Gpt2Config& cfg = e.cfg;
  check_generation_requests(cfg, requests);
  std::int64_t pages_wanted = 0;
  for (const GenerationRequest& r : requests) {  // the keys a request holds at most
    const std::int64_t keys = static_cast<std::int64_t>(r.prompt.size()) + r.max_new_tokens - 1;
    pages_wanted += (keys + e.opts.page_size - 1) / e.opts.page_size;
  }
  std::vector<std::vector<std::int32_t>> out(requests.size());
  if (requests.empty()) return out;

  // The pool: as configured, or room for every request at once, within max_batch sequences of
  // n_positions keys (and at least one such sequence).
  int pages = e.opts.num_pages;
  if (pages == 0) {
    pages = static_cast<int>(
        std::min<std::int64_t>(pages_wanted, static_cast<std::int64_t>(e.max_seqs) * e.max_pages));
    pages = std::max(pages, e.max_pages);
  }
  e.ensure_pool(pages);
  KvCacheManager kv(pages, e.opts.page_size);
  BatchScheduler sched(e.opts.scheduler, kv);
  std::vector<std::vector<std::int32_t>> tokens(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    tokens[i] = requests[i].prompt;
    Request q;
    q.id = static_cast<std::int64_t>(i);
    q.prompt_len = static_cast<int>(requests[i].prompt.size());
    q.max_new_tokens = requests[i].max_new_tokens;
    q.priority = requests[i].priority;
    sched.enqueue_request(q);
  }
  GenerationStats st;
  const std::int64_t captured0 = e.graphs_captured, replays0 = e.graph_replays,
                     dropped0 = e.graphs_dropped;
  std::size_t done = 0;
  auto sample_row = [&](std::int64_t id) {
    const SamplingParams& s = requests[id].sampling;
    engine::SampleRow r;
    r.temperature = s.temperature;
    r.top_k = s.top_k;
    r.top_p = s.top_p;
    r.seed = s.seed;
    r.request = id;
    r.position = static_cast<std::int64_t>(tokens[id].size());
    return r;
  };
  while (done < requests.size()) {
    // Every request arrived at time 0: nobody waits for company.
    const ScheduledStep step = sched.schedule(1e30);
    st.preemptions += static_cast<int>(step.preempted.size());
    if (step.empty()) invalid("the scheduler planned an empty step with requests left");
    e.apply_copies(step.copies);
    std::vector<Impl::Segment> decodes, prefills;
    std::vector<std::int64_t> ids;
    for (const std::int64_t id : step.decode) {
      Impl::Segment s;
      const KvCacheManager::SeqId seq = sched.sequence(id);
      s.tokens = &tokens[id].back();
      s.n = 1;
      s.start = kv.length(seq) - 1;
      s.pages = kv.pages(seq);
      s.sample = sample_row(id);
      decodes.push_back(std::move(s));
      ids.push_back(id);
    }
    for (const auto& group : step.prefill_groups) {
      for (const std::int64_t id : group) {
        Impl::Segment s;
        const KvCacheManager::SeqId seq = sched.sequence(id);
        s.tokens = tokens[id].data();
        s.n = static_cast<int>(tokens[id].size());
        if (kv.length(seq) != s.n) invalid("internal: a prefill's cache length differs");
        s.pages = kv.pages(seq);
        s.sample = sample_row(id);
        st.prefill_tokens += s.n;
        prefills.push_back(std::move(s));
        ids.push_back(id);
      }
    }
    st.decode_tokens += static_cast<std::int64_t>(decodes.size());
    const std::vector<std::int32_t> next = e.run_step(decodes, prefills);
    std::vector<std::int64_t> stopped;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (next[i] < 0 || next[i] >= cfg.vocab_size) {  // engine::kBadLogits
        invalid("request " + std::to_string(ids[i]) + ": its logits at position " +
                std::to_string(tokens[ids[i]].size()) +
                " are not finite (a NaN or +inf, or every one -inf): no token can be drawn "
                "(weights or activations out of range?)");
      }
      tokens[ids[i]].push_back(next[i]);
      if (next[i] == requests[ids[i]].eos) stopped.push_back(ids[i]);
    }
    done += sched.complete_step(step, stopped).size();
    ++st.steps;
  }
  for (std::size_t i = 0; i < requests.size(); ++i) {
    out[i].assign(tokens[i].begin() + static_cast<std::ptrdiff_t>(requests[i].prompt.size()),
                  tokens[i].end());
  }
  st.graphs_captured = static_cast<int>(e.graphs_captured - captured0);
  st.graph_replays = static_cast<int>(e.graph_replays - replays0);
  st.graphs_dropped = static_cast<int>(e.graphs_dropped - dropped0);
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (stats) *stats = st;
  return out;
}

}  // namespace gpuattn
