// The GPT-2 engine on the CPU backend: weights round trip, the forward against the fp64
// reference, generation with the KV cache against full recomputation, batching, preemption,
// sampling and every bad input.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "common/expect_error.h"
#include "common/random_cases.h"
#include "engine/gpt2_test_util.h"
#include "engine/safetensors.h"
#include "engine/sampling.h"
#include "gpuattn/gpt2.h"
#include "gpuattn/numeric.h"

namespace gpuattn {
namespace {

using testing::expect_invalid_argument;

std::string temp_dir(const std::string& name) {
  return ::testing::TempDir() + "gpt2_" + name;
}

TEST(Gpt2Config, RejectsWhatNoKernelRuns) {
  Gpt2Config c = small_config();
  c.n_head = 3;
  expect_invalid_argument([&] { c.validate(); },
                          "n_embd is 128, must be a positive multiple of n_head = 3");
  c = small_config();
  c.n_head = 4;  // head dim 32
  expect_invalid_argument([&] { c.validate(); }, "n_embd / n_head is 32");
  c = small_config();
  c.n_layer = 0;
  expect_invalid_argument([&] { c.validate(); }, "n_layer is 0");
  c = small_config();
  c.layer_norm_epsilon = -1.0f;
  expect_invalid_argument([&] { c.validate(); }, "layer_norm_epsilon");
  c.layer_norm_epsilon = -1.5e-7f;  // once printed as -0.000000
  expect_invalid_argument([&] { c.validate(); }, "layer_norm_epsilon is -1.50000005e-07");
}

// random_parallel: the values depend on the seed alone (not the thread count, nor the order the
// blocks are drawn in), tensors and blocks draw from different streams, the distributions are
// random()'s, and the shapes are random()'s.
TEST(Gpt2Weights, RandomParallelIsDeterministicAndDistributedAsRandom) {
  Gpt2Config c = small_config();
  c.vocab_size = 1100;  // wte: 140,800 values, three blocks of 65,536 (the last one partial)
  const Gpt2Weights one = Gpt2Weights::random_parallel(c, 5, 1);
  const Gpt2Weights many = Gpt2Weights::random_parallel(c, 5, 3);
  const Gpt2Weights all = Gpt2Weights::random_parallel(c, 5);
  const Gpt2Weights ref = Gpt2Weights::random(c, 5);
  const auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
  };
  const auto tensors = [](const Gpt2Weights& w) {
    std::vector<const std::vector<float>*> t = {&w.wte, &w.wpe, &w.ln_f_w, &w.ln_f_b};
    for (const Gpt2Weights::Layer& L : w.layers) {
      for (const auto* v :
           {&L.ln_1_w, &L.ln_1_b, &L.c_attn_w, &L.c_attn_b, &L.attn_proj_w, &L.attn_proj_b,
            &L.ln_2_w, &L.ln_2_b, &L.c_fc_w, &L.c_fc_b, &L.mlp_proj_w, &L.mlp_proj_b}) {
        t.push_back(v);
      }
    }
    return t;
  };
  const auto t1 = tensors(one), tm = tensors(many), ta = tensors(all), tr = tensors(ref);
  ASSERT_EQ(t1.size(), tr.size());
  for (std::size_t i = 0; i < t1.size(); ++i) {
    EXPECT_TRUE(same(*t1[i], *tm[i])) << "tensor " << i << ": 1 thread against 3";
    EXPECT_TRUE(same(*t1[i], *ta[i])) << "tensor " << i << ": 1 thread against every core";
    EXPECT_EQ(t1[i]->size(), tr[i]->size()) << "tensor " << i;
    for (float x : *t1[i]) ASSERT_TRUE(std::isfinite(x)) << "tensor " << i;
  }
  EXPECT_FALSE(same(one.wte, Gpt2Weights::random_parallel(c, 6, 2).wte)) << "seeds 5 and 6";
  // Streams: two layers' c_attn_w, and wte's blocks, are not copies of each other.
  EXPECT_FALSE(same(one.layers[0].c_attn_w, one.layers[1].c_attn_w));
  EXPECT_NE(std::memcmp(one.wte.data(), one.wte.data() + 65536, 4096), 0);
  // Moments against random()'s N(0, 0.02) and 1 + N(0, 0.1), within ~5 standard errors.
  const auto moments = [](const std::vector<float>& v, double& mean, double& sd) {
    double s = 0.0, s2 = 0.0;
    for (float x : v) s += x;
    mean = s / static_cast<double>(v.size());
    for (float x : v) s2 += (x - mean) * (x - mean);
    sd = std::sqrt(s2 / static_cast<double>(v.size()));
  };
  double mean = 0.0, sd = 0.0;
  moments(one.wte, mean, sd);  // 140,800 values
  EXPECT_NEAR(mean, 0.0, 5 * 0.02 / std::sqrt(140800.0));
  EXPECT_NEAR(sd, 0.02, 0.02 * 5 / std::sqrt(2 * 140800.0));
  std::vector<float> ln;
  for (const Gpt2Weights::Layer& L : one.layers) {
    ln.insert(ln.end(), L.ln_1_w.begin(), L.ln_1_w.end());
    ln.insert(ln.end(), L.ln_2_w.begin(), L.ln_2_w.end());
  }
  moments(ln, mean, sd);  // 512 values
  EXPECT_NEAR(mean, 1.0, 5 * 0.1 / std::sqrt(512.0));
  EXPECT_NEAR(sd, 0.1, 0.1 * 5 / std::sqrt(2 * 512.0));
  std::vector<float> biases;  // N(0, 0.1): 3C + C + 4C + C a layer
  for (const Gpt2Weights::Layer& L : one.layers) {
    for (const auto* v : {&L.c_attn_b, &L.attn_proj_b, &L.c_fc_b, &L.mlp_proj_b}) {
      biases.insert(biases.end(), v->begin(), v->end());
    }
  }
  moments(biases, mean, sd);  // 2,304 values
  EXPECT_NEAR(mean, 0.0, 5 * 0.1 / std::sqrt(2304.0));
  EXPECT_NEAR(sd, 0.1, 0.1 * 5 / std::sqrt(2 * 2304.0));
  moments(one.layers[1].c_fc_w, mean, sd);  // 65,536 values of N(0, 0.02)
  EXPECT_NEAR(mean, 0.0, 5 * 0.02 / std::sqrt(65536.0));
  EXPECT_NEAR(sd, 0.02, 0.02 * 5 / std::sqrt(2 * 65536.0));
  // The tails: a normal puts 4.55% beyond two standard deviations.
  const auto beyond =
      std::count_if(one.wte.begin(), one.wte.end(), [](float x) { return std::abs(x) > 0.04f; });
  EXPECT_NEAR(static_cast<double>(beyond) / 140800.0, 0.0455, 0.003);
  expect_invalid_argument([&] { (void)Gpt2Weights::random_parallel(c, 5, -2); }, "threads is -2");
  c.n_head = 3;
  expect_invalid_argument([&] { (void)Gpt2Weights::random_parallel(c, 5); }, "n_head = 3");
}

TEST(Gpt2Weights, SaveLoadRoundTripWithConfig) {
  const Gpt2Weights w = Gpt2Weights::random(small_config(), 1);
  const std::string dir = temp_dir("roundtrip");
  w.save(dir);
  const Gpt2Weights r = Gpt2Weights::load(dir);
  EXPECT_EQ(r.config.n_layer, 2);
  EXPECT_EQ(r.config.n_head, 2);
  EXPECT_EQ(r.config.n_positions, 80);
  EXPECT_EQ(r.config.vocab_size, 101);
  EXPECT_EQ(r.wte, w.wte);
  EXPECT_EQ(r.wpe, w.wpe);
  ASSERT_EQ(r.layers.size(), 2u);
  EXPECT_EQ(r.layers[1].c_attn_w, w.layers[1].c_attn_w);
  EXPECT_EQ(r.layers[1].mlp_proj_b, w.layers[1].mlp_proj_b);
  EXPECT_EQ(r.ln_f_b, w.ln_f_b);
  // The file path works as well as the directory.
  EXPECT_EQ(Gpt2Weights::load(dir + "/model.safetensors").layers[0].ln_2_w, w.layers[0].ln_2_w);
}

// The original checkpoints: no "transformer." prefix, F16 tensors, a tied lm_head, the mask
// buffers, and no config.json (n_head from n_embd / 64).
TEST(Gpt2Weights, LoadsUnprefixedF16WithoutConfig) {
  const Gpt2Weights w = Gpt2Weights::random(small_config(), 2);
  const std::string src = temp_dir("src");
  w.save(src);
  const engine::SafetensorsFile f = engine::SafetensorsFile::open(src + "/model.safetensors");
  std::vector<engine::StTensorOut> out;
  for (const engine::StTensor& t : f.tensors()) {
    engine::StTensorOut o;
    o.name = t.name.substr(std::string("transformer.").size());
    o.dtype = "F16";
    o.shape = t.shape;
    const std::vector<float> v = engine::to_float(t);
    o.bytes.resize(v.size() * 2);
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::uint16_t h = float_to_f16(v[i]);
      std::memcpy(&o.bytes[2 * i], &h, 2);
    }
    out.push_back(std::move(o));
  }
  engine::StTensorOut tied = out[0];  // wte
  tied.name = "lm_head.weight";
  out.push_back(tied);
  engine::StTensorOut mask;
  mask.name = "h.0.attn.bias";
  mask.dtype = "F32";
  mask.shape = {1};
  mask.bytes.resize(4);
  out.push_back(mask);
  const std::string dir = temp_dir("unprefixed");
  std::remove((dir + "/config.json").c_str());
  ::mkdir(dir.c_str(), 0755);
  engine::write_safetensors(dir + "/model.safetensors", out);
  const Gpt2Weights r = Gpt2Weights::load(dir);
  EXPECT_EQ(r.config.n_head, 2);  // 128 / 64
  EXPECT_EQ(r.config.n_layer, 2);
  ASSERT_EQ(r.wte.size(), w.wte.size());
  for (std::size_t i = 0; i < w.wte.size(); i += 97) {
    EXPECT_EQ(r.wte[i], f16_to_float(float_to_f16(w.wte[i])));
  }

