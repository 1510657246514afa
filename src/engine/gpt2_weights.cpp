// Gpt2Config checks and Gpt2Weights from / to safetensors in the Hugging Face GPT-2 layout.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <random>
#include <sstream>
#include <thread>

#include "engine/files.h"
#include "engine/json.h"
#include "engine/safetensors.h"
#include "gpuattn/gpt2.h"

namespace gpuattn {
namespace {

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(ErrorCode::invalid_argument, msg);
}

using engine::is_dir;
using engine::is_file;
using engine::read_text;

// config.json's integer field `key` (absent: keep `value`).
void read_int(const engine::Json& j, const char* key, const std::string& path, int& value) {
  const engine::Json* v = j.find(key);
  if (!v) return;
  if (!v->is_int()) {
    std::ostringstream got;
    if (v->is_number()) {
      got << std::setprecision(17) << v->as_number();
    } else if (v->is_string()) {
      got << "the string " << engine::json_quote(v->as_string());
    } else {
      got << "a " << (v->is_object() ? "JSON object" : v->is_array() ? "JSON array" : "non-number");
    }
    invalid(path + ": " + key + " must be a positive integer, not " + got.str());
  }
  if (v->as_int() <= 0 || v->as_int() > (1 << 30)) {
    invalid(path + ": " + key + " is " + std::to_string(v->as_int()) +
            ", must be a positive integer up to 2^30");
  }
  value = static_cast<int>(v->as_int());
}

}  // namespace

void Gpt2Config::validate() const {
  const auto bad = [](const std::string& field, long long v, const std::string& why) {
    invalid("gpuattn::Gpt2Config: " + field + " is " + std::to_string(v) + ", " + why);
  };
  if (n_layer <= 0) bad("n_layer", n_layer, "must be positive");
  if (n_head <= 0) bad("n_head", n_head, "must be positive");
  if (n_embd <= 0 || n_embd % n_head != 0) {
    bad("n_embd", n_embd, "must be a positive multiple of n_head = " + std::to_string(n_head));
  }
  const int d = n_embd / n_head;
  if (d != 64 && d != 128 && d != 256) {
    bad("n_embd / n_head", d, "must be a head dim the attention runs: 64, 128 or 256");
  }
  if (n_positions <= 0) bad("n_positions", n_positions, "must be positive");
  if (vocab_size <= 0) bad("vocab_size", vocab_size, "must be positive");
  if (!(layer_norm_epsilon > 0.0f) || !std::isfinite(layer_norm_epsilon)) {
    std::ostringstream v;
    v << std::setprecision(9) << layer_norm_epsilon;  // to_string prints -1e-7 as -0.000000
    invalid("gpuattn::Gpt2Config: layer_norm_epsilon is " + v.str() +
            ", must be positive and finite");
  }
}

