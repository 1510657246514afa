// Weight-only int8 and int4 linears (LinearWeights::int8 / int4): the quantizers' bounds, the CUDA
// fragment orders, the CPU backend's int8 linear against fp64 on the dequantized weights, and the
// engine on int8 / int4 linears against the fp64 reference of the model it runs
// (Gpt2Weights::with_int8_linears / with_int4_linears), the quantized output head
// (EngineOptions::head_weights, Gpt2Weights::with_quantized_head) and the FP8 E4M3 KV cache
// (EngineOptions::kv_cache).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/expect_error.h"
#include "engine/gpt2_test_util.h"
#include "engine/model_ops.h"
#include "engine/q8_weights.h"
#include "gpuattn/gpt2.h"
#include "gpuattn/numeric.h"

namespace gpuattn {
namespace {

using testing::expect_invalid_argument;

EngineOptions int8_cpu_options(LinearWeights lw = LinearWeights::int8) {
  EngineOptions o = cpu_options();
  o.num_threads = 3;
  o.linear_weights = lw;
  return o;
}

std::vector<float> normal(std::size_t n, float scale, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

// The quantizer of `bits` (8: quantize_q8, limit 127; 4: quantize_q4, limit 7) on a 192 x 37 W
// with a zero group and a +-3 outlier pair: every scale the group-column's absmax / limit, every
// q within the limit and half a scale of its weight, every level used (int4), the zero group all
// zeros, the outliers at +-limit; and its errors, naming the format, the bad K or N, and the first
// non-finite weight.
void expect_quantizer_bounds(int bits) {
  const int K = 192, N = 37, qmax = bits == 4 ? 7 : 127;
  const std::string what = bits == 4 ? "int4" : "int8";
  const auto quantize = [&](const float* W, int k, int n, std::int8_t* q, float* sc) {
    if (bits == 4) {
      engine::quantize_q4(W, k, n, q, sc);
    } else {
      engine::quantize_q8(W, k, n, q, sc);
    }
  };
  std::vector<float> W = normal(static_cast<std::size_t>(K) * N, 0.05f, bits == 4 ? 11 : 1);
  for (int k = 64; k < 128; ++k) W[static_cast<std::size_t>(k) * N + 5] = 0.0f;  // a zero group
  W[static_cast<std::size_t>(130) * N + 9] = 3.0f;                               // an outlier
  W[static_cast<std::size_t>(131) * N + 9] = -3.0f;                              // its negative
  std::vector<std::int8_t> q(W.size(), 99);
  std::vector<float> s(static_cast<std::size_t>(K / kGpt2Q8Group) * N, -1.0f);
  quantize(W.data(), K, N, q.data(), s.data());
  std::vector<int> used(2 * qmax + 1, 0);
  for (int g = 0; g < K / kGpt2Q8Group; ++g) {
    for (int n = 0; n < N; ++n) {
      float amax = 0.0f;
      for (int k = g * kGpt2Q8Group; k < (g + 1) * kGpt2Q8Group; ++k) {
        amax = std::max(amax, std::abs(W[static_cast<std::size_t>(k) * N + n]));
      }
      const float sc = s[static_cast<std::size_t>(g) * N + n];
      ASSERT_EQ(sc, amax / static_cast<float>(qmax)) << what << " group " << g << " column " << n;
      for (int k = g * kGpt2Q8Group; k < (g + 1) * kGpt2Q8Group; ++k) {
        const std::size_t i = static_cast<std::size_t>(k) * N + n;
        ASSERT_LE(std::abs(static_cast<int>(q[i])), qmax);
        ASSERT_LE(std::abs(static_cast<double>(q[i]) * sc - W[i]), 0.5 * sc * (1 + 1e-5) + 1e-12)
            << what << " W[" << k << "][" << n << "]";
        ++used[static_cast<std::size_t>(q[i] + qmax)];
      }
    }
  }
  if (bits == 4) {
    for (int v = 0; v <= 2 * qmax; ++v) EXPECT_GT(used[v], 0) << "no weight quantized to " << v - 7;
  }
  EXPECT_EQ(s[1 * N + 5], 0.0f);  // the zero group: scale 0, every q 0
  for (int k = 64; k < 128; ++k) EXPECT_EQ(q[static_cast<std::size_t>(k) * N + 5], 0);
  EXPECT_EQ(q[static_cast<std::size_t>(130) * N + 9], qmax);  // the outlier is the group's max
  EXPECT_EQ(q[static_cast<std::size_t>(131) * N + 9], -qmax);

  expect_invalid_argument([&] { quantize(W.data(), 100, N, q.data(), s.data()); },
                          what + " linear weights: K (rows of W) is 100");
  expect_invalid_argument([&] { quantize(W.data(), 0, N, q.data(), s.data()); },
                          what + " linear weights: K (rows of W) is 0");
  expect_invalid_argument([&] { quantize(W.data(), K, -3, q.data(), s.data()); },
                          what + " linear weights: N (columns of W) is -3");
  W[static_cast<std::size_t>(150) * N + 36] = -std::numeric_limits<float>::infinity();
  W[static_cast<std::size_t>(70) * N + 3] = std::numeric_limits<float>::quiet_NaN();
  expect_invalid_argument([&] { quantize(W.data(), K, N, q.data(), s.data()); },
                          what + " linear weights: W[70][3] is not finite");
}

TEST(Gpt2Q8, QuantizerBoundsEveryWeight) {
  expect_quantizer_bounds(8);
}

// The scale at float's ends: a group-column whose max is FLT_MAX keeps q x scale finite (127 x
// (FLT_MAX / 127) rounded up overflowed: a dequantized inf); one whose max is under 127 x FLT_MIN
// is a zero group (its scale was subnormal: 1e-44 gave scale 0 and 190 x denorm_min a rounding
// error far past scale / 2).
TEST(Gpt2Q8, ScalesAtFloatsEnds) {
  const int K = 64, N = 3;
  std::vector<float> W(static_cast<std::size_t>(K) * N, 0.0f);
  W[0] = std::numeric_limits<float>::max();
  W[3] = -1e38f;
  W[1] = 1e-44f;
  W[4] = 190 * std::numeric_limits<float>::denorm_min();
  W[2] = 1e-30f;  // a normal scale: kept
  for (const int bits : {8, 4}) {
    std::vector<std::int8_t> q(W.size());
    std::vector<float> sc(N);
    if (bits == 8) {
      engine::quantize_q8(W.data(), K, N, q.data(), sc.data());
    } else {
      engine::quantize_q4(W.data(), K, N, q.data(), sc.data());
    }
    const float qmax = bits == 8 ? 127.0f : 7.0f;
    EXPECT_TRUE(std::isfinite(q[0] * sc[0])) << bits << " bits: q " << int(q[0]) << " s " << sc[0];
    EXPECT_EQ(q[0], static_cast<std::int8_t>(qmax));
    EXPECT_LE(std::abs(static_cast<double>(q[3]) * sc[0] - W[3]), 0.5 * sc[0] * (1 + 1e-5));
    EXPECT_EQ(sc[1], 0.0f) << bits << " bits";
    EXPECT_EQ(q[1], 0);
    EXPECT_EQ(q[4], 0);
    EXPECT_EQ(sc[2], 1e-30f / qmax);
  }
}

// Past 2^20 weights the quantizer and the fragment order run on several threads (where there are
// cores): every weight must still follow the one-thread rule (q = lround(W / s) within +-127, s =
// the group's absmax / 127, ties away from zero), every byte land where the fragment order puts
// it, and of two non-finite weights in different threads' ranges the first in row-major order is
// the one named.
TEST(Gpt2Q8, LargeMatricesFollowTheRuleOnEveryThread) {
  const int K = 1024, N = 1100;  // 1,126,400 weights, 16 groups, 69 tiles (the last partial)
  std::vector<float> W = normal(static_cast<std::size_t>(K) * N, 0.05f, 9);
  // Column 7, group 3: absmax 127 / 128 makes s = 1 / 128 exactly, and W = +-2.5 / 128 ties.
  W[static_cast<std::size_t>(192) * N + 7] = 127.0f / 128.0f;
  W[static_cast<std::size_t>(193) * N + 7] = 2.5f / 128.0f;
  W[static_cast<std::size_t>(194) * N + 7] = -2.5f / 128.0f;
  for (int k = 195; k < 256; ++k) W[static_cast<std::size_t>(k) * N + 7] = 0.001f;
  std::vector<std::int8_t> q(W.size(), 99);
  std::vector<float> s(static_cast<std::size_t>(K / kGpt2Q8Group) * N, -1.0f);
  engine::quantize_q8(W.data(), K, N, q.data(), s.data());
  EXPECT_EQ(s[3 * N + 7], 1.0f / 128.0f);
  EXPECT_EQ(q[static_cast<std::size_t>(193) * N + 7], 3);
  EXPECT_EQ(q[static_cast<std::size_t>(194) * N + 7], -3);
  for (int g = 0; g < K / kGpt2Q8Group; ++g) {
    for (int n = 0; n < N; ++n) {
      float amax = 0.0f;
      for (int k = g * kGpt2Q8Group; k < (g + 1) * kGpt2Q8Group; ++k) {
        amax = std::max(amax, std::abs(W[static_cast<std::size_t>(k) * N + n]));
      }
      const float sc = amax / 127.0f;
      ASSERT_EQ(s[static_cast<std::size_t>(g) * N + n], sc) << "group " << g << " column " << n;
      for (int k = g * kGpt2Q8Group; k < (g + 1) * kGpt2Q8Group; ++k) {
        const std::size_t i = static_cast<std::size_t>(k) * N + n;
        const long want = sc > 0.0f ? std::lround(W[i] / sc) : 0L;
        ASSERT_EQ(q[i], std::min(127L, std::max(-127L, want))) << "W[" << k << "][" << n << "]";
      }
    }
  }
  std::vector<std::int8_t> out(engine::q8_mma_scales_offset(K, N), std::int8_t{99});
  engine::shuffle_q8_mma(q.data(), K, N, out.data());
  for (int nt = 0; nt < (N + 15) / 16; ++nt) {
    for (int step = 0; step < K / 16; ++step) {
      for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < 8; ++i) {
          const int n = nt * 16 + lane / 4 + 8 * ((i / 2) % 2);
          const int k = step * 16 + 2 * (lane % 4) + i % 2 + 8 * (i / 4);
          const std::size_t at =
              ((static_cast<std::size_t>(nt) * (K / 32) + step / 2) * 32 + lane) * 16 +
              (step % 2) * 8 + i;
          ASSERT_EQ(out[at], n < N ? q[static_cast<std::size_t>(k) * N + n] : 0)
              << "tile " << nt << " step " << step << " lane " << lane << " a" << i;
        }
      }
    }
  }
  // Groups 6 and 9: the two halves' ranges on two threads, different ones on more.
  W[static_cast<std::size_t>(600) * N + 5] = std::numeric_limits<float>::infinity();
  W[static_cast<std::size_t>(400) * N + 1000] = std::numeric_limits<float>::quiet_NaN();
  W[static_cast<std::size_t>(400) * N + 1001] = std::numeric_limits<float>::quiet_NaN();
  expect_invalid_argument([&] { engine::quantize_q8(W.data(), K, N, q.data(), s.data()); },
                          "W[400][1000] is not finite");
}

// The CUDA backend's order of q for mma.m16n8k16 (shuffle_q8_mma), read back as the PTX ISA
// lays out the A fragment ("Matrix Fragments for mma.m16n8k16 with floating point type"): lane
// (groupID g = lane / 4, threadID_in_group t = lane % 4) holds a0..a7, a_i at row
// g + 8 ((i / 2) % 2) and column 2t + i % 2 + 8 (i / 4) of the 16 x 16 A tile, two a register.
// A is W^T: its row is the column of W in the 16-column tile, its column the row of W in the
// 16-row k-step. Every byte of the block is checked, the zero padding past N included.
TEST(Gpt2Q8, MmaOrderIsTheFragmentLayout) {
  for (const auto [K, N] : {std::pair{32, 16}, std::pair{128, 40}, std::pair{96, 8}}) {
    std::vector<std::int8_t> q(static_cast<std::size_t>(K) * N);
    std::mt19937 rng(K * 31 + N);
    std::uniform_int_distribution<int> u(-127, 127);
    for (auto& v : q) v = static_cast<std::int8_t>(u(rng));
    const int tiles = (N + 15) / 16;
    ASSERT_EQ(engine::q8_mma_scales_offset(K, N), static_cast<std::size_t>(K) * tiles * 16);
    EXPECT_EQ(engine::q8_mma_bytes(K, N),
              engine::q8_mma_scales_offset(K, N) + static_cast<std::size_t>(K / 64) * N * 4);
    std::vector<std::int8_t> out(engine::q8_mma_scales_offset(K, N), std::int8_t{99});
    engine::shuffle_q8_mma(q.data(), K, N, out.data());
    int checked = 0;
    for (int nt = 0; nt < tiles; ++nt) {
      for (int step = 0; step < K / 16; ++step) {
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane / 4, t = lane % 4;
          for (int i = 0; i < 8; ++i) {
            const int row = g + 8 * ((i / 2) % 2), col = 2 * t + i % 2 + 8 * (i / 4);
            const int n = nt * 16 + row, k = step * 16 + col;
            const std::size_t at =
                ((static_cast<std::size_t>(nt) * (K / 32) + step / 2) * 32 + lane) * 16 +
                (step % 2) * 8 + i;
            const int want = n < N ? q[static_cast<std::size_t>(k) * N + n] : 0;
            ASSERT_EQ(out[at], want) << "K " << K << " N " << N << " tile " << nt << " step "
                                     << step << " lane " << lane << " a" << i;
            ++checked;
          }
        }
      }
    }
    EXPECT_EQ(static_cast<std::size_t>(checked), out.size());
  }
  std::vector<std::int8_t> q(64 * 16), out(64 * 16);
  expect_invalid_argument([&] { engine::shuffle_q8_mma(q.data(), 48, 16, out.data()); }, "K is 48");
  expect_invalid_argument([&] { engine::shuffle_q8_mma(q.data(), 64, 0, out.data()); }, "N is 0");
}

