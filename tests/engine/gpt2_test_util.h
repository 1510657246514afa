// Small GPT-2 models for the engine's tests (CPU and CUDA).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/random_cases.h"
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

// A random workload's requests (the engines' RandomWorkloads tests): 1-8 of them, each of 1-40
// prompt tokens (tile edges favoured; the tokens drawn from `seed` and the length) and 1-16 new
// ones, priority 0-2, an eos at 30%.
inline std::vector<GenerationRequest> random_requests(testing::Dice& d, int vocab,
                                                      std::uint64_t seed) {
  std::vector<GenerationRequest> reqs(static_cast<std::size_t>(d.between(1, 8)));
  for (GenerationRequest& r : reqs) {
    const int len = d.length(1, 40);
    r.prompt = random_tokens(len, vocab, seed ^ static_cast<std::uint64_t>(len * 977));
    r.max_new_tokens = d.between(1, 16);
    r.priority = d.between(0, 2);
    if (d.chance(0.3)) r.eos = d.between(0, vocab - 1);
  }
  return reqs;
}

// KV cache pages the largest request takes whole.
inline int pages_of_largest(const std::vector<GenerationRequest>& reqs, int page_size) {
  int need = 0;
  for (const GenerationRequest& r : reqs) {
    const int keys = static_cast<int>(r.prompt.size()) + r.max_new_tokens;
    need = std::max(need, (keys + page_size - 1) / page_size);
  }
  return need;
}

// The requests as prompt/new/priority/eos words, for a failure's trace.
inline std::string describe_requests(const std::vector<GenerationRequest>& reqs) {
  std::string s = "requests (prompt/new/priority/eos):";
  for (const GenerationRequest& r : reqs) {
    s += " " + std::to_string(r.prompt.size()) + "/" + std::to_string(r.max_new_tokens) + "/" +
         std::to_string(r.priority) + "/" + std::to_string(r.eos);
  }
  return s;
}

// A request's tokens stop where they must: not empty, at most max_new_tokens, and ending at its
// eos (kept, last) when shorter, with nothing after an eos. (Call in ASSERT_NO_FATAL_FAILURE.)
inline void expect_stops_right(const GenerationRequest& r, const std::vector<std::int32_t>& t) {
  ASSERT_FALSE(t.empty());
  ASSERT_LE(t.size(), static_cast<std::size_t>(r.max_new_tokens));
  const auto eos_at = std::find(t.begin(), t.end(), r.eos);
  if (t.size() < static_cast<std::size_t>(r.max_new_tokens)) {
    EXPECT_EQ(eos_at, t.end() - 1) << "ended early without its eos last";
  } else {
    EXPECT_TRUE(eos_at == t.end() || eos_at == t.end() - 1) << "tokens after its eos";
  }
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