Gpt2Weights Gpt2Weights::load(const std::string& path) {
  std::string file = path, dir;
  if (is_dir(path)) {
    dir = path;
    file = path + "/model.safetensors";
    if (!is_file(file)) invalid(path + ": a directory without model.safetensors");
  } else {
    const std::size_t slash = path.find_last_of('/');
    dir = slash == std::string::npos ? "." : path.substr(0, slash);
  }
  const engine::SafetensorsFile st = engine::SafetensorsFile::open(file);
  // Names with or without the "transformer." prefix.
  const auto find = [&](const std::string& name) -> const engine::StTensor* {
    if (const engine::StTensor* t = st.find("transformer." + name)) return t;
    return st.find(name);
  };
  const auto need = [&](const std::string& name) -> const engine::StTensor& {
    const engine::StTensor* t = find(name);
    if (!t) invalid(file + ": no tensor " + name + " (nor transformer." + name + ")");
    return *t;
  };
  Gpt2Weights w;
  Gpt2Config& cfg = w.config;
  const engine::StTensor& wte = need("wte.weight");
  const engine::StTensor& wpe = need("wpe.weight");
  if (wte.shape.size() != 2 || wpe.shape.size() != 2) {
    invalid(file + ": wte.weight and wpe.weight must be 2-D");
  }
  for (const engine::StTensor* t : {&wte, &wpe}) {
    for (const std::int64_t s : t->shape) {
      if (s <= 0 || s > (1 << 30)) {
        invalid(file + ": " + t->name + " has a dimension of " + std::to_string(s) +
                ", must be 1 to 2^30");
      }
    }
  }
  cfg.vocab_size = static_cast<int>(wte.shape[0]);
  cfg.n_embd = static_cast<int>(wte.shape[1]);
  cfg.n_positions = static_cast<int>(wpe.shape[0]);
  cfg.n_head = std::max(1, cfg.n_embd / 64);
  cfg.n_layer = 0;
  while (find("h." + std::to_string(cfg.n_layer) + ".ln_1.weight")) ++cfg.n_layer;
  const std::string config_path = dir + "/config.json";
  if (engine::exists(config_path)) {  // read_text refuses a directory
    const engine::Json j = engine::parse_json(read_text(config_path), config_path);
    if (!j.is_object()) invalid(config_path + ": not a JSON object");
    read_int(j, "n_layer", config_path, cfg.n_layer);
    read_int(j, "n_head", config_path, cfg.n_head);
    read_int(j, "n_embd", config_path, cfg.n_embd);
    read_int(j, "n_positions", config_path, cfg.n_positions);
    read_int(j, "vocab_size", config_path, cfg.vocab_size);
    if (const engine::Json* e = j.find("layer_norm_epsilon")) {
      if (!e->is_number()) invalid(config_path + ": layer_norm_epsilon must be a number");
      const double eps = e->as_number();  // named as written: float rounds 1e-50 to 0, 1e39 to inf
      const float f = static_cast<float>(eps);
      if (!(f > 0.0f) || !std::isfinite(f)) {
        std::ostringstream v;
        v << std::setprecision(17) << eps;
        invalid(config_path + ": layer_norm_epsilon is " + v.str() +
                ", must be positive and finite as a float32");
      }
      cfg.layer_norm_epsilon = f;
    }
  }
  try {
    cfg.validate();
  } catch (const Error& e) {  // name where the values came from
    invalid((engine::exists(config_path) ? config_path + " with " : std::string()) + file +
            "'s shapes: " + e.what());
  }
  // Layer tensors past n_layer (h.0 and h.2 without h.1, or a config's n_layer below the
  // file's) would be dropped without a word: a truncated or mismatched model.
  for (const engine::StTensor& t : st.tensors()) {
    std::string name = t.name;
    if (name.rfind("transformer.", 0) == 0) name = name.substr(12);
    if (name.rfind("h.", 0) != 0) continue;
    const std::size_t dot = name.find('.', 2);
    const std::string digits = name.substr(2, dot == std::string::npos ? dot : dot - 2);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
        digits.size() > 9 || (digits.size() > 1 && digits[0] == '0') ||
        std::stoi(digits) >= cfg.n_layer) {  // h.00 would be skipped: only h.0 is looked up
      invalid(file + ": tensor " + t.name + " is not in a layer of the model's " +
              std::to_string(cfg.n_layer) + " (h.0 to h." + std::to_string(cfg.n_layer - 1) +
              (is_file(config_path) ? ", n_layer of " + config_path
                                    : ", counted up to the first missing h.N.ln_1.weight") +
              ")");
    }
  }
  const std::int64_t C = cfg.n_embd;
  const auto get = [&](const std::string& name, std::vector<std::int64_t> shape) {
    const engine::StTensor& t = need(name);
    if (t.shape != shape) {
      std::string want, got;
      for (std::int64_t s : shape) want += (want.empty() ? "" : ", ") + std::to_string(s);
      for (std::int64_t s : t.shape) got += (got.empty() ? "" : ", ") + std::to_string(s);
      invalid(file + ": " + t.name + " has shape [" + got + "], the config needs [" + want + "]");
    }
    if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16") {
      invalid(file + ": " + t.name + " has dtype " + t.dtype + ", not F32, F16 or BF16");
    }
    std::vector<float> v = engine::to_float(t);
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!std::isfinite(v[i])) {
        invalid(file + ": " + t.name + " element " + std::to_string(i) + " is " +
                (std::isnan(v[i]) ? "nan" : "inf") + ": weights must be finite");
      }
    }
    return v;
  };
  w.wte = get("wte.weight", {cfg.vocab_size, C});
  w.wpe = get("wpe.weight", {cfg.n_positions, C});
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    Layer L;
    L.ln_1_w = get(h + "ln_1.weight", {C});
    L.ln_1_b = get(h + "ln_1.bias", {C});
    L.c_attn_w = get(h + "attn.c_attn.weight", {C, 3 * C});
    L.c_attn_b = get(h + "attn.c_attn.bias", {3 * C});
    L.attn_proj_w = get(h + "attn.c_proj.weight", {C, C});
    L.attn_proj_b = get(h + "attn.c_proj.bias", {C});
    L.ln_2_w = get(h + "ln_2.weight", {C});
    L.ln_2_b = get(h + "ln_2.bias", {C});
    L.c_fc_w = get(h + "mlp.c_fc.weight", {C, 4 * C});
    L.c_fc_b = get(h + "mlp.c_fc.bias", {4 * C});
    L.mlp_proj_w = get(h + "mlp.c_proj.weight", {4 * C, C});
    L.mlp_proj_b = get(h + "mlp.c_proj.bias", {C});
    w.layers.push_back(std::move(L));
  }
  w.ln_f_w = get("ln_f.weight", {C});
  w.ln_f_b = get("ln_f.bias", {C});
  if (st.find("lm_head.weight")) {
    if (get("lm_head.weight", {cfg.vocab_size, C}) != w.wte) {
      invalid(file + ": lm_head.weight differs from wte.weight; GPT-2 ties them");
    }
  }
  return w;
}

