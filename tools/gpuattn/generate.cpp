// `gpuattn generate`: GPT-2 generation through the engine (continuous batching over the paged KV
// cache), timed, with the tokens and optionally the first prompt's logits written out.
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>

#include "common.h"
#include "engine/files.h"
#include "engine/json.h"
#include "gpuattn/gpt2.h"
#include "gpuattn/tokenizer.h"

namespace gpuattn::tool {
namespace {

const char* kHelp =
    R"(usage: gpuattn generate (--model PATH | --random tiny|124m|355m|1558m) [flags]

Generates with GPT-2 on the engine: the forward pass on CUDA (cuBLASLt GEMMs with fused epilogues,
our attention over a paged KV cache) or on the CPU, batched by the continuous-batching scheduler.

  --model PATH        a model.safetensors file, or a directory holding it and config.json
                      (Hugging Face GPT-2 layout, as save_pretrained writes it)
  --random SIZE       random weights instead: tiny (2 layers, 128 wide), 124m, 355m or 1558m
                      (GPT-2's shapes), drawn on every core; --weights-seed S picks them
                      (default 1)
  --prompt IDS        comma-separated token ids (default: --prompt-len random ids)
  --text TEXT         the prompt as text, through GPT-2's tokenizer (vocab.json and merges.txt
                      of --tokenizer DIR, else of the --model directory)
  --tokenizer DIR     a directory with vocab.json and merges.txt; with one (or a --model
                      directory that holds them) request 0's prompt and tokens are also
                      printed as text
  --prompt-len N      random prompt length (default 16), ids from --seed
  --batch B           requests, each with its own prompt (default 1)
  --max-new N         tokens to generate per request (default 32)
  --eos ID            a token id that ends a request early, kept in its output (GPT-2's
                      <|endoftext|> is 50256; default -1: none, every request runs to --max-new)
  --temperature T     0 (default) is greedy
  --top-k K, --top-p P, --seed S     sampling (defaults 0, 1, 0; top-k and top-p need a
                      temperature above 0)
  --device cpu|cuda|auto   (default auto)
  --dtype f16|bf16    CUDA storage type (default f16; not with --device cpu, which is fp32)
  --linear-weights dense|int8|int4   the layers' linears in the storage type (default) or
                      weight-only int8 / int4 with a scale per 64 rows and column
  --head-weights dense|int8|int4     the output head (tied to the embedding) likewise, a scale
                      per 64 features of each token's row (default dense)
  --kv-cache model|e4m3   the KV cache in the activations' type (default) or FP8 E4M3 (unit
                      scales; decode steps read it in place)
  --page-size N       keys a KV cache page (default 16)
  --max-batch N       the scheduler's batch limit (default: max(64, --batch))
  --warmup N          untimed runs first (default 1 on CUDA, 0 on the CPU)
  --save-model DIR    write the weights (HF layout) to DIR and go on
  --logits-out FILE   write the fp32 logits [len, vocab] of request 0's prompt (one forward)
  --json FILE         write the run, with every request's tokens, as JSON
)";

std::vector<std::int32_t> parse_ids(const std::string& s) {
  std::vector<std::int32_t> ids;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    // Digits only: strtol also takes leading spaces and a sign.
    if (item.empty() || !std::isdigit(static_cast<unsigned char>(item[0])) || *end != '\0' ||
        v < 0 || v > INT32_MAX) {
      throw UsageError("gpuattn generate: --prompt must be comma-separated token ids, not '" +
                       item + "'");
    }
    ids.push_back(static_cast<std::int32_t>(v));
  }
  if (ids.empty()) throw UsageError("gpuattn generate: --prompt is empty");
  if (s.back() == ',') {  // getline drops the empty item after a trailing comma
    throw UsageError("gpuattn generate: --prompt '" + s + "' ends in a comma (an empty token id)");
  }
  return ids;
}