  // A wrong shape and a missing tensor are named.
  out.pop_back();
  out[3].shape = {64};  // h.0.ln_1.bias? whichever tensor sits there: its name is in the error
  out[3].bytes.resize(128);
  const std::string bad_name = out[3].name;
  engine::write_safetensors(dir + "/model.safetensors", out);
  expect_invalid_argument([&] { Gpt2Weights::load(dir); }, bad_name + " has shape [64]");
  out.erase(out.begin() + 1);  // wpe
  engine::write_safetensors(dir + "/model.safetensors", out);
  expect_invalid_argument([&] { Gpt2Weights::load(dir); }, "no tensor wpe.weight");
  expect_invalid_argument([&] { Gpt2Weights::load(temp_dir("nowhere")); }, "nowhere");
}

// What a file cannot hold without an error: a non-finite weight, layers past n_layer (a gap, or
// more than config.json's n_layer), a config.json that is a directory. And save() keeps
// layer_norm_epsilon to the float.
TEST(Gpt2Weights, NonFiniteWeightsStrayLayersAndBadConfigsAreNamed) {
  Gpt2Config cfg = small_config();
  cfg.layer_norm_epsilon = 1.23456789e-5f;
  const Gpt2Weights w = Gpt2Weights::random(cfg, 4);
  const std::string dir = temp_dir("strays");
  w.save(dir);
  EXPECT_EQ(Gpt2Weights::load(dir).config.layer_norm_epsilon, cfg.layer_norm_epsilon);
  const engine::SafetensorsFile f = engine::SafetensorsFile::open(dir + "/model.safetensors");
  std::vector<engine::StTensorOut> good;
  for (const engine::StTensor& t : f.tensors()) {
    good.push_back({t.name, t.dtype, t.shape, std::vector<std::byte>(t.data, t.data + t.nbytes)});
  }
  auto write = [&](const std::vector<engine::StTensorOut>& out) {
    engine::write_safetensors(dir + "/model.safetensors", out);
  };
  // A NaN in the second layer's MLP (F32: element 5's bytes).
  std::vector<engine::StTensorOut> out = good;
  bool planted = false;
  for (auto& t : out) {
    if (t.name == "transformer.h.1.mlp.c_fc.weight") {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      std::memcpy(&t.bytes[5 * sizeof(float)], &nan, sizeof(float));
      planted = true;
    }
  }
  ASSERT_TRUE(planted);
  write(out);
  expect_invalid_argument([&] { Gpt2Weights::load(dir); },
                          "transformer.h.1.mlp.c_fc.weight element 5 is nan");
  // config.json says 1 layer, the file holds 2.
  write(good);
  {
    std::ifstream in(dir + "/config.json");
    std::stringstream text;
    text << in.rdbuf();
    std::string j = text.str();
    const std::size_t at = j.find("\"n_layer\": 2");
    ASSERT_NE(at, std::string::npos) << j;
    j.replace(at, 12, "\"n_layer\": 1");
    std::ofstream(dir + "/config.json") << j;
  }
  expect_invalid_argument([&] { Gpt2Weights::load(dir); },
                          "tensor transformer.h.1.ln_1.weight is not in a layer of the "
                          "model's 1 (h.0 to h.0, n_layer of");
  // No config, and layer 1 renamed layer 2: a gap, counted as 1 layer, h.2 stray.
  std::remove((dir + "/config.json").c_str());
  out = good;
  for (auto& t : out) {
    const std::string h1 = "transformer.h.1.";
    if (t.name.rfind(h1, 0) == 0) t.name = "transformer.h.2." + t.name.substr(h1.size());
  }
  write(out);
  expect_invalid_argument([&] { Gpt2Weights::load(dir); },
                          "is not in a layer of the model's 1 (h.0 to h.0, counted up to the "
                          "first missing h.N.ln_1.weight)");
  // config.json a directory: not silently skipped.
  write(good);
  ::mkdir((dir + "/config.json").c_str(), 0755);
  expect_invalid_argument([&] { Gpt2Weights::load(dir); }, "config.json: not a regular file");
  ::rmdir((dir + "/config.json").c_str());
  // h.00 passed the stray check (stoi gives 0) but was never looked up: dropped without a word.
  out = good;
  engine::StTensorOut extra = good[0];
  for (const auto& t : good) {
    if (t.name == "transformer.h.0.ln_1.weight") extra = t;
  }
  extra.name = "transformer.h.00.ln_1.weight";
  out.push_back(extra);
  write(out);
  expect_invalid_argument([&] { Gpt2Weights::load(dir); },
                          "tensor transformer.h.00.ln_1.weight is not in a layer");
  // A config's values are named as written, with the file.
  write(good);
  const auto config = [&](const std::string& text) { std::ofstream(dir + "/config.json") << text; };
  config(R"({"n_head": 3})");
  expect_invalid_argument([&] { Gpt2Weights::load(dir); },
                          "config.json with " + dir +
                              "/model.safetensors's shapes: "
                              "gpuattn::Gpt2Config: n_embd is 128, must be a positive multiple of "
                              "n_head = 3");
  config(R"({"layer_norm_epsilon": 1e-50})");
  expect_invalid_argument([&] { Gpt2Weights::load(dir); },
                          "layer_norm_epsilon is 1e-50, must be positive and "
                          "finite as a float32");
  config(R"({"layer_norm_epsilon": 1e39})");
  expect_invalid_argument([&] { Gpt2Weights::load(dir); },
                          "layer_norm_epsilon is 9.9999999999999994e+38");
  config(R"({"n_layer": "1"})");
  expect_invalid_argument([&] { Gpt2Weights::load(dir); },
                          "n_layer must be a positive integer, not the string \"1\"");
  config(R"({"n_layer": [1]})");
  expect_invalid_argument([&] { Gpt2Weights::load(dir); }, "not a JSON array");
}