TEST(Gpt2Q4, QuantizerBoundsEveryWeight) {
  expect_quantizer_bounds(4);
}

// shuffle_q4_mma: every value of W^T's 16-column tiles at the nibble its A fragment reads (lane
// l = 4g + t, k-step j of group gi in the lane's word j, register r's low-row value in nibble r and
// its high-row value in nibble r + 4, stored + 8), columns past N as 0 (nibble 8); several
// threads past 2^20 values; values outside [-7, 7] named.
TEST(Gpt2Q4, MmaOrderIsTheFragmentLayout) {
  for (const auto [K, N] :
       {std::pair{64, 16}, std::pair{192, 40}, std::pair{128, 8}, std::pair{1024, 1032}}) {
    std::vector<std::int8_t> q(static_cast<std::size_t>(K) * N);
    std::mt19937 rng(K * 17 + N);
    std::uniform_int_distribution<int> u(-7, 7);
    for (auto& v : q) v = static_cast<std::int8_t>(u(rng));
    const int tiles = (N + 15) / 16;
    ASSERT_EQ(engine::q4_mma_scales_offset(K, N), static_cast<std::size_t>(K) * tiles * 8);
    EXPECT_EQ(engine::q4_mma_bytes(K, N),
              engine::q4_mma_scales_offset(K, N) + static_cast<std::size_t>(K / 64) * N * 4);
    std::vector<std::uint8_t> out(engine::q4_mma_scales_offset(K, N), std::uint8_t{0x99});
    engine::shuffle_q4_mma(q.data(), K, N, out.data());
    std::size_t checked = 0;
    for (int nt = 0; nt < tiles; ++nt) {
      for (int gi = 0; gi < K / 64; ++gi) {
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane / 4, t = lane % 4;
          for (int j = 0; j < 4; ++j) {
            const std::size_t word =
                ((static_cast<std::size_t>(nt) * (K / 64) + gi) * 32 + lane) * 16 + 4 * j;
            for (int r = 0; r < 4; ++r) {
              for (int e = 0; e < 2; ++e) {
                // mma.m16n8k16's A register r: rows (W's columns) g + 8 (r % 2), columns (W's
                // rows) 2t + 8 (r / 2) and the next.
                const int n = nt * 16 + g + 8 * (r % 2);
                const int k = (4 * gi + j) * 16 + 2 * t + 8 * (r / 2) + e;
                const int nib = r + 4 * e;
                const int got = (out[word + nib / 2] >> (4 * (nib % 2))) & 15;
                const int want = n < N ? q[static_cast<std::size_t>(k) * N + n] : 0;
                ASSERT_EQ(got - 8, want)
                    << "K " << K << " N " << N << " tile " << nt << " group " << gi << " lane "
                    << lane << " step " << j << " a" << r << "." << e;
                ++checked;
              }
            }
          }
        }
      }
    }
    EXPECT_EQ(checked, 2 * out.size());
  }
  std::vector<std::int8_t> q(128 * 16, 1);
  std::vector<std::uint8_t> out(128 * 8);
  expect_invalid_argument([&] { engine::shuffle_q4_mma(q.data(), 96, 16, out.data()); }, "K is 96");
  expect_invalid_argument([&] { engine::shuffle_q4_mma(q.data(), 64, 0, out.data()); }, "N is 0");
  q[70 * 16 + 3] = 8;
  q[100 * 16 + 1] = -9;
  expect_invalid_argument([&] { engine::shuffle_q4_mma(q.data(), 128, 16, out.data()); },
                          "q[70][3] is 8, outside [-7, 7]");
}