void Gpt2Weights::check_shapes(const std::string& who) const {
  const Gpt2Config& cfg = config;
  const std::int64_t C = cfg.n_embd;
  const auto check = [&](const std::vector<float>& v, std::int64_t n, const std::string& name) {
    if (static_cast<std::int64_t>(v.size()) != n) {
      invalid(who + ": weights " + name + " has " + std::to_string(v.size()) +
              " values, the config needs " + std::to_string(n));
    }
  };
  check(wte, cfg.vocab_size * C, "wte");
  check(wpe, cfg.n_positions * C, "wpe");
  check(ln_f_w, C, "ln_f.weight");
  check(ln_f_b, C, "ln_f.bias");
  if (static_cast<int>(layers.size()) != cfg.n_layer) {
    invalid(who + ": weights have " + std::to_string(layers.size()) + " layers, the config " +
            std::to_string(cfg.n_layer));
  }
  for (int l = 0; l < cfg.n_layer; ++l) {
    const Layer& L = layers[l];
    const std::string h = "h." + std::to_string(l) + ".";
    check(L.ln_1_w, C, h + "ln_1.weight");
    check(L.ln_1_b, C, h + "ln_1.bias");
    check(L.c_attn_w, C * 3 * C, h + "attn.c_attn.weight");
    check(L.c_attn_b, 3 * C, h + "attn.c_attn.bias");
    check(L.attn_proj_w, C * C, h + "attn.c_proj.weight");
    check(L.attn_proj_b, C, h + "attn.c_proj.bias");
    check(L.ln_2_w, C, h + "ln_2.weight");
    check(L.ln_2_b, C, h + "ln_2.bias");
    check(L.c_fc_w, C * 4 * C, h + "mlp.c_fc.weight");
    check(L.c_fc_b, 4 * C, h + "mlp.c_fc.bias");
    check(L.mlp_proj_w, 4 * C * C, h + "mlp.c_proj.weight");
    check(L.mlp_proj_b, C, h + "mlp.c_proj.bias");
  }
}