// save() refuses what load() would, before writing anything: the old files stay.
TEST(Gpt2Weights, SaveRefusesWhatLoadRefuses) {
  const Gpt2Weights w = Gpt2Weights::random(small_config(), 6);
  const std::string dir = temp_dir("save_checks");
  w.save(dir);
  const auto bytes = [&](const std::string& name) {
    std::ifstream in(dir + "/" + name, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string model = bytes("model.safetensors"), config = bytes("config.json");
  Gpt2Weights bad = w;
  bad.layers[0].ln_1_b[3] = std::numeric_limits<float>::quiet_NaN();
  expect_invalid_argument([&] { bad.save(dir); }, "h.0.ln_1.bias element 3 is nan");
  bad = w;
  bad.wpe[7] = INFINITY;
  expect_invalid_argument([&] { bad.save(dir); }, "wpe.weight element 7 is inf");
  bad = w;
  bad.layers.pop_back();
  expect_invalid_argument([&] { bad.save(dir); }, "1 layers, but config.n_layer is 2");
  bad = w;
  bad.layers[1].c_fc_w.pop_back();
  expect_invalid_argument([&] { bad.save(dir); }, "h.1.mlp.c_fc.weight has 65535 values");
  EXPECT_EQ(bytes("model.safetensors"), model);
  EXPECT_EQ(bytes("config.json"), config);
  struct stat st;
  EXPECT_NE(::stat((dir + "/config.json.tmp").c_str(), &st), 0);
}

TEST(Gpt2Weights, UntiedLmHeadIsRejected) {
  const Gpt2Weights w = Gpt2Weights::random(small_config(), 3);
  const std::string dir = temp_dir("untied");
  w.save(dir);
  const engine::SafetensorsFile f = engine::SafetensorsFile::open(dir + "/model.safetensors");
  std::vector<engine::StTensorOut> out;
  for (const engine::StTensor& t : f.tensors()) {
    out.push_back({t.name, t.dtype, t.shape, std::vector<std::byte>(t.data, t.data + t.nbytes)});
  }
  engine::StTensorOut head = out[0];
  head.name = "lm_head.weight";
  head.bytes[0] = std::byte{0x7f};
  out.push_back(head);
  engine::write_safetensors(dir + "/model.safetensors", out);
  expect_invalid_argument([&] { Gpt2Weights::load(dir); }, "lm_head.weight differs from wte");
}

TEST(Gpt2EngineCpu, ForwardMatchesTheFp64Reference) {
  const Gpt2Weights w = sharp_weights(small_config(), 4);
  Gpt2Engine e(w, cpu_options());
  EXPECT_EQ(e.backend(), Backend::cpu);
  for (int n : {1, 7, 37, 80}) {
    const std::vector<std::int32_t> tokens = random_tokens(n, 101, 10 + n);
    const std::vector<float> logits = e.forward_logits(tokens);
    const std::vector<double> ref = gpt2_reference_logits(w, tokens);
    ASSERT_EQ(logits.size(), ref.size());
    EXPECT_LT(rel_error(logits, ref), 2e-5) << "n = " << n;
  }
}

TEST(Gpt2EngineCpu, DeeperWiderModelMatchesTheReference) {
  Gpt2Config c = small_config();
  c.n_layer = 3;
  c.n_head = 2;
  c.n_embd = 256;  // head dim 128
  const Gpt2Weights w = sharp_weights(c, 5);
  Gpt2Engine e(w, cpu_options());
  const std::vector<std::int32_t> tokens = random_tokens(29, 101, 6);
  EXPECT_LT(rel_error(e.forward_logits(tokens), gpt2_reference_logits(w, tokens)), 2e-5);
}

// Each generated token is the argmax of the full forward over the sequence so far (up to fp32
// rounding: a token within 1e-4 of the best logit counts).
void expect_greedy_consistent(Gpt2Engine& e, const std::vector<std::int32_t>& prompt,
                              const std::vector<std::int32_t>& generated) {
  std::vector<std::int32_t> seq = prompt;
  const int V = e.config().vocab_size;
  for (std::size_t i = 0; i < generated.size(); ++i) {
    const std::vector<float> logits = e.forward_logits(seq);
    const float* last = &logits[(seq.size() - 1) * V];
    const float best = *std::max_element(last, last + V);
    EXPECT_GE(last[generated[i]], best - 1e-4f * std::max(1.0f, std::abs(best))) << "token " << i;
    seq.push_back(generated[i]);
  }
}

TEST(Gpt2EngineCpu, GreedyGenerationEqualsRecomputation) {
  const Gpt2Weights w = sharp_weights(small_config(), 7);
  Gpt2Engine e(w, cpu_options());
  std::vector<GenerationRequest> reqs;
  for (int len : {1, 5, 9, 17, 33}) {
    GenerationRequest r;
    r.prompt = random_tokens(len, 101, 100 + len);
    r.max_new_tokens = 12;
    reqs.push_back(r);
  }
  GenerationStats stats;
  const auto out = e.generate(reqs, &stats);
  ASSERT_EQ(out.size(), reqs.size());
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_EQ(out[i].size(), 12u);
    expect_greedy_consistent(e, reqs[i].prompt, out[i]);
  }
  EXPECT_EQ(stats.prefill_tokens, 1 + 5 + 9 + 17 + 33);
  EXPECT_EQ(stats.decode_tokens, 5 * 11);
  EXPECT_EQ(stats.preemptions, 0);
  EXPECT_GT(stats.steps, 11);
}

// A request draws the same tokens alone and in any batch: rows never mix, and the sampling noise
// depends on (seed, request, position, token) only. Here the request keeps its index (0).
TEST(Gpt2EngineCpu, SamplingDoesNotDependOnTheBatch) {
  const Gpt2Weights w = sharp_weights(small_config(), 8);
  Gpt2Engine e(w, cpu_options());
  GenerationRequest a;
  a.prompt = random_tokens(6, 101, 1);
  a.max_new_tokens = 20;
  a.sampling.temperature = 1.5f;
  a.sampling.top_k = 40;
  a.sampling.top_p = 0.9f;
  a.sampling.seed = 42;
  std::vector<GenerationRequest> batch = {a};
  for (int i = 0; i < 6; ++i) {
    GenerationRequest b = a;
    b.prompt = random_tokens(3 + 5 * i, 101, 50 + i);
    b.sampling.seed = 7 + i;
    batch.push_back(b);
  }
  const auto alone = e.generate({a});
  const auto together = e.generate(batch);
  EXPECT_EQ(alone[0], together[0]);
  EXPECT_EQ(e.generate({a})[0], alone[0]);  // and again: deterministic
  a.sampling.seed = 43;
  EXPECT_NE(e.generate({a})[0], alone[0]);  // another seed, another draw (20 tokens)
}

// A pool too small for every request at once: the scheduler preempts and recomputes, and the
// greedy tokens are those of a run with room to spare.
TEST(Gpt2EngineCpu, PreemptionByRecomputeKeepsTheTokens) {
  const Gpt2Weights w = sharp_weights(small_config(), 9);
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 6; ++i) {
    GenerationRequest r;
    r.prompt = random_tokens(10 + 3 * i, 101, 200 + i);
    r.max_new_tokens = 30;
    reqs.push_back(r);
  }
  Gpt2Engine roomy(w, cpu_options());
  GenerationStats s0;
  const auto expected = roomy.generate(reqs, &s0);
  EXPECT_EQ(s0.preemptions, 0);
  EngineOptions tight = cpu_options();
  tight.num_pages = 14;  // 112 keys: two or three requests at a time
  Gpt2Engine small(w, tight);
  GenerationStats s1;
  const auto got = small.generate(reqs, &s1);
  EXPECT_GT(s1.preemptions, 0);
  EXPECT_GT(s1.prefill_tokens, s0.prefill_tokens);  // recomputed prompts
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_EQ(got[i].size(), 30u);
    // Recomputation reorders fp32 sums (prefill instead of decode): equal up to near-ties.
    expect_greedy_consistent(small, reqs[i].prompt, got[i]);
  }
  int same = 0;
  for (std::size_t i = 0; i < reqs.size(); ++i) same += got[i] == expected[i];
  EXPECT_GE(same, 5);
}