// The CPU backend's int8 (bits 8) or int4 (4: two values a byte, N odd too) linear against fp64
// on the dequantized weights: N not a multiple of anything, 1 and 5 rows, each epilogue (the
// residual aliasing out), outputs poisoned first.
void expect_cpu_linear_matches_fp64(int bits) {
  auto ops = engine::make_cpu_ops(3);
  for (const int K : {64, 320}) {
    for (const int N : {1, 3, 77}) {
      for (const int rows : {1, 5}) {
        for (const int mode : {0, 1, 2, 3}) {  // bias; + GELU; + residual; layernorm ahead
          const std::uint64_t seed = 1000 * K + 10 * N + rows + 7 * mode;
          const std::vector<float> W = normal(static_cast<std::size_t>(K) * N, 0.1f, seed);
          const std::vector<float> x = normal(static_cast<std::size_t>(rows) * K, 1.0f, seed + 1);
          const std::vector<float> bias = normal(N, 0.5f, seed + 2);
          const std::vector<float> res = normal(static_cast<std::size_t>(rows) * N, 1.0f, seed + 3);
          const std::vector<float> lw = normal(K, 0.2f, seed + 4), lb = normal(K, 0.2f, seed + 5);
          std::vector<std::int8_t> q(W.size());
          std::vector<float> s(static_cast<std::size_t>(K / kGpt2Q8Group) * N);
          if (bits == 4) {
            engine::quantize_q4(W.data(), K, N, q.data(), s.data());
          } else {
            engine::quantize_q8(W.data(), K, N, q.data(), s.data());
          }

          void* dW = bits == 4 ? ops->upload_q4_weights(W.data(), K, N)
                               : ops->upload_q8_weights(W.data(), K, N);
          void* dx = ops->upload_weights(x.data(), x.size());
          void* db = ops->upload_weights(bias.data(), bias.size());
          void* dlw = ops->upload_weights(lw.data(), lw.size());
          void* dlb = ops->upload_weights(lb.data(), lb.size());
          void* dln = ops->alloc(x.size() * sizeof(float));
          std::vector<float> init(static_cast<std::size_t>(rows) * N,
                                  std::numeric_limits<float>::quiet_NaN());
          if (mode == 2) init = res;
          void* dout = ops->upload_weights(init.data(), init.size());
          if (mode == 3 && bits == 4) {
            ops->layernorm_linear_q4(dx, rows, K, dlw, dlb, 1e-5f, dln, dW, db, dout, N, false);
          } else if (mode == 3) {
            ops->layernorm_linear_q8(dx, rows, K, dlw, dlb, 1e-5f, dln, dW, db, dout, N, false);
          } else if (bits == 4) {
            ops->linear_q4(dx, dW, db, mode == 2 ? dout : nullptr, dout, rows, K, N, mode == 1);
          } else {
            ops->linear_q8(dx, dW, db, mode == 2 ? dout : nullptr, dout, rows, K, N, mode == 1);
          }
          std::vector<float> got(init.size());
          ops->download(got.data(), dout, got.size() * sizeof(float));

          for (int r = 0; r < rows; ++r) {
            std::vector<double> xr(x.begin() + static_cast<std::ptrdiff_t>(r) * K,
                                   x.begin() + static_cast<std::ptrdiff_t>(r + 1) * K);
            if (mode == 3) {
              double mean = 0.0, var = 0.0;
              for (double v : xr) mean += v;
              mean /= K;
              for (double v : xr) var += (v - mean) * (v - mean);
              const double rstd = 1.0 / std::sqrt(var / K + 1e-5);
              for (int k = 0; k < K; ++k) xr[k] = (xr[k] - mean) * rstd * lw[k] + lb[k];
            }
            for (int n = 0; n < N; ++n) {
              double acc = bias[n], mag = std::abs(bias[n]);
              for (int k = 0; k < K; ++k) {
                const double w = static_cast<double>(q[static_cast<std::size_t>(k) * N + n]) *
                                 s[static_cast<std::size_t>(k / kGpt2Q8Group) * N + n];
                acc += xr[k] * w;
                mag += std::abs(xr[k] * w);
              }
              if (mode == 1) {
                acc = 0.5 * acc *
                      (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (acc + 0.044715 * acc * acc * acc)));
              }
              const std::size_t o = static_cast<std::size_t>(r) * N + n;
              if (mode == 2) acc += res[o];
              EXPECT_NEAR(got[o], acc, 1e-5 * (mag + std::abs(acc)) + 1e-6)
                  << "int" << bits << " K " << K << " N " << N << " rows " << rows << " mode "
                  << mode << " out[" << r << "][" << n << "]";
            }
          }
          for (void* p : {dW, dx, db, dlw, dlb, dln, dout}) ops->free(p);
        }
      }
    }
  }
}