void Gpt2Weights::save(const std::string& dir) const {
  // Everything load() would refuse is refused before anything is written.
  config.validate();
  if (static_cast<int>(layers.size()) != config.n_layer) {
    invalid("gpuattn::Gpt2Weights::save: " + std::to_string(layers.size()) +
            " layers, but config.n_layer is " + std::to_string(config.n_layer));
  }
  check_shapes("gpuattn::Gpt2Weights::save");
  std::vector<engine::StTensorOut> out;
  const auto put = [&](const std::string& name, const std::vector<float>& v,
                       std::vector<std::int64_t> shape) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!std::isfinite(v[i])) {
        invalid("gpuattn::Gpt2Weights::save: " + name + " element " + std::to_string(i) + " is " +
                (std::isnan(v[i]) ? "nan" : "inf") + ": weights must be finite");
      }
    }
    engine::StTensorOut t;
    t.name = "transformer." + name;
    t.dtype = "F32";
    t.shape = std::move(shape);
    t.bytes.resize(v.size() * 4);
    std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
    out.push_back(std::move(t));
  };
  const std::int64_t C = config.n_embd;
  put("wte.weight", wte, {config.vocab_size, C});
  put("wpe.weight", wpe, {config.n_positions, C});
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const Layer& L = layers[l];
    const std::string h = "h." + std::to_string(l) + ".";
    put(h + "ln_1.weight", L.ln_1_w, {C});
    put(h + "ln_1.bias", L.ln_1_b, {C});
    put(h + "attn.c_attn.weight", L.c_attn_w, {C, 3 * C});
    put(h + "attn.c_attn.bias", L.c_attn_b, {3 * C});
    put(h + "attn.c_proj.weight", L.attn_proj_w, {C, C});
    put(h + "attn.c_proj.bias", L.attn_proj_b, {C});
    put(h + "ln_2.weight", L.ln_2_w, {C});
    put(h + "ln_2.bias", L.ln_2_b, {C});
    put(h + "mlp.c_fc.weight", L.c_fc_w, {C, 4 * C});
    put(h + "mlp.c_fc.bias", L.c_fc_b, {4 * C});
    put(h + "mlp.c_proj.weight", L.mlp_proj_w, {4 * C, C});
    put(h + "mlp.c_proj.bias", L.mlp_proj_b, {C});
  }
  put("ln_f.weight", ln_f_w, {C});
  put("ln_f.bias", ln_f_b, {C});
  if (!is_dir(dir) && ::mkdir(dir.c_str(), 0755) != 0) {
    invalid("gpuattn::Gpt2Weights::save: cannot create " + dir + ": " + std::strerror(errno));
  }
  std::ostringstream j;
  j << "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
    << "  \"n_layer\": " << config.n_layer << ",\n  \"n_head\": " << config.n_head
    << ",\n  \"n_embd\": " << config.n_embd << ",\n  \"n_positions\": " << config.n_positions
    << ",\n  \"n_ctx\": " << config.n_positions << ",\n  \"vocab_size\": " << config.vocab_size
    << ",\n  \"layer_norm_epsilon\": " << std::setprecision(9) << config.layer_norm_epsilon
    << ",\n  \"activation_function\": \"gelu_new\"\n}\n";
  // config.json's text goes to a temporary file first, checked after its close (a full disk
  // shows only then), then the model (through its own temporary file), then the config is renamed
  // into place: a failure leaves the old pair, or a new model beside the old config only if the
  // last rename fails.
  const std::string tmp = dir + "/config.json.tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << j.str();
    f.close();
    if (!f) {
      std::remove(tmp.c_str());
      invalid("gpuattn::Gpt2Weights::save: cannot write " + tmp + " (nothing written)");
    }
  }
  try {
    engine::write_safetensors(dir + "/model.safetensors", out, {{"format", "pt"}});
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), (dir + "/config.json").c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    invalid("gpuattn::Gpt2Weights::save: cannot rename " + tmp + ": " + why);
  }
}

Gpt2Weights Gpt2Weights::random(const Gpt2Config& config, std::uint64_t seed) {
  config.validate();
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> init(0.0f, 0.02f), noise(0.0f, 0.1f);
  const auto mat = [&](std::int64_t n) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& x : v) x = init(rng);
    return v;
  };
  const auto around = [&](std::int64_t n, float center) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& x : v) x = center + noise(rng);
    return v;
  };
  Gpt2Weights w;
  w.config = config;
  const std::int64_t C = config.n_embd;
  w.wte = mat(config.vocab_size * C);
  w.wpe = mat(config.n_positions * C);
  for (int l = 0; l < config.n_layer; ++l) {
    Layer L;
    L.ln_1_w = around(C, 1.0f);
    L.ln_1_b = around(C, 0.0f);
    L.c_attn_w = mat(C * 3 * C);
    L.c_attn_b = around(3 * C, 0.0f);
    L.attn_proj_w = mat(C * C);
    L.attn_proj_b = around(C, 0.0f);
    L.ln_2_w = around(C, 1.0f);
    L.ln_2_b = around(C, 0.0f);
    L.c_fc_w = mat(C * 4 * C);
    L.c_fc_b = around(4 * C, 0.0f);
    L.mlp_proj_w = mat(4 * C * C);
    L.mlp_proj_b = around(C, 0.0f);
    w.layers.push_back(std::move(L));
  }
  w.ln_f_w = around(C, 1.0f);
  w.ln_f_b = around(C, 0.0f);
  return w;
}