// GPUATTN_FUZZ_CASES random workloads (default 12) from GPUATTN_FUZZ_SEED (a fixed default;
// another seed explores; tests/common/random_cases.h): 1-8 requests of 1-40 prompt tokens and
// 1-16 new ones, priorities, some with an eos, on pages of 1-16 keys in a pool from the smallest
// that holds the largest request (preemption and recomputation) to the automatic one, and
// schedulers of 1-8 sequences a step, prefill budgets of 8 tokens up and any length ratio. Every
// request's tokens are greedy (the argmax of the full forward up to near-ties), stop at eos or
// max_new_tokens, and the stats add up.
TEST(Gpt2EngineCpu, RandomWorkloadsGenerateGreedily) {
  using testing::Dice;
  const testing::FuzzRun run = testing::FuzzRun::from_env(testing::kDefaultFuzzSeed, 12);
  Dice d(run.seed);
  for (int i = 0; i < run.cases; ++i) {
    const Gpt2Weights w = sharp_weights(small_config(), run.case_seed(i));
    const int V = w.config.vocab_size;
    EngineOptions o = cpu_options();
    o.page_size = d.one_of({1, 3, 8, 16});
    o.scheduler.max_batch = d.between(1, 8);
    o.scheduler.max_prefill_tokens = d.one_of({8, 32, 8192});
    o.scheduler.length_ratio = d.one_of({1.0, 1.5, 2.0, 10.0});
    const std::vector<GenerationRequest> reqs = random_requests(d, V, run.case_seed(i));
    std::int64_t prompts = 0;
    for (const GenerationRequest& r : reqs) prompts += static_cast<std::int64_t>(r.prompt.size());
    const int need = pages_of_largest(reqs, o.page_size);
    o.num_pages = d.chance(0.5) ? 0 : need + d.between(0, need);
    std::ostringstream what;
    what << run.where(i) << ": page " << o.page_size << " pages " << o.num_pages << " max_batch "
         << o.scheduler.max_batch << " prefill " << o.scheduler.max_prefill_tokens << " ratio "
         << o.scheduler.length_ratio << ", " << describe_requests(reqs);
    SCOPED_TRACE(what.str());
    Gpt2Engine e(w, o);
    GenerationStats st;
    const auto out = e.generate(reqs, &st);
    ASSERT_EQ(out.size(), reqs.size());
    std::int64_t produced = 0;
    for (std::size_t r = 0; r < reqs.size(); ++r) {
      SCOPED_TRACE("request " + std::to_string(r));
      const std::vector<std::int32_t>& t = out[r];
      ASSERT_NO_FATAL_FAILURE(expect_stops_right(reqs[r], t));
      expect_greedy_consistent(e, reqs[r].prompt, t);
      produced += static_cast<std::int64_t>(t.size());
    }
    // Each prefill (a request's first, and each after a preemption, of its prompt and tokens so
    // far) produces a token; decode steps the others.
    EXPECT_EQ(st.decode_tokens, produced - static_cast<std::int64_t>(reqs.size()) - st.preemptions);
    if (st.preemptions == 0) {
      EXPECT_EQ(st.prefill_tokens, prompts);
    } else {
      EXPECT_GT(st.prefill_tokens, prompts);
    }
  }
}