TEST(Gpt2Q8, CpuLinearMatchesTheFp64ReferenceOnTheDequantizedWeights) {
  expect_cpu_linear_matches_fp64(8);
}

TEST(Gpt2Q4, CpuLinearMatchesTheFp64ReferenceOnTheDequantizedWeights) {
  expect_cpu_linear_matches_fp64(4);
}

// pack_q4_rows: rows 2j (low nibble) and 2j + 1 of column n in byte j * N + n, stored + 8; the
// block's sizes; an odd K and values outside [-7, 7] named.
TEST(Gpt2Q4, CpuRowsPackTwoValuesAByte) {
  for (const auto [K, N] : {std::pair{64, 16}, std::pair{128, 37}, std::pair{64, 1}}) {
    std::vector<std::int8_t> q(static_cast<std::size_t>(K) * N);
    std::mt19937 rng(K + N);
    std::uniform_int_distribution<int> u(-7, 7);
    for (auto& v : q) v = static_cast<std::int8_t>(u(rng));
    EXPECT_EQ(engine::q4_scales_offset(K, N), (static_cast<std::size_t>(K) / 2 * N + 15) / 16 * 16);
    EXPECT_EQ(engine::q4_bytes(K, N),
              engine::q4_scales_offset(K, N) + static_cast<std::size_t>(K / 64) * N * 4);
    std::vector<std::uint8_t> out(static_cast<std::size_t>(K) / 2 * N, 0x11);
    engine::pack_q4_rows(q.data(), K, N, out.data());
    for (int k = 0; k < K; ++k) {
      for (int n = 0; n < N; ++n) {
        const int got = (out[static_cast<std::size_t>(k / 2) * N + n] >> (4 * (k % 2))) & 15;
        ASSERT_EQ(got - 8, q[static_cast<std::size_t>(k) * N + n])
            << "K " << K << " N " << N << " q[" << k << "][" << n << "]";
      }
    }
  }
  std::vector<std::int8_t> q(64 * 5, 3);
  std::vector<std::uint8_t> out(32 * 5);
  q[9 * 5 + 4] = -8;
  q[30 * 5 + 1] = 8;
  expect_invalid_argument([&] { engine::pack_q4_rows(q.data(), 64, 5, out.data()); },
                          "q[9][4] is -8, outside [-7, 7]");
  expect_invalid_argument([&] { engine::pack_q4_rows(q.data(), 63, 5, out.data()); },
                          "K is 63 and N 5");
  expect_invalid_argument([&] { engine::pack_q4_rows(q.data(), 64, 0, out.data()); },
                          "K is 64 and N 0");
}