namespace {

// splitmix64's step: the generator of random_parallel's streams (and the mix of their seeds).
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// One tensor of random_parallel: n values of N(center, sd) into data, from stream `stream`.
struct NormalFill {
  float* data;
  std::int64_t n;
  float center, sd;
  std::uint64_t stream;
};

constexpr std::int64_t kFillBlock = 65536;  // values a block

// Block `block` of f: its own splitmix64 stream, started from a hash of (seed, f.stream, block);
// normal pairs by Marsaglia's polar method on 24-bit uniforms in (-1, 1) (one log and one square
// root a pair, no trigonometry; 21% of the pairs drawn are rejected).
void fill_block(const NormalFill& f, std::uint64_t seed, std::int64_t block) {
  std::uint64_t s0 = seed ^ (f.stream * 0xd1b54a32d192ed03ULL);
  std::uint64_t s1 = splitmix64(s0) ^ (static_cast<std::uint64_t>(block) * 0x8cb92ba72f3d8dd7ULL);
  std::uint64_t state = splitmix64(s1);
  const std::int64_t begin = block * kFillBlock, end = std::min(f.n, begin + kFillBlock);
  constexpr float kUnit = 1.0f / 8388608.0f;  // 2^-23: 24 bits to [-1, 1)
  for (std::int64_t i = begin; i < end;) {
    const std::uint64_t r = splitmix64(state);
    const float u = static_cast<float>(static_cast<std::int32_t>(r >> 40) - 8388608) * kUnit;
    const float v =
        static_cast<float>(static_cast<std::int32_t>((r >> 16) & 0xffffff) - 8388608) * kUnit;
    const float q = u * u + v * v;
    if (q >= 1.0f || q == 0.0f) continue;
    const float m = f.sd * std::sqrt(-2.0f * std::log(q) / q);
    f.data[i++] = f.center + u * m;
    if (i < end) f.data[i++] = f.center + v * m;
  }
}

}  // namespace

Gpt2Weights Gpt2Weights::random_parallel(const Gpt2Config& config, std::uint64_t seed,
                                         int threads) {
  config.validate();
  if (threads < 0) {
    invalid("gpuattn::Gpt2Weights::random_parallel: threads is " + std::to_string(threads) +
            ", must be 0 (every core) or positive");
  }
  Gpt2Weights w;
  w.config = config;
  const std::int64_t C = config.n_embd;
  std::vector<NormalFill> fills;
  const auto add = [&](std::vector<float>& v, std::int64_t n, float center, float sd) {
    v.resize(static_cast<std::size_t>(n));
    fills.push_back({v.data(), n, center, sd, static_cast<std::uint64_t>(fills.size())});
  };
  constexpr float kInit = 0.02f, kNoise = 0.1f;  // random()'s
  add(w.wte, config.vocab_size * C, 0.0f, kInit);
  add(w.wpe, config.n_positions * C, 0.0f, kInit);
  w.layers.resize(static_cast<std::size_t>(config.n_layer));
  for (Layer& L : w.layers) {
    add(L.ln_1_w, C, 1.0f, kNoise);
    add(L.ln_1_b, C, 0.0f, kNoise);
    add(L.c_attn_w, C * 3 * C, 0.0f, kInit);
    add(L.c_attn_b, 3 * C, 0.0f, kNoise);
    add(L.attn_proj_w, C * C, 0.0f, kInit);
    add(L.attn_proj_b, C, 0.0f, kNoise);
    add(L.ln_2_w, C, 1.0f, kNoise);
    add(L.ln_2_b, C, 0.0f, kNoise);
    add(L.c_fc_w, C * 4 * C, 0.0f, kInit);
    add(L.c_fc_b, 4 * C, 0.0f, kNoise);
    add(L.mlp_proj_w, 4 * C * C, 0.0f, kInit);
    add(L.mlp_proj_b, C, 0.0f, kNoise);
  }
  add(w.ln_f_w, C, 1.0f, kNoise);
  add(w.ln_f_b, C, 0.0f, kNoise);

  // Every (tensor, block) pair, handed out in order through one counter.
  std::vector<std::pair<std::size_t, std::int64_t>> blocks;
  for (std::size_t t = 0; t < fills.size(); ++t) {
    for (std::int64_t b = 0; b * kFillBlock < fills[t].n; ++b) blocks.emplace_back(t, b);
  }
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < blocks.size();) {
      fill_block(fills[blocks[i].first], seed, blocks[i].second);
    }
  };
  const int n =
      threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // The blocks go to whichever thread asks next, so a thread that cannot be started (a system
  // limit) only leaves more of them to the others: the values are the same.
  std::vector<std::thread> pool;
  const std::size_t extra = std::min<std::size_t>(static_cast<std::size_t>(n) - 1, blocks.size());
  for (std::size_t i = 0; i < extra; ++i) {
    try {
      pool.emplace_back(work);
    } catch (...) {
      break;
    }
  }
  work();
  for (std::thread& t : pool) t.join();
  return w;
}

}  // namespace gpuattn