TEST(Gpt2EngineCpu, EosEndsARequest) {
  const Gpt2Weights w = sharp_weights(small_config(), 10);
  Gpt2Engine e(w, cpu_options());
  GenerationRequest r;
  r.prompt = random_tokens(4, 101, 3);
  r.max_new_tokens = 16;
  const auto full = e.generate({r})[0];
  r.eos = full[5];
  const std::size_t first =
      static_cast<std::size_t>(std::find(full.begin(), full.end(), r.eos) - full.begin());
  const auto cut = e.generate({r})[0];
  ASSERT_EQ(cut.size(), first + 1);
  EXPECT_TRUE(std::equal(cut.begin(), cut.end(), full.begin()));
}

TEST(Gpt2EngineCpu, BadRequestsAreNamed) {
  const Gpt2Weights w = Gpt2Weights::random(small_config(), 11);
  Gpt2Engine e(w, cpu_options());
  GenerationRequest ok;
  ok.prompt = {1, 2, 3};
  ok.max_new_tokens = 4;
  auto with = [&](auto edit) {
    GenerationRequest r = ok;
    edit(r);
    return std::vector<GenerationRequest>{ok, r};
  };
  expect_invalid_argument([&] { e.generate(with([](auto& r) { r.prompt.clear(); })); },
                          "request 1: the prompt is empty");
  expect_invalid_argument([&] { e.generate(with([](auto& r) { r.prompt[2] = 101; })); },
                          "request 1: prompt[2] is 101, must be in [0, 101)");
  expect_invalid_argument([&] { e.generate(with([](auto& r) { r.max_new_tokens = 0; })); },
                          "request 1: max_new_tokens is 0");
  expect_invalid_argument(
      [&] { e.generate(with([](auto& r) { r.max_new_tokens = 79; })); },
      "(3) + max_new_tokens (79) - 1 is 81, more positions than n_positions = 80");
  expect_invalid_argument(
      [&] { e.generate(with([](auto& r) { r.sampling.temperature = -1e-9f; })); },
      "request 1: temperature is -9.99999972e-10, must be finite and >= 0");
  expect_invalid_argument(
      [&] { e.generate(with([](auto& r) { r.sampling.temperature = INFINITY; })); },
      "request 1: temperature is inf, must be finite");
  expect_invalid_argument([&] { e.generate(with([](auto& r) { r.sampling.top_p = 0.0f; })); },
                          "request 1: top_p is 0");
  expect_invalid_argument([&] { e.generate(with([](auto& r) { r.sampling.top_k = -1; })); },
                          "request 1: top_k is -1");
  expect_invalid_argument(
      [&] { e.generate(with([](auto& r) { r.sampling.temperature = -1.0f; })); },
      "request 1: temperature is -1");
  expect_invalid_argument([&] { e.generate(with([](auto& r) { r.eos = 101; })); },
                          "request 1: eos is 101");
  {  // the last token drawn is never fed: 3 + 78 - 1 = 80 positions fit
    GenerationRequest full = ok;
    full.max_new_tokens = 78;
    EXPECT_EQ(e.generate({full})[0].size(), 78u);
  }
  expect_invalid_argument([&] { e.forward_logits({}); }, "not 0");
  expect_invalid_argument([&] { e.forward_logits({5, -1}); }, "token 1 is -1");
  EngineOptions o = cpu_options();
  o.page_size = 0;
  expect_invalid_argument([&] { Gpt2Engine(w, o); }, "page_size is 0");
  o = cpu_options();
  o.num_threads = -1;  // was taken, and every call failed in attention_forward
  expect_invalid_argument([&] { Gpt2Engine(w, o); }, "num_threads is -1, must be >= 0");
  o = cpu_options();
  o.max_cuda_graphs = 0;  // checked on every backend: the same options must work on both
  expect_invalid_argument([&] { Gpt2Engine(w, o); }, "max_cuda_graphs is 0, must be >= 1");
  Gpt2Weights broken = w;
  broken.layers[1].c_fc_b.pop_back();
  expect_invalid_argument([&] { Gpt2Engine(broken, cpu_options()); }, "h.1.mlp.c_fc.bias has 511");
}