TEST(Gpt2EngineCpu, Int8LinearsMatchTheFp64ReferenceOfTheModelTheyRun) {
  const Gpt2Weights w = sharp_weights(small_config(), 21);
  const Gpt2Weights wq = w.with_int8_linears();
  Gpt2Engine e(w, int8_cpu_options());
  for (int n : {1, 9, 80}) {
    const std::vector<std::int32_t> tokens = random_tokens(n, 101, 30 + n);
    const std::vector<float> logits = e.forward_logits(tokens);
    // The model int8 linears run: fp32 sums of the dequantized weights, as dense fp32 is.
    EXPECT_LT(rel_error(logits, gpt2_reference_logits(wq, tokens)), 2e-5) << "n = " << n;
    // And it is not the dense model: the weights were quantized.
    EXPECT_GT(rel_error(logits, gpt2_reference_logits(w, tokens)), 1e-4) << "n = " << n;
  }
  // How far int8 linears move the logits of a model with HF's initialization (the sharp weights
  // above amplify it, 9% at 80 tokens): within 1% of the largest.
  const Gpt2Weights hf = Gpt2Weights::random(small_config(), 24);
  Gpt2Engine ehf(hf, int8_cpu_options());
  const std::vector<std::int32_t> tokens = random_tokens(80, 101, 31);
  const double off = rel_error(ehf.forward_logits(tokens), gpt2_reference_logits(hf, tokens));
  EXPECT_GT(off, 1e-5);
  EXPECT_LT(off, 1e-2);
}

// Greedy generation of `lens`-token prompts (seeds seed + len), `n_new` tokens each: every token
// is the best logit (within fp32 noise) of the engine's own forward over the sequence so far.
void expect_generates_as_own_forward(Gpt2Engine& e, std::initializer_list<int> lens, int n_new,
                                     int seed) {
  std::vector<GenerationRequest> reqs;
  for (int len : lens) {
    GenerationRequest r;
    r.prompt = random_tokens(len, 101, seed + len);
    r.max_new_tokens = n_new;
    reqs.push_back(r);
  }
  const auto out = e.generate(reqs);
  ASSERT_EQ(out.size(), reqs.size());
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_EQ(out[i].size(), static_cast<std::size_t>(n_new));
    std::vector<std::int32_t> seq = reqs[i].prompt;
    for (std::size_t t = 0; t < out[i].size(); ++t) {
      const std::vector<float> logits = e.forward_logits(seq);
      const float* last = &logits[(seq.size() - 1) * 101];
      const float best = *std::max_element(last, last + 101);
      EXPECT_GE(last[out[i][t]], best - 1e-4f * std::max(1.0f, std::abs(best)))
          << "request " << i << " token " << t;
      seq.push_back(out[i][t]);
    }
  }
}

