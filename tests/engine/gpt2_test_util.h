// Small GPT-2 models for the engine's tests (CPU and CUDA).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gpuattn/gpt2.h"

namespace gpuattn {

// The CPU engine as the tests run it: small pages, 2 threads.
inline EngineOptions cpu_options() {
  EngineOptions o;
  o.backend = Backend::cpu;
  o.page_size = 8;
  o.num_threads = 2;
  return o;
}

// Small but awkward: 2 heads of 64, a vocabulary and context that are not round.
inline Gpt2Config small_config() {
  Gpt2Config c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 128;
  c.n_positions = 80;
  c.vocab_size = 101;
  return c;
}

// HF's init (std 0.02) makes an untrained model whose residual stream is mostly its input
// token's embedding: greedy decoding then repeats the last token whatever attention does. These
// weights are sharper (attention that matters, logits spread over several units), so that a
// wrong position, key or mask changes the tokens.
inline Gpt2Weights sharp_weights(const Gpt2Config& c, std::uint64_t seed) {
  Gpt2Weights w = Gpt2Weights::random(c, seed);
  const auto scale = [](std::vector<float>& v, float f) {
    for (float& x : v) x *= f;
  };
  scale(w.wte, 10.0f);
  scale(w.wpe, 10.0f);
  for (Gpt2Weights::Layer& L : w.layers) {
    scale(L.c_attn_w, 10.0f);
    scale(L.attn_proj_w, 5.0f);
    scale(L.c_fc_w, 5.0f);
    scale(L.mlp_proj_w, 5.0f);
  }
  return w;
}

inline std::vector<std::int32_t> random_tokens(int n, int vocab, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int32_t> t(static_cast<std::size_t>(n));
  for (auto& x : t) x = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(vocab));
  return t;
}

// Largest |a - b| over max |b|: logits against the fp64 reference.
inline double rel_error(const std::vector<float>& a, const std::vector<double>& b) {
  double err = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    err = std::max(err, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return err / scale;
}

}  // namespace gpuattn