// Logits with a NaN (here every one, from a NaN final layernorm bias) end generate() with an error
// naming the request and position; before, the sampler's -1 was fed back as a token.
TEST(Gpt2EngineCpu, NonFiniteLogitsAreNamed) {
  Gpt2Weights w = Gpt2Weights::random(small_config(), 12);
  w.ln_f_b[5] = NAN;
  Gpt2Engine e(w, cpu_options());
  GenerationRequest r;
  r.prompt = {1, 2, 3};
  r.max_new_tokens = 4;
  for (float t : {0.0f, 1.0f}) {
    r.sampling.temperature = t;
    expect_invalid_argument(
        [&] {
          e.generate({r, r});
        },
        "request 0: its logits at position 3 are not finite");
  }
}

// The uniforms stay inside (0, 1) at both ends of the hash: 24 bits rounded the top one to 1.
TEST(Gpt2Sampling, UniformsStayInsideTheOpenInterval) {
  EXPECT_EQ(engine::uniform_of_bits(~0ull), 1.0f - 0x1.0p-24f);
  EXPECT_EQ(engine::uniform_of_bits(0), 0x1.0p-24f);
  EXPECT_LT(engine::uniform_of_bits(0xFFFFFC0000000000ull), engine::uniform_of_bits(~0ull));
  EXPECT_TRUE(std::isfinite(-std::log(-std::log(engine::uniform_of_bits(~0ull)))));
}