TEST(Gpt2EngineCpu, Int8LinearsGenerateAsTheirOwnForward) {
  const Gpt2Weights w = sharp_weights(small_config(), 22);
  Gpt2Engine e(w, int8_cpu_options());
  expect_generates_as_own_forward(e, {1, 6, 19}, 9, 200);
}

// The engine on int4 linears (the CPU stores them a byte a value and runs the int8 linear on them):
// the model they run to fp32 accuracy, not the dense one, and generation as its own forward.
TEST(Gpt2EngineCpu, Int4LinearsMatchTheFp64ReferenceOfTheModelTheyRun) {
  const Gpt2Weights w = sharp_weights(small_config(), 25);
  const Gpt2Weights wq = w.with_int4_linears();
  Gpt2Engine e(w, int8_cpu_options(LinearWeights::int4));
  for (int n : {1, 9, 80}) {
    const std::vector<std::int32_t> tokens = random_tokens(n, 101, 60 + n);
    const std::vector<float> logits = e.forward_logits(tokens);
    EXPECT_LT(rel_error(logits, gpt2_reference_logits(wq, tokens)), 2e-5) << "n = " << n;
    EXPECT_GT(rel_error(logits, gpt2_reference_logits(w, tokens)), 1e-3) << "n = " << n;
    // Not the int8 model either.
    EXPECT_GT(rel_error(logits, gpt2_reference_logits(w.with_int8_linears(), tokens)), 1e-3)
        << "n = " << n;
  }
  expect_generates_as_own_forward(e, {1, 7}, 6, 220);
  Gpt2Weights bad = w;
  bad.layers[0].attn_proj_w.pop_back();
  expect_invalid_argument([&] { bad.with_int4_linears(); }, "h.0.attn.c_proj.weight has");
}

TEST(Gpt2EngineCpu, Int8LinearsOptionsAreChecked) {
  const Gpt2Weights w = sharp_weights(small_config(), 23);
  EngineOptions o = int8_cpu_options();
  o.linear_weights = static_cast<LinearWeights>(7);
  expect_invalid_argument([&] { Gpt2Engine e(w, o); }, "linear_weights is 7");
  o.linear_weights = LinearWeights::int8;
  o.backend = static_cast<Backend>(9);  // was taken for the CPU
  expect_invalid_argument([&] { Gpt2Engine e(w, o); }, "backend is 9");
  o.backend = Backend::cpu;
  Gpt2Weights bad = w;
  bad.layers[1].c_fc_w.pop_back();
  expect_invalid_argument([&] { bad.with_int8_linears(); }, "h.1.mlp.c_fc.weight has");
  // The uploads check K and N before they size anything from them.
  auto ops = engine::make_cpu_ops(1);
  const std::vector<float> W(64 * 8, 0.5f);
  expect_invalid_argument([&] { ops->upload_q4_weights(W.data(), -64, 8); },
                          "int4 linear weights: K (rows of W) is -64");
  expect_invalid_argument([&] { ops->upload_q8_weights(W.data(), 64, -8); },
                          "int8 linear weights: N (columns of W) is -8");
}

// head_linear: wte transposed into [C, padded_vocab(V)] with zero columns past V; round_trip_head:
// each token's row in groups of 64 features, one scale each (absmax / limit), so a row's values
// move by at most half its group's scale, and quantizing head_linear of the result gives it back.
TEST(Gpt2QuantizedHead, HeadLinearAndRoundTripFollowTheGroups) {
  const int V = 77, C = 128, Vp = engine::padded_vocab(V);
  ASSERT_EQ(Vp, 128);
  std::vector<float> wte = normal(static_cast<std::size_t>(V) * C, 0.05f, 5);
  wte[3 * C + 70] = 2.0f;  // an outlier: token 3's second group has scale 2 / limit
  const std::vector<float> W = engine::head_linear(wte.data(), V, C);
  ASSERT_EQ(W.size(), static_cast<std::size_t>(C) * Vp);
  for (int c = 0; c < C; ++c) {
    for (int v = 0; v < Vp; ++v) {
      const float want = v < V ? wte[static_cast<std::size_t>(v) * C + c] : 0.0f;
      ASSERT_EQ(W[static_cast<std::size_t>(c) * Vp + v], want) << "c " << c << " v " << v;
    }
  }
  for (const LinearWeights lw : {LinearWeights::int8, LinearWeights::int4}) {
    const float limit = lw == LinearWeights::int4 ? 7.0f : 127.0f;
    std::vector<float> q = wte;
    engine::round_trip_head(q, V, C, lw);
    int moved = 0;
    for (int v = 0; v < V; ++v) {
      for (int g = 0; g < C / 64; ++g) {
        float amax = 0.0f;
        for (int c = 64 * g; c < 64 * g + 64; ++c) {
          amax = std::max(amax, std::abs(wte[static_cast<std::size_t>(v) * C + c]));
        }
        const float scale = amax / limit;
        for (int c = 64 * g; c < 64 * g + 64; ++c) {
          const std::size_t i = static_cast<std::size_t>(v) * C + c;
          ASSERT_LE(std::abs(q[i] - wte[i]), 0.5f * scale * (1 + 1e-5f) + 1e-12f)
              << "token " << v << " feature " << c;
          const float level = q[i] / scale;
          ASSERT_NEAR(level, std::round(level), 1e-3f) << "token " << v << " feature " << c;
          moved += q[i] != wte[i];
        }
      }
    }
    EXPECT_GT(moved, V * C / 2);
    EXPECT_EQ(q[3 * C + 70], 2.0f);  // the outlier is its group's +limit exactly
    // Quantizing again changes nothing, and dense changes nothing.
    std::vector<float> again = q;
    engine::round_trip_head(again, V, C, lw);
    for (std::size_t i = 0; i < q.size(); ++i) ASSERT_NEAR(again[i], q[i], 1e-6f * 2.0f) << i;
    std::vector<float> same = wte;
    engine::round_trip_head(same, V, C, LinearWeights::dense);
    EXPECT_EQ(same, wte);
  }
  std::vector<float> bad = wte;
  bad[5 * C + 9] = std::numeric_limits<float>::infinity();
  expect_invalid_argument([&] { engine::head_linear(bad.data(), V, C); },
                          "wte[5][9] (token 5, feature 9) is inf");
  expect_invalid_argument([&] { engine::round_trip_head(bad, V, C, LinearWeights::int4); },
                          "token 5, feature 9");
  expect_invalid_argument([&] { engine::head_linear(wte.data(), 0, C); }, "V is 0");
  std::vector<float> odd(static_cast<std::size_t>(V) * 96, 0.1f);
  expect_invalid_argument([&] { engine::round_trip_head(odd, V, 96, LinearWeights::int8); },
                          "K (rows of W) is 96");
  expect_invalid_argument([&] { engine::round_trip_head(odd, V, C, LinearWeights::int8); },
                          "wte has 7392 values, V x C is 9856");
}

