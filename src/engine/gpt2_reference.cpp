// The fp64 GPT-2 forward of one sequence, in plain loops: the oracle of the engine's tests.
#include <cmath>
#include <string>

#include "gpuattn/gpt2.h"
#include "gpuattn/numeric.h"

namespace gpuattn {
namespace {

using Mat = std::vector<double>;  // row-major [T, n]

Mat layernorm(const Mat& x, int T, int C, const std::vector<float>& w, const std::vector<float>& b,
              double eps) {
  Mat y(x.size());
  for (int t = 0; t < T; ++t) {
    const double* xr = &x[static_cast<std::size_t>(t) * C];
    double mean = 0.0, var = 0.0;
    for (int c = 0; c < C; ++c) mean += xr[c];
    mean /= C;
    for (int c = 0; c < C; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    var /= C;
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int c = 0; c < C; ++c)
      y[static_cast<std::size_t>(t) * C + c] = (xr[c] - mean) * rstd * w[c] + b[c];
  }
  return y;
}

// y[T, N] = x[T, K] W[K, N] + b
Mat linear(const Mat& x, int T, int K, int N, const std::vector<float>& W,
           const std::vector<float>& b) {
  Mat y(static_cast<std::size_t>(T) * N);
  for (int t = 0; t < T; ++t) {
    for (int n = 0; n < N; ++n) {
      double s = b[n];
      for (int k = 0; k < K; ++k)
        s += x[static_cast<std::size_t>(t) * K + k] * W[static_cast<std::size_t>(k) * N + n];
      y[static_cast<std::size_t>(t) * N + n] = s;
    }
  }
  return y;
}

}  // namespace

std::vector<double> gpt2_reference_logits(const Gpt2Weights& w,
                                          const std::vector<std::int32_t>& tokens, KvCache kv,
                                          int prompt) {
  const Gpt2Config& cfg = w.config;
  cfg.validate();
  w.check_shapes("gpuattn::gpt2_reference_logits");  // a short tensor was read past its end
  const int T = static_cast<int>(tokens.size()), C = cfg.n_embd, H = cfg.n_head, D = cfg.head_dim(),
            V = cfg.vocab_size;
  if (T <= 0 || T > cfg.n_positions) {
    throw Error(ErrorCode::invalid_argument,
                "gpuattn::gpt2_reference_logits: " + std::to_string(T) +
                    " tokens, must be 1 to n_positions = " + std::to_string(cfg.n_positions));
  }
  if (kv != KvCache::model && kv != KvCache::e4m3) {
    throw Error(ErrorCode::invalid_argument, "gpuattn::gpt2_reference_logits: kv is " +
                                                 std::to_string(static_cast<int>(kv)) +
                                                 ", must be KvCache::model or e4m3");
  }
  if (prompt < 0 || prompt > T) {
    throw Error(ErrorCode::invalid_argument, "gpuattn::gpt2_reference_logits: prompt is " +
                                                 std::to_string(prompt) + ", must be 0 to " +
                                                 std::to_string(T) + " (the tokens)");
  }
  if (prompt == 0) prompt = T;  // one prompt, as forward_logits reads 0 (it read as no prompt)
  Mat x(static_cast<std::size_t>(T) * C);
  for (int t = 0; t < T; ++t) {
    if (tokens[t] < 0 || tokens[t] >= V) {
      throw Error(ErrorCode::invalid_argument, "gpuattn::gpt2_reference_logits: token " +
                                                   std::to_string(t) + " is " +
                                                   std::to_string(tokens[t]));
    }
    for (int c = 0; c < C; ++c) {
      x[static_cast<std::size_t>(t) * C + c] =
          static_cast<double>(w.wte[static_cast<std::size_t>(tokens[t]) * C + c]) +
          w.wpe[static_cast<std::size_t>(t) * C + c];
    }
  }
  const double eps = cfg.layer_norm_epsilon;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  for (const Gpt2Weights::Layer& L : w.layers) {
    const Mat qkv =
        linear(layernorm(x, T, C, L.ln_1_w, L.ln_1_b, eps), T, C, 3 * C, L.c_attn_w, L.c_attn_b);
    Mat cached;  // the keys and values as an 8-bit cache holds them (kv e4m3)
    if (kv == KvCache::e4m3) {
      cached = qkv;
      for (int t = 0; t < T; ++t) {
        for (int c = C; c < 3 * C; ++c) {
          double& e = cached[static_cast<std::size_t>(t) * 3 * C + c];
          e = e4m3_to_float(float_to_e4m3(static_cast<float>(e)));
        }
      }
    }
    Mat att(static_cast<std::size_t>(T) * C, 0.0);
    std::vector<double> p(static_cast<std::size_t>(T));
    for (int h = 0; h < H; ++h) {
      for (int i = 0; i < T; ++i) {
        const double* q = &qkv[static_cast<std::size_t>(i) * 3 * C + h * D];
        const Mat& kvs = kv == KvCache::e4m3 && i >= prompt ? cached : qkv;
        double mx = -INFINITY;
        for (int j = 0; j <= i; ++j) {
          const double* k = &kvs[static_cast<std::size_t>(j) * 3 * C + C + h * D];
          double s = 0.0;
          for (int d = 0; d < D; ++d) s += q[d] * k[d];
          p[j] = s * scale;
          mx = std::max(mx, p[j]);
        }
        double den = 0.0;
        for (int j = 0; j <= i; ++j) den += (p[j] = std::exp(p[j] - mx));
        double* o = &att[static_cast<std::size_t>(i) * C + h * D];
        for (int j = 0; j <= i; ++j) {
          const double* v = &kvs[static_cast<std::size_t>(j) * 3 * C + 2 * C + h * D];
          for (int d = 0; d < D; ++d) o[d] += p[j] / den * v[d];
        }
      }
    }
    const Mat proj = linear(att, T, C, C, L.attn_proj_w, L.attn_proj_b);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
    Mat fc = linear(layernorm(x, T, C, L.ln_2_w, L.ln_2_b, eps), T, C, 4 * C, L.c_fc_w, L.c_fc_b);
    for (double& v : fc) {
      v = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    }
    const Mat mlp = linear(fc, T, 4 * C, C, L.mlp_proj_w, L.mlp_proj_b);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += mlp[i];
  }
  const Mat xf = layernorm(x, T, C, w.ln_f_w, w.ln_f_b, eps);
  std::vector<double> logits(static_cast<std::size_t>(T) * V);
  for (int t = 0; t < T; ++t) {
    for (int v = 0; v < V; ++v) {
      double s = 0.0;
      for (int c = 0; c < C; ++c)
        s += xf[static_cast<std::size_t>(t) * C + c] * w.wte[static_cast<std::size_t>(v) * C + c];
      logits[static_cast<std::size_t>(t) * V + v] = s;
    }
  }
  return logits;
}

}  // namespace gpuattn