// --tokenizer DIR, else the --model directory (or the directory of a --model file) when it holds
// vocab.json and merges.txt. A tokenizer found that way that fails to load is an error only with
// --text; otherwise the run goes on without text, saying why on stderr.
std::optional<Gpt2Tokenizer> find_tokenizer(const Flags& f) {
  if (f.has("tokenizer")) return Gpt2Tokenizer::load(f.get("tokenizer", ""));
  if (!f.has("model")) return std::nullopt;
  std::string dir = f.get("model", "");
  if (!engine::is_dir(dir)) {
    const std::size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? "." : dir.substr(0, slash);
  }
  if (!engine::is_file(dir + "/vocab.json") || !engine::is_file(dir + "/merges.txt")) {
    return std::nullopt;
  }
  try {
    return Gpt2Tokenizer::load(dir);
  } catch (const Error& e) {
    if (f.has("text")) throw;
    std::cerr << "gpuattn generate: no text output: " << e.what() << "\n";
    return std::nullopt;
  }
}

// A number in [lo, hi] (`range` words it for the error).
float get_float(const Flags& f, const std::string& name, float fallback, float lo, float hi,
                const std::string& range) {
  if (!f.has(name)) return fallback;
  const std::string s = f.get(name, "");
  char* end = nullptr;
  const float v = std::strtof(s.c_str(), &end);
  // A number as written: strtof also takes leading spaces.
  const bool starts =
      !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.' || s[0] == '-');
  if (!starts || *end != '\0' || !(v >= lo && v <= hi)) {
    throw UsageError("gpuattn generate: --" + name + " must be a number in " + range + ", not '" +
                     s + "'");
  }
  return v;
}

}  // namespace