// The engine with its output head (and so the tied embedding) quantized: the model
// with_quantized_head describes, alone and with int4 linears, to fp32 accuracy; not the dense
// model; generation as its own forward; and the option checked.
TEST(Gpt2EngineCpu, QuantizedHeadMatchesTheFp64ReferenceOfTheModelItRuns) {
  const Gpt2Weights w = sharp_weights(small_config(), 27);
  for (const LinearWeights hw : {LinearWeights::int8, LinearWeights::int4}) {
    for (const LinearWeights lw : {LinearWeights::dense, LinearWeights::int4}) {
      const char* kind = hw == LinearWeights::int4 ? "int4 head, " : "int8 head, ";
      Gpt2Weights wq = w.with_quantized_head(hw);
      if (lw == LinearWeights::int4) wq = wq.with_int4_linears();
      EngineOptions o = int8_cpu_options(lw);
      o.head_weights = hw;
      Gpt2Engine e(w, o);
      for (int n : {1, 9, 80}) {
        const std::vector<std::int32_t> tokens = random_tokens(n, 101, 70 + n);
        const std::vector<float> logits = e.forward_logits(tokens);
        EXPECT_LT(rel_error(logits, gpt2_reference_logits(wq, tokens)), 2e-5)
            << kind << (lw == LinearWeights::int4 ? "int4" : "dense") << " linears, n = " << n;
        Gpt2Weights linears_only = lw == LinearWeights::int4 ? w.with_int4_linears() : w;
        EXPECT_GT(rel_error(logits, gpt2_reference_logits(linears_only, tokens)), 1e-4)
            << kind << "n = " << n;
      }
      expect_generates_as_own_forward(e, {1, 5}, 5, 240);
    }
  }
  EngineOptions o = int8_cpu_options(LinearWeights::dense);
  o.head_weights = static_cast<LinearWeights>(9);
  expect_invalid_argument([&] { Gpt2Engine e(w, o); }, "head_weights is 9");
  // Dense: a copy, the same model.
  const Gpt2Weights same = w.with_quantized_head(LinearWeights::dense);
  EXPECT_EQ(same.wte, w.wte);
  // The default lm_head_quantized needs fp32 activations and the padded pitch.
  auto ops = engine::make_cpu_ops(1);
  expect_invalid_argument(
      [&] {
        ops->lm_head_quantized(nullptr, nullptr, nullptr, LinearWeights::int4, nullptr, 1, 64, 101,
                               101);
      },
      "a pitch of padded_vocab(V) = 128");
}