// Rows that cannot be drawn from are kBadLogits; -inf alone is a token never drawn; a tiny
// temperature draws among the maxima (logits / 1e-40 overflowed to +inf before: the lowest id).
TEST(Gpt2Sampling, BadRowsAndTinyTemperatures) {
  engine::SampleRow r;
  for (float t : {0.0f, 0.7f}) {
    r.temperature = t;
    SCOPED_TRACE("temperature " + std::to_string(t));
    std::vector<float> l = {1.0f, 2.0f, NAN, 0.5f};
    EXPECT_EQ(engine::sample_row_host(l.data(), 4, r), engine::kBadLogits);
    l[2] = INFINITY;
    EXPECT_EQ(engine::sample_row_host(l.data(), 4, r), engine::kBadLogits);
    l = {-INFINITY, -INFINITY, -INFINITY};
    EXPECT_EQ(engine::sample_row_host(l.data(), 3, r), engine::kBadLogits);
    l = {-INFINITY, -3.0f, -INFINITY};
    for (std::uint64_t s = 0; s < 20; ++s) {
      r.seed = s;
      EXPECT_EQ(engine::sample_row_host(l.data(), 3, r), 1);
    }
  }
  for (float t : {1e-40f, 1e-30f}) {
    r.temperature = t;
    std::vector<float> pos = {10.0f, 20.0f, 30.0f, -1.0f}, neg = {-5.0f, -3.0f, -4.0f};
    for (std::uint64_t s = 0; s < 50; ++s) {
      r.seed = s;
      EXPECT_EQ(engine::sample_row_host(pos.data(), 4, r), 2) << "temperature " << t;
      EXPECT_EQ(engine::sample_row_host(neg.data(), 3, r), 1) << "temperature " << t;
    }
  }
}

