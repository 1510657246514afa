// Weight-only int8 linears: the quantizer (q8_weights.h) and Gpt2Weights::with_int8_linears.
#include "engine/q8_weights.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/model_ops.h"
#include "gpuattn/gpt2.h"

namespace gpuattn {
namespace engine {

void quantize_q8(const float* W, int K, int N, std::int8_t* q, float* scales) {
  if (K <= 0 || K % kGpt2Q8Group != 0) {
    throw Error(ErrorCode::invalid_argument,
                "int8 linear weights: K (rows of W) is " + std::to_string(K) +
                    ", must be a positive multiple of " + std::to_string(kGpt2Q8Group));
  }
  if (N <= 0) {
    throw Error(ErrorCode::invalid_argument, "int8 linear weights: N (columns of W) is " +
                                                 std::to_string(N) + ", must be positive");
  }
  std::vector<float> amax(static_cast<std::size_t>(N));
  for (int g = 0; g < K / kGpt2Q8Group; ++g) {
    std::fill(amax.begin(), amax.end(), 0.0f);
    const int k0 = g * kGpt2Q8Group;
    for (int k = k0; k < k0 + kGpt2Q8Group; ++k) {
      const float* row = W + static_cast<std::int64_t>(k) * N;
      for (int n = 0; n < N; ++n) {
        if (!std::isfinite(row[n])) {
          throw Error(ErrorCode::invalid_argument, "int8 linear weights: W[" + std::to_string(k) +
                                                       "][" + std::to_string(n) +
                                                       "] is not finite");
        }
        amax[n] = std::max(amax[n], std::abs(row[n]));
      }
    }
    float* s = scales + static_cast<std::int64_t>(g) * N;
    for (int n = 0; n < N; ++n) s[n] = amax[n] / 127.0f;
    for (int k = k0; k < k0 + kGpt2Q8Group; ++k) {
      const float* row = W + static_cast<std::int64_t>(k) * N;
      std::int8_t* qr = q + static_cast<std::int64_t>(k) * N;
      for (int n = 0; n < N; ++n) {
        const long v = s[n] > 0.0f ? std::lround(row[n] / s[n]) : 0L;
        qr[n] = static_cast<std::int8_t>(std::min(127L, std::max(-127L, v)));
      }
    }
  }
}

std::size_t q8_scales_offset(int K, int N) {
  return (static_cast<std::size_t>(K) * static_cast<std::size_t>(N) + 15) / 16 * 16;
}

std::size_t q8_bytes(int K, int N) {
  return q8_scales_offset(K, N) +
         static_cast<std::size_t>(K / kGpt2Q8Group) * static_cast<std::size_t>(N) * sizeof(float);
}

void shuffle_q8_mma(const std::int8_t* q, int K, int N, std::int8_t* out) {
  if (K <= 0 || K % 32 != 0) {
    throw Error(ErrorCode::invalid_argument, "int8 linear weights (mma order): K is " +
                                                 std::to_string(K) +
                                                 ", must be a positive multiple of 32");
  }
  if (N <= 0) {
    throw Error(ErrorCode::invalid_argument, "int8 linear weights (mma order): N is " +
                                                 std::to_string(N) + ", must be positive");
  }
  const int tiles = (N + 15) / 16;
  std::size_t o = 0;
  for (int nt = 0; nt < tiles; ++nt) {
    for (int s2 = 0; s2 < K / 32; ++s2) {
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        for (int b = 0; b < 16; ++b) {
          const int step = 2 * s2 + b / 8, r = (b % 8) / 2;
          const int n = nt * 16 + g + (r % 2) * 8;
          const int k = step * 16 + 2 * t + (r / 2) * 8 + b % 2;
          out[o++] = n < N ? q[static_cast<std::size_t>(k) * N + n] : std::int8_t{0};
        }
      }
    }
  }
}

std::size_t q8_mma_scales_offset(int K, int N) {
  return static_cast<std::size_t>(K) * static_cast<std::size_t>((N + 15) / 16 * 16);
}

std::size_t q8_mma_bytes(int K, int N) {
  return q8_mma_scales_offset(K, N) +
         static_cast<std::size_t>(K / kGpt2Q8Group) * static_cast<std::size_t>(N) * sizeof(float);
}

void* ModelOps::upload_q8_weights(const float* W, int K, int N) {
  std::vector<unsigned char> block(q8_bytes(K, N), 0);
  quantize_q8(W, K, N, reinterpret_cast<std::int8_t*>(block.data()),
              reinterpret_cast<float*>(block.data() + q8_scales_offset(K, N)));
  void* p = alloc(block.size());
  upload(p, block.data(), block.size());
  return p;
}

void ModelOps::linear_q8(const void*, const void*, const void*, const void*, void*, int, int, int,
                         bool) {
  throw Error(ErrorCode::not_supported, std::string("gpuattn engine: the ") + to_string(device()) +
                                            " backend has no int8 linears (LinearWeights::int8)");
}

}  // namespace engine

namespace {

// W [K, N] replaced by its dequantized int8 values, q * scale (fp32), as the engine computes.
void round_trip(std::vector<float>& W, int K, int N, const std::string& name) {
  if (W.size() != static_cast<std::size_t>(K) * static_cast<std::size_t>(N)) {
    throw Error(ErrorCode::invalid_argument, "weights " + name + " has " +
                                                 std::to_string(W.size()) +
                                                 " values, the config needs " +
                                                 std::to_string(static_cast<std::int64_t>(K) * N));
  }
  std::vector<std::int8_t> q(W.size());
  std::vector<float> s(static_cast<std::size_t>(K / kGpt2Q8Group) * static_cast<std::size_t>(N));
  engine::quantize_q8(W.data(), K, N, q.data(), s.data());
  for (int k = 0; k < K; ++k) {
    for (int n = 0; n < N; ++n) {
      const std::size_t i = static_cast<std::size_t>(k) * N + n;
      W[i] = static_cast<float>(q[i]) * s[static_cast<std::size_t>(k / kGpt2Q8Group) * N + n];
    }
  }
}

}  // namespace

Gpt2Weights Gpt2Weights::with_int8_linears() const {
  Gpt2Weights w = *this;
  const int C = config.n_embd;
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    Layer& L = w.layers[l];
    const std::string h = "h." + std::to_string(l) + ".";
    round_trip(L.c_attn_w, C, 3 * C, h + "attn.c_attn.weight");
    round_trip(L.attn_proj_w, C, C, h + "attn.c_proj.weight");
    round_trip(L.c_fc_w, C, 4 * C, h + "mlp.c_fc.weight");
    round_trip(L.mlp_proj_w, 4 * C, C, h + "mlp.c_proj.weight");
  }
  return w;
}

}  // namespace gpuattn