// The KV cache as FP8 E4M3 (KvCache::e4m3) on the CPU: scatter_kv rounds as float_to_e4m3 into
// each row's slot and nothing else; the prompt's logits are the model's (a prompt attends to
// itself unquantized); each generated token is the argmax (within fp32 noise) of the fp64
// reference whose decode rows read rounded keys and values, and that reference is not the exact
// model's (the sharp test weights: its best token differs at least once).
TEST(Gpt2EngineCpu, E4m3KvCacheFollowsTheReferenceOfTheCacheItKeeps) {
  auto ops = engine::make_cpu_ops(1);
  const int C = 64, kSlots = 8;
  const std::vector<std::int32_t> slots = {5, 0, 2};
  std::vector<float> qkv = normal(3 * 3 * C, 3.0f, 11);
  qkv[C + 1] = 500.0f;                 // saturates to 448
  qkv[2 * C + 2] = -0.0009765625f;     // 2^-10: a tie, to 0
  qkv[3 * C + C + 3] = 0.0029296875f;  // 3 * 2^-10: a tie, to 2^-8
  qkv[6 * C + 2 * C + 4] = std::nanf("");
  std::vector<std::uint8_t> k(static_cast<std::size_t>(kSlots) * C, 0xA5), v = k;
  ops->scatter_kv(qkv.data(), 3, C, slots.data(), k.data(), v.data(), DType::e4m3);
  std::vector<std::uint8_t> wk(k.size(), 0xA5), wv = wk;
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < C; ++c) {
      wk[static_cast<std::size_t>(slots[r]) * C + c] = float_to_e4m3(qkv[(3 * r + 1) * C + c]);
      wv[static_cast<std::size_t>(slots[r]) * C + c] = float_to_e4m3(qkv[(3 * r + 2) * C + c]);
    }
  }
  EXPECT_EQ(k, wk);
  EXPECT_EQ(v, wv);
  EXPECT_EQ(k[static_cast<std::size_t>(5) * C + 1], 0x7e);  // 448
  EXPECT_EQ(v[static_cast<std::size_t>(5) * C + 2], 0x80);  // -0
  EXPECT_EQ(k[0 * C + 3], 0x02);                            // 2^-8
  EXPECT_EQ(v[static_cast<std::size_t>(2) * C + 4], 0x7f);  // NaN
  expect_invalid_argument(
      [&] { ops->scatter_kv(qkv.data(), 3, C, slots.data(), k.data(), v.data(), DType::f16); },
      "into a float16 cache on the CPU: float32 or float8_e4m3fn");

  const Gpt2Weights w = sharp_weights(small_config(), 51);
  EngineOptions o = cpu_options();
  o.num_threads = 3;
  o.kv_cache = KvCache::e4m3;
  Gpt2Engine e(w, o);
  const std::vector<std::int32_t> tokens = random_tokens(20, 101, 71);
  EXPECT_LT(rel_error(e.forward_logits(tokens), gpt2_reference_logits(w, tokens)), 2e-5);
  std::vector<GenerationRequest> reqs;
  for (const int len : {1, 6, 13, 4, 9}) {
    GenerationRequest r;
    r.prompt = random_tokens(len, 101, 80 + len);
    r.max_new_tokens = 7;
    reqs.push_back(r);
  }
  const auto out = e.generate(reqs);
  ASSERT_EQ(out.size(), reqs.size());
  double moved = 0.0;  // how far the rounded cache moves the decode rows' logits, at most
  int flips = 0;       // tokens where the rounded cache's best is not the exact model's
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    ASSERT_EQ(out[i].size(), 7u);
    const int prompt = static_cast<int>(reqs[i].prompt.size());
    std::vector<std::int32_t> seq = reqs[i].prompt;
    seq.insert(seq.end(), out[i].begin(), out[i].end() - 1);  // every token a step produced from
    const std::vector<double> ref = gpt2_reference_logits(w, seq, KvCache::e4m3, prompt);
    const std::vector<double> exact = gpt2_reference_logits(w, seq);
    for (std::size_t t = 0; t < out[i].size(); ++t) {
      const std::size_t row = (prompt - 1 + t) * 101;
      const double* l = &ref[row];
      const double best = *std::max_element(l, l + 101);
      EXPECT_GE(l[out[i][t]], best - 1e-4 * std::max(1.0, std::abs(best)))
          << "request " << i << " token " << t;
      const double* ex = &exact[row];
      flips += std::max_element(ex, ex + 101) - ex != std::max_element(l, l + 101) - l;
      if (t > 0) {
        const std::vector<float> a(l, l + 101);
        moved = std::max(moved, rel_error(a, std::vector<double>(&exact[row], &exact[row] + 101)));
      }
    }
  }
  // The decode rows read a rounded cache: not the exact model, and the tokens follow the cache's
  // reference where the two disagree (at least once with these seeds: the check is not idle).
  EXPECT_GT(moved, 1e-3);
  EXPECT_GE(flips, 1);
  // The decode rows' logits themselves (forward_logits with a prompt: the tokens after it as
  // decode steps through the cache), against the e4m3 reference and the 16-bit one; and with a
  // model-type cache, the decode steps compute the exact model.
  const std::vector<std::int32_t> seq = random_tokens(24, 101, 72);
  const std::vector<float> dec = e.forward_logits(seq, 7);
  const double err = rel_error(dec, gpt2_reference_logits(w, seq, KvCache::e4m3, 7));
  const double off = rel_error(dec, gpt2_reference_logits(w, seq));
  EXPECT_LT(err, 2e-5);
  EXPECT_GT(off, 0.05);
  EngineOptions om = o;
  om.kv_cache = KvCache::model;
  Gpt2Engine em(w, om);
  EXPECT_LT(rel_error(em.forward_logits(seq, 7), gpt2_reference_logits(w, seq)), 2e-5);
  expect_invalid_argument([&] { e.forward_logits(seq, 25); }, "prompt is 25, must be 0 to 24");
  o.kv_cache = static_cast<KvCache>(4);
  expect_invalid_argument([&] { Gpt2Engine bad(w, o); }, "kv_cache is 4");
  expect_invalid_argument([&] { gpt2_reference_logits(w, tokens, KvCache::e4m3, 21); },
                          "prompt is 21, must be 0 to 20");
  expect_invalid_argument([&] { gpt2_reference_logits(w, tokens, KvCache::e4m3, -1); },
                          "prompt is -1");
  // prompt 0 is the whole sequence as one prompt in the reference too (it rounded every row's
  // keys: 12% off the engine's forward_logits with its default).
  EXPECT_LT(rel_error(e.forward_logits(seq), gpt2_reference_logits(w, seq, KvCache::e4m3)), 2e-5);
  // The reference checks the weights as the engine does (a short tensor was read past its end).
  Gpt2Weights short_w = w;
  short_w.layers.pop_back();
  expect_invalid_argument([&] { gpt2_reference_logits(short_w, tokens); },
                          "gpt2_reference_logits: weights have 1 layers, the config 2");
  short_w = w;
  short_w.wpe.resize(10);
  expect_invalid_argument([&] { gpt2_reference_logits(short_w, tokens); }, "weights wpe has 10");
  expect_invalid_argument([&] { w.with_quantized_head(static_cast<LinearWeights>(7)); },
                          "with_quantized_head: head is 7");
}

}  // namespace
}  // namespace gpuattn