// sample_row_host against its definition.
TEST(Gpt2Sampling, HostSamplerFollowsItsDefinition) {
  std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
  engine::SampleRow r;
  EXPECT_EQ(engine::sample_row_host(logits.data(), 5, r), 1);  // greedy, ties to the lower id
  r.temperature = 1.0f;
  r.top_k = 1;
  for (std::uint64_t s = 0; s < 50; ++s) {  // top_k 1 keeps the tied pair {1, 3}
    r.seed = s;
    const int t = engine::sample_row_host(logits.data(), 5, r);
    EXPECT_TRUE(t == 1 || t == 3);
  }
  r.top_k = 0;
  r.top_p = 0.01f;  // only the top value
  for (std::uint64_t s = 0; s < 50; ++s) {
    r.seed = s;
    const int t = engine::sample_row_host(logits.data(), 5, r);
    EXPECT_TRUE(t == 1 || t == 3);
  }
  // Plain temperature sampling: frequencies follow the softmax.
  r.top_p = 1.0f;
  r.temperature = 2.0f;
  std::map<int, int> count;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    r.position = i;
    ++count[engine::sample_row_host(logits.data(), 5, r)];
  }
  double den = 0.0;
  for (float v : logits) den += std::exp(v / 2.0);
  for (int t = 0; t < 5; ++t) {
    const double p = std::exp(logits[t] / 2.0) / den;
    EXPECT_NEAR(count[t] / static_cast<double>(n), p, 4.0 * std::sqrt(p * (1 - p) / n) + 1e-3)
        << "token " << t;
  }
  // top_p 0.8 at temperature 1: probabilities 0.38 (1), 0.38 (3), 0.14 (4), 0.08, 0.02:
  // the tie reaches 0.76, adding token 4 0.90, so {1, 3, 4} are kept.
  r.temperature = 1.0f;
  r.top_p = 0.8f;
  std::map<int, int> kept;
  for (int i = 0; i < 2000; ++i) {
    r.position = i;
    ++kept[engine::sample_row_host(logits.data(), 5, r)];
  }
  EXPECT_EQ(kept.count(0) + kept.count(2), 0u);
  EXPECT_GT(kept[4], 0);
}

}  // namespace
}  // namespace gpuattn