int run_generate(const std::vector<std::string>& args) {
  const Flags f(
      "gpuattn generate", args,
      {"model",      "random",     "weights-seed", "prompt",         "text",         "tokenizer",
       "prompt-len", "batch",      "max-new",      "temperature",    "top-k",        "top-p",
       "seed",       "device",     "dtype",        "page-size",      "max-batch",    "warmup",
       "save-model", "logits-out", "json",         "linear-weights", "head-weights", "kv-cache",
       "eos"},
      {});
  if (f.wants_help()) {
    std::cout << kHelp;
    return 0;
  }
  if (f.has("model") == f.has("random")) {
    throw UsageError("gpuattn generate: give exactly one of --model PATH and --random SIZE");
  }
  // Every flag that does not depend on the model is checked before the weights are read (a 1558m
  // model is 6 GB), and the output paths can be written.
  const std::string device = f.choice("device", "auto", {"auto", "cpu", "cuda"});
  EngineOptions opt;
  opt.backend = device == "cpu"    ? Backend::cpu
                : device == "cuda" ? Backend::cuda
                                   : Backend::automatic;
  if (device == "cpu" && f.has("dtype")) {
    throw UsageError(
        "gpuattn generate: --dtype does not apply to --device cpu (the CPU engine computes "
        "in fp32)");
  }
  opt.dtype = f.choice("dtype", "f16", {"f16", "bf16"}) == "bf16" ? DType::bf16 : DType::f16;
  const auto storage = [&](const char* flag) {
    const std::string v = f.choice(flag, "dense", {"dense", "int8", "int4"});
    return v == "int8"   ? LinearWeights::int8
           : v == "int4" ? LinearWeights::int4
                         : LinearWeights::dense;
  };
  opt.linear_weights = storage("linear-weights");
  opt.head_weights = storage("head-weights");
  opt.kv_cache =
      f.choice("kv-cache", "model", {"model", "e4m3"}) == "e4m3" ? KvCache::e4m3 : KvCache::model;
  opt.page_size = f.get_int("page-size", 16, 1, 1 << 20);
  const int batch = f.get_int("batch", 1, 1, 1 << 16);
  opt.scheduler.max_batch = f.get_int("max-batch", std::max(64, batch), 1, 1 << 16);
  const std::uint64_t seed = f.get_u64("seed", 0);
  const float temperature = get_float(f, "temperature", 0.0f, 0.0f, 100.0f, "[0, 100]");
  const float top_p = get_float(f, "top-p", 1.0f, 1e-6f, 1.0f, "[1e-6, 1]");
  if (temperature == 0.0f) {
    for (const char* flag : {"top-k", "top-p"}) {
      if (f.has(flag)) {
        throw UsageError(std::string("gpuattn generate: --") + flag +
                         " does not apply to greedy decoding (--temperature 0, the default); "
                         "give a temperature above 0 to sample");
      }
    }
  }
  const int warmup_flag = f.get_int("warmup", -1, 0, 100);  // -1: the backend's default
  // Its form now; against the vocabulary with the requests below.
  const int eos = f.get_int("eos", -1, -1, std::numeric_limits<std::int32_t>::max());
  if (static_cast<int>(f.has("text")) + f.has("prompt") + f.has("prompt-len") > 1) {
    throw UsageError("gpuattn generate: give one of --text, --prompt and --prompt-len");
  }
  // Its form now; its ids against the vocabulary with the requests below.
  const std::vector<std::int32_t> prompt_ids =
      f.has("prompt") ? parse_ids(f.get("prompt", "")) : std::vector<std::int32_t>{};
  for (const char* flag : {"json", "logits-out"}) {
    if (f.has(flag)) check_output_path("gpuattn generate", flag, f.get(flag, ""));
  }
  if (f.has("save-model") && f.get("save-model", "").empty()) {
    throw UsageError("gpuattn generate: flag --save-model needs a directory, got ''");
  }

  Gpt2Weights weights;
  std::string model_name;
  if (f.has("model")) {
    model_name = f.get("model", "");
    weights = Gpt2Weights::load(model_name);
  } else {
    const std::string size = f.choice("random", "tiny", {"tiny", "124m", "355m", "1558m"});
    Gpt2Config c;
    if (size == "tiny") {
      c.n_layer = 2;
      c.n_head = 2;
      c.n_embd = 128;
      c.n_positions = 256;
      c.vocab_size = 1000;
    } else if (size == "355m") {
      c.n_layer = 24;
      c.n_head = 16;
      c.n_embd = 1024;
    } else if (size == "1558m") {
      c.n_layer = 48;
      c.n_head = 25;
      c.n_embd = 1600;
    }
    weights = Gpt2Weights::random_parallel(c, f.get_u64("weights-seed", 1));
    model_name = "random " + size;
  }
  const Gpt2Config& cfg = weights.config;
  const std::optional<Gpt2Tokenizer> tokenizer = find_tokenizer(f);
  if (f.has("text") && !tokenizer) {
    throw UsageError(
        "gpuattn generate: --text needs a tokenizer: --tokenizer DIR (vocab.json, "
        "merges.txt), or a --model directory that holds them");
  }

  const int max_new = f.get_int("max-new", 32, 1, cfg.n_positions);
  std::vector<GenerationRequest> reqs(static_cast<std::size_t>(batch));
  std::mt19937_64 rng(seed);
  const int prompt_len = f.get_int("prompt-len", 16, 1, cfg.n_positions);
  const int top_k = f.get_int("top-k", 0, 0, cfg.vocab_size);
  const std::vector<std::int32_t> text_ids =
      f.has("text") ? tokenizer->encode(f.get("text", "")) : std::vector<std::int32_t>{};
  if (f.has("text") && text_ids.empty()) throw UsageError("gpuattn generate: --text is empty");
  for (int i = 0; i < batch; ++i) {
    GenerationRequest& r = reqs[i];
    if (f.has("text")) {
      r.prompt = text_ids;
    } else if (f.has("prompt")) {
      r.prompt = prompt_ids;
    } else {
      r.prompt.resize(static_cast<std::size_t>(prompt_len));
      for (auto& t : r.prompt) t = static_cast<std::int32_t>(rng() % cfg.vocab_size);
    }
    r.max_new_tokens = max_new;
    r.eos = eos;
    r.sampling.temperature = temperature;
    r.sampling.top_k = top_k;
    r.sampling.top_p = top_p;
    r.sampling.seed = seed;
  }

  // Every request is checked as generate() will, and the engine built (its device found), before
  // anything is written (the saved model, the logits).
  check_generation_requests(cfg, reqs);
  Gpt2Engine engine(weights, opt);
  const bool on_cuda = engine.backend() == Backend::cuda;
  if (f.has("save-model")) weights.save(f.get("save-model", ""));
  if (f.has("logits-out")) {
    const std::vector<float> logits = engine.forward_logits(reqs[0].prompt);
    write_file_bytes(f.get("logits-out", ""), logits.data(), logits.size() * sizeof(float));
  }
  const int warmup = warmup_flag >= 0 ? warmup_flag : on_cuda ? 1 : 0;
  for (int i = 0; i < warmup; ++i) engine.generate(reqs);
  GenerationStats st;
  const std::vector<std::vector<std::int32_t>> out = engine.generate(reqs, &st);

  std::int64_t generated = 0;
  for (const auto& o : out) generated += static_cast<std::int64_t>(o.size());
  const double tok_s = generated / st.seconds;
  const std::string dev = on_cuda ? std::string("cuda ") + to_string(opt.dtype) : "cpu fp32";
  const auto storage_name = [](LinearWeights w) {
    return w == LinearWeights::int8 ? "int8" : w == LinearWeights::int4 ? "int4" : "dense";
  };
  const char* linears = storage_name(opt.linear_weights);
  const char* head_storage = storage_name(opt.head_weights);
  std::cout << "gpuattn generate: " << model_name << " (" << cfg.n_layer << " layers, "
            << cfg.n_embd << " wide, vocab " << cfg.vocab_size << "), " << dev << ", " << linears
            << " linears, " << head_storage << " head, "
            << (opt.kv_cache == KvCache::e4m3 ? "e4m3" : "model-type") << " KV cache, commit "
            << git_commit() << ", " << iso_date_utc() << "\n";
  std::cout << "request 0 generated:";
  for (std::size_t i = 0; i < std::min<std::size_t>(out[0].size(), 32); ++i)
    std::cout << " " << out[0][i];
  std::cout << (out[0].size() > 32 ? " ...\n" : "\n");
  if (tokenizer) {  // as a JSON string (control characters escaped), U+FFFD for cut characters
    std::vector<std::int32_t> all = reqs[0].prompt;
    all.insert(all.end(), out[0].begin(), out[0].end());
    std::string line;
    try {
      line = engine::json_quote(tokenizer->decode_text(all));
    } catch (const Error& e) {  // an id past the tokenizer's vocabulary (a padded model vocab)
      line = std::string("not shown: ") + e.what();
    }
    std::cout << "request 0 text: " << line << "\n";
  }
  // "new": the most a request may generate; "generated": what the batch did (fewer with --eos).
  print_table({"batch", "prompt", "new", "generated", "steps", "preempted", "seconds", "tok/s",
               "ms/step"},
              {{std::to_string(batch), std::to_string(reqs[0].prompt.size()),
                std::to_string(max_new), std::to_string(generated), std::to_string(st.steps), std::to_string(st.preemptions),
                fmt(st.seconds, 4), fmt(tok_s, 1), fmt(1e3 * st.seconds / st.steps, 3)}});
  if (f.has("json")) {
    std::ostringstream toks;
    toks << "[";
    for (std::size_t i = 0; i < out.size(); ++i) {
      toks << (i ? ", " : "") << "[";
      for (std::size_t j = 0; j < out[i].size(); ++j) toks << (j ? ", " : "") << out[i][j];
      toks << "]";
    }
    toks << "]";
    JsonObject j;
    j.add("model", model_name)
        .add("device", dev)
        .add("linear_weights", linears)
        .add("head_weights", head_storage)
        .add("kv_cache", opt.kv_cache == KvCache::e4m3 ? "e4m3" : "model")
        .add("commit", git_commit())
        .add("date", iso_date_utc())
        .add("batch", batch)
        .add("prompt_len", static_cast<int>(reqs[0].prompt.size()))
        .add("max_new_tokens", max_new)
        .add("eos", eos)
        .add("generated_tokens", generated)
        .add("steps", st.steps)
        .add("preemptions", st.preemptions)
        .add("graphs_captured", st.graphs_captured)
        .add("graph_replays", st.graph_replays)
        .add("seconds", st.seconds)
        .add("tokens_per_s", tok_s)
        .add_raw("tokens", toks.str());
    write_file(f.get("json", ""), j.str(2) + "\n");
  }
  return 0;
}

}  // namespace gpuattn::tool
