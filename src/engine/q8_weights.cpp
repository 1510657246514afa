// Weight-only int8 and int4 linears: the quantizers and layouts (q8_weights.h),
// Gpt2Weights::with_int8_linears / with_int4_linears, and the quantized output head
// (head_linear, round_trip_head, Gpt2Weights::with_quantized_head).
#include "engine/q8_weights.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "engine/model_ops.h"
#include "engine/parallel.h"
#include "gpuattn/gpt2.h"

namespace gpuattn {
namespace engine {

void check_quantized_shape(int K, int N, const char* what) {
  if (K <= 0 || K % kGpt2Q8Group != 0) {
    throw Error(ErrorCode::invalid_argument,
                std::string(what) + " linear weights: K (rows of W) is " + std::to_string(K) +
                    ", must be a positive multiple of " + std::to_string(kGpt2Q8Group));
  }
  if (N <= 0) {
    throw Error(ErrorCode::invalid_argument, std::string(what) +
                                                 " linear weights: N (columns of W) is " +
                                                 std::to_string(N) + ", must be positive");
  }
}

namespace {

// f(begin, end) over [0, n) split into contiguous ranges on up to 16 threads (one below 2^20
// elements of work, `elements`): the quantizer's results do not depend on the split.
template <typename F>
void parallel_ranges(int n, std::int64_t elements, const F& f) {
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int parts = elements < (std::int64_t{1} << 20) ? 1 : std::min({hw, n, 16});
  if (parts <= 1) {
    f(0, n);
    return;
  }
  const auto bound = [&](int i) {
    return static_cast<int>(static_cast<std::int64_t>(n) * i / parts);
  };
  run_parts(parts, [&](int i) { f(bound(i), bound(i + 1)); });  // engine/parallel.h
}

// quantize_q8 and quantize_q4: q in [-qmax, qmax]; `what` names the format in the errors.
void quantize_groups(const float* W, int K, int N, int qmax, const char* what, std::int8_t* q,
                     float* scales) {
  check_quantized_shape(K, N, what);
  // Groups of 64 rows over threads; each range notes its first non-finite weight (in row-major
  // order), and the first of all is named, as one thread going through W in order would.
  const int groups = K / kGpt2Q8Group;
  std::vector<std::int64_t> bad(static_cast<std::size_t>(groups), -1);
  parallel_ranges(groups, static_cast<std::int64_t>(K) * N, [&](int g0, int g1) {
    std::vector<float> amax(static_cast<std::size_t>(N));
    for (int g = g0; g < g1; ++g) {
      std::fill(amax.begin(), amax.end(), 0.0f);
      const int k0 = g * kGpt2Q8Group;
      for (int k = k0; k < k0 + kGpt2Q8Group; ++k) {
        const float* row = W + static_cast<std::int64_t>(k) * N;
        for (int n = 0; n < N; ++n) {
          if (!std::isfinite(row[n])) {
            bad[static_cast<std::size_t>(g)] = static_cast<std::int64_t>(k) * N + n;
            return;
          }
          amax[n] = std::max(amax[n], std::abs(row[n]));
        }
      }
      float* s = scales + static_cast<std::int64_t>(g) * N;
      const float fmax = static_cast<float>(qmax);
      for (int n = 0; n < N; ++n) {
        // Below qmax x FLT_MIN the scale would be subnormal and lose the rounding bound: a zero
        // group-column (its weights under 1.5e-36 become 0). Near FLT_MAX, amax / qmax rounded up
        // and q x scale overflowed: one float down keeps it finite.
        float sc = amax[n] < fmax * std::numeric_limits<float>::min() ? 0.0f : amax[n] / fmax;
        if (!std::isfinite(sc * fmax)) sc = std::nextafter(sc, 0.0f);
        s[n] = sc;
      }
      for (int k = k0; k < k0 + kGpt2Q8Group; ++k) {
        const float* row = W + static_cast<std::int64_t>(k) * N;
        std::int8_t* qr = q + static_cast<std::int64_t>(k) * N;
        for (int n = 0; n < N; ++n) {
          // lround's rounding (half away from zero), exact in double for |x| <= qmax + 0.5.
          const float x = s[n] > 0.0f ? row[n] / s[n] : 0.0f;
          const long v = static_cast<long>(static_cast<double>(x) + std::copysign(0.5, x));
          qr[n] = static_cast<std::int8_t>(std::min<long>(qmax, std::max<long>(-qmax, v)));
        }
      }
    }
  });
  for (const std::int64_t i : bad) {
    if (i >= 0) {
      throw Error(ErrorCode::invalid_argument, std::string(what) + " linear weights: W[" +
                                                   std::to_string(i / N) + "][" +
                                                   std::to_string(i % N) + "] is not finite");
    }
  }
}

}  // namespace

void quantize_q8(const float* W, int K, int N, std::int8_t* q, float* scales) {
  quantize_groups(W, K, N, 127, "int8", q, scales);
}

void quantize_q4(const float* W, int K, int N, std::int8_t* q, float* scales) {
  quantize_groups(W, K, N, 7, "int4", q, scales);
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
  // Tile nt's K x 16 bytes start at nt * K * 16: tiles over threads.
  parallel_ranges(tiles, static_cast<std::int64_t>(K) * N, [&](int t0, int t1) {
    for (int nt = t0; nt < t1; ++nt) {
      std::size_t o = static_cast<std::size_t>(nt) * static_cast<std::size_t>(K) * 16;
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
  });
}

std::size_t q8_mma_scales_offset(int K, int N) {
  return static_cast<std::size_t>(K) * static_cast<std::size_t>((N + 15) / 16 * 16);
}

std::size_t q8_mma_bytes(int K, int N) {
  return q8_mma_scales_offset(K, N) +
         static_cast<std::size_t>(K / kGpt2Q8Group) * static_cast<std::size_t>(N) * sizeof(float);
}

void shuffle_q4_mma(const std::int8_t* q, int K, int N, std::uint8_t* out) {
  if (K <= 0 || K % kGpt2Q8Group != 0) {
    throw Error(ErrorCode::invalid_argument,
                "int4 linear weights (mma order): K is " + std::to_string(K) +
                    ", must be a positive multiple of " + std::to_string(kGpt2Q8Group));
  }
  if (N <= 0) {
    throw Error(ErrorCode::invalid_argument, "int4 linear weights (mma order): N is " +
                                                 std::to_string(N) + ", must be positive");
  }
  const int tiles = (N + 15) / 16, groups = K / kGpt2Q8Group;
  // Tile nt's K x 8 bytes start at nt * K * 8: tiles over threads, each noting its first value
  // out of range (row-major order), the first of all named.
  std::vector<std::int64_t> bad(static_cast<std::size_t>(tiles), -1);
  parallel_ranges(tiles, static_cast<std::int64_t>(K) * N, [&](int t0, int t1) {
    for (int nt = t0; nt < t1; ++nt) {
      std::uint8_t* o = out + static_cast<std::size_t>(nt) * static_cast<std::size_t>(K) * 8;
      std::int64_t first = -1;
      for (int g = 0; g < groups; ++g) {
        for (int lane = 0; lane < 32; ++lane) {
          const int qg = lane / 4, t = lane % 4;
          for (int j = 0; j < 4; ++j) {  // k-step 4g + j: one 32-bit word, low byte first
            std::uint32_t word = 0;
            for (int nib = 0; nib < 8; ++nib) {
              const int r = nib % 4, e = nib / 4;
              const int n = nt * 16 + qg + (r % 2) * 8;
              const int k = (4 * g + j) * 16 + 2 * t + (r / 2) * 8 + e;
              int v = 0;
              if (n < N) {
                v = q[static_cast<std::size_t>(k) * N + n];
                if (v < -7 || v > 7) {
                  const std::int64_t i = static_cast<std::int64_t>(k) * N + n;
                  if (first < 0 || i < first) first = i;
                  v = 0;
                }
              }
              word |= static_cast<std::uint32_t>(v + 8) << (4 * nib);
            }
            for (int b = 0; b < 4; ++b) *o++ = static_cast<std::uint8_t>(word >> (8 * b));
          }
        }
      }
      bad[static_cast<std::size_t>(nt)] = first;
    }
  });
  std::int64_t first = -1;
  for (const std::int64_t i : bad) {
    if (i >= 0 && (first < 0 || i < first)) first = i;
  }
  if (first >= 0) {
    throw Error(ErrorCode::invalid_argument, "int4 linear weights (mma order): q[" +
                                                 std::to_string(first / N) + "][" +
                                                 std::to_string(first % N) + "] is " +
                                                 std::to_string(q[first]) + ", outside [-7, 7]");
  }
}

std::size_t q4_mma_scales_offset(int K, int N) {
  return static_cast<std::size_t>(K) * static_cast<std::size_t>((N + 15) / 16 * 16) / 2;
}

std::size_t q4_mma_bytes(int K, int N) {
  return q4_mma_scales_offset(K, N) +
         static_cast<std::size_t>(K / kGpt2Q8Group) * static_cast<std::size_t>(N) * sizeof(float);
}

void* ModelOps::upload_q8_weights(const float* W, int K, int N) {
  check_quantized_shape(K, N, "int8");  // before any size is computed from K and N
  std::vector<unsigned char> block(q8_bytes(K, N), 0);
  quantize_q8(W, K, N, reinterpret_cast<std::int8_t*>(block.data()),
              reinterpret_cast<float*>(block.data() + q8_scales_offset(K, N)));
  void* p = alloc(block.size());
  upload(p, block.data(), block.size());
  return p;
}

void pack_q4_rows(const std::int8_t* q, int K, int N, std::uint8_t* out) {
  if (K <= 0 || K % 2 != 0 || N <= 0) {
    throw Error(ErrorCode::invalid_argument, "int4 linear weights (rows packed): K is " +
                                                 std::to_string(K) + " and N " + std::to_string(N) +
                                                 ": K must be positive and even, N positive");
  }
  for (int k = 0; k < K; ++k) {
    const std::int8_t* qr = q + static_cast<std::size_t>(k) * N;
    for (int n = 0; n < N; ++n) {
      if (qr[n] < -7 || qr[n] > 7) {
        throw Error(ErrorCode::invalid_argument,
                    "int4 linear weights (rows packed): q[" + std::to_string(k) + "][" +
                        std::to_string(n) + "] is " + std::to_string(qr[n]) + ", outside [-7, 7]");
      }
    }
  }
  for (int j = 0; j < K / 2; ++j) {
    const std::int8_t* lo = q + static_cast<std::size_t>(2 * j) * N;
    const std::int8_t* hi = lo + N;
    std::uint8_t* o = out + static_cast<std::size_t>(j) * N;
    for (int n = 0; n < N; ++n) o[n] = static_cast<std::uint8_t>((lo[n] + 8) | ((hi[n] + 8) << 4));
  }
}

std::size_t q4_scales_offset(int K, int N) {
  return (static_cast<std::size_t>(K) / 2 * static_cast<std::size_t>(N) + 15) / 16 * 16;
}

std::size_t q4_bytes(int K, int N) {
  return q4_scales_offset(K, N) +
         static_cast<std::size_t>(K / kGpt2Q8Group) * static_cast<std::size_t>(N) * sizeof(float);
}

void* ModelOps::upload_q4_weights(const float* W, int K, int N) {
  check_quantized_shape(K, N, "int4");  // before any size is computed from K and N
  std::vector<unsigned char> block(q4_bytes(K, N), 0);
  {
    std::vector<std::int8_t> q(static_cast<std::size_t>(K) * static_cast<std::size_t>(N));
    quantize_q4(W, K, N, q.data(), reinterpret_cast<float*>(block.data() + q4_scales_offset(K, N)));
    pack_q4_rows(q.data(), K, N, block.data());
  }
  void* p = alloc(block.size());
  upload(p, block.data(), block.size());
  return p;
}

void ModelOps::linear_q4(const void*, const void*, const void*, const void*, void*, int, int, int,
                         bool) {
  throw Error(ErrorCode::not_supported, std::string("gpuattn engine: the ") + to_string(device()) +
                                            " backend has no int4 linears (LinearWeights::int4)");
}

void ModelOps::linear_q8(const void*, const void*, const void*, const void*, void*, int, int, int,
                         bool) {
  throw Error(ErrorCode::not_supported, std::string("gpuattn engine: the ") + to_string(device()) +
                                            " backend has no int8 linears (LinearWeights::int8)");
}

void* ModelOps::upload_quantized_head(const float* wte, int V, int C, LinearWeights w) {
  if (w != LinearWeights::int8 && w != LinearWeights::int4) {
    throw Error(ErrorCode::invalid_argument,
                "gpuattn engine: upload_quantized_head with LinearWeights " +
                    std::to_string(static_cast<int>(w)) + ": int8 or int4");
  }
  const std::vector<float> W = head_linear(wte, V, C);
  const int Vp = padded_vocab(V);
  return w == LinearWeights::int4 ? upload_q4_weights(W.data(), C, Vp)
                                  : upload_q8_weights(W.data(), C, Vp);
}

void ModelOps::lm_head_quantized(const void* x, const void* /*head*/, const void* head_q,
                                 LinearWeights w, float* logits, int rows, int C, int V, int ld) {
  const int Vp = padded_vocab(V);
  if (dtype() != DType::f32 || ld != Vp || (w != LinearWeights::int8 && w != LinearWeights::int4)) {
    throw Error(ErrorCode::invalid_argument,
                std::string("gpuattn engine: the quantized output head on ") + to_string(device()) +
                    " in " + to_string(dtype()) + " with logits pitch " + std::to_string(ld) +
                    " and LinearWeights " + std::to_string(static_cast<int>(w)) +
                    ": the default takes fp32 activations, a pitch of padded_vocab(V) = " +
                    std::to_string(Vp) + ", int8 or int4");
  }
  if (w == LinearWeights::int4) {
    linear_q4(x, head_q, nullptr, nullptr, logits, rows, C, Vp, false);
  } else {
    linear_q8(x, head_q, nullptr, nullptr, logits, rows, C, Vp, false);
  }
}

}  // namespace engine

namespace {

// W [K, N] replaced by its dequantized int8 (bits 8) or int4 (4) values, q * scale (fp32), as the
// engine computes.
void round_trip(std::vector<float>& W, int K, int N, int bits, const std::string& name) {
  if (W.size() != static_cast<std::size_t>(K) * static_cast<std::size_t>(N)) {
    throw Error(ErrorCode::invalid_argument, "weights " + name + " has " +
                                                 std::to_string(W.size()) +
                                                 " values, the config needs " +
                                                 std::to_string(static_cast<std::int64_t>(K) * N));
  }
  std::vector<std::int8_t> q(W.size());
  std::vector<float> s(static_cast<std::size_t>(K / kGpt2Q8Group) * static_cast<std::size_t>(N));
  if (bits == 4) {
    engine::quantize_q4(W.data(), K, N, q.data(), s.data());
  } else {
    engine::quantize_q8(W.data(), K, N, q.data(), s.data());
  }
  for (int k = 0; k < K; ++k) {
    for (int n = 0; n < N; ++n) {
      const std::size_t i = static_cast<std::size_t>(k) * N + n;
      W[i] = static_cast<float>(q[i]) * s[static_cast<std::size_t>(k / kGpt2Q8Group) * N + n];
    }
  }
}

Gpt2Weights quantized_linears(const Gpt2Weights& from, int bits) {
  Gpt2Weights w = from;
  const int C = w.config.n_embd;
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    Gpt2Weights::Layer& L = w.layers[l];
    const std::string h = "h." + std::to_string(l) + ".";
    round_trip(L.c_attn_w, C, 3 * C, bits, h + "attn.c_attn.weight");
    round_trip(L.attn_proj_w, C, C, bits, h + "attn.c_proj.weight");
    round_trip(L.c_fc_w, C, 4 * C, bits, h + "mlp.c_fc.weight");
    round_trip(L.mlp_proj_w, 4 * C, C, bits, h + "mlp.c_proj.weight");
  }
  return w;
}

}  // namespace

namespace engine {

std::vector<float> head_linear(const float* wte, int V, int C) {
  if (V <= 0 || C <= 0) {
    throw Error(ErrorCode::invalid_argument, "the output head: V is " + std::to_string(V) +
                                                 " and C " + std::to_string(C) +
                                                 ", both must be positive");
  }
  const std::size_t Vp = static_cast<std::size_t>(padded_vocab(V));
  std::vector<float> W(static_cast<std::size_t>(C) * Vp, 0.0f);
  for (int v = 0; v < V; ++v) {
    const float* row = wte + static_cast<std::size_t>(v) * C;
    for (int c = 0; c < C; ++c) {
      if (!std::isfinite(row[c])) {
        throw Error(ErrorCode::invalid_argument,
                    "the output head: wte[" + std::to_string(v) + "][" + std::to_string(c) +
                        "] (token " + std::to_string(v) + ", feature " + std::to_string(c) +
                        ") is " + std::to_string(row[c]) + ", not finite");
      }
      W[static_cast<std::size_t>(c) * Vp + v] = row[c];
    }
  }
  return W;
}

void round_trip_head(std::vector<float>& wte, int V, int C, LinearWeights w) {
  if (w == LinearWeights::dense) return;
  if (wte.size() != static_cast<std::size_t>(V) * static_cast<std::size_t>(C)) {
    throw Error(ErrorCode::invalid_argument, "the output head: wte has " +
                                                 std::to_string(wte.size()) + " values, V x C is " +
                                                 std::to_string(static_cast<std::int64_t>(V) * C));
  }
  std::vector<float> W = head_linear(wte.data(), V, C);
  const int Vp = padded_vocab(V);
  round_trip(W, C, Vp, w == LinearWeights::int4 ? 4 : 8, "wte (the output head, transposed)");
  for (int v = 0; v < V; ++v) {
    for (int c = 0; c < C; ++c) {
      wte[static_cast<std::size_t>(v) * C + c] = W[static_cast<std::size_t>(c) * Vp + v];
    }
  }
}

}  // namespace engine

Gpt2Weights Gpt2Weights::with_quantized_head(LinearWeights head) const {
  if (head != LinearWeights::dense && head != LinearWeights::int8 && head != LinearWeights::int4) {
    throw Error(ErrorCode::invalid_argument, "Gpt2Weights::with_quantized_head: head is " +
                                                 std::to_string(static_cast<int>(head)) +
                                                 ", must be LinearWeights::dense, "
                                                 "int8 or int4");
  }
  Gpt2Weights w = *this;
  engine::round_trip_head(w.wte, w.config.vocab_size, w.config.n_embd, head);
  return w;
}

Gpt2Weights Gpt2Weights::with_int8_linears() const {
  return quantized_linears(*this, 8);
}

Gpt2Weights Gpt2Weights::with_int4_linears() const {
  return quantized_linears(*this, 4);
}

}  // namespace gpuattn
