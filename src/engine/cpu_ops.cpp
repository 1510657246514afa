// ModelOps on the CPU: fp32 everywhere, plain loops split over threads by output column (so that
// a one-row decode step uses every core), results independent of the thread count.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "engine/model_ops.h"
#include "engine/parallel.h"
#include "engine/q8_weights.h"
#include "gpuattn/gpt2.h"
#include "gpuattn/numeric.h"

namespace gpuattn::engine {
namespace {

class CpuOps final : public ModelOps {
 public:
  explicit CpuOps(int threads)
      : threads_(threads > 0
                     ? threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {}

  Device device() const override { return Device::cpu; }
  int device_index() const override { return 0; }
  DType dtype() const override { return DType::f32; }
  void* stream() const override { return nullptr; }

  void* alloc(std::size_t bytes) override {
    return ::operator new(std::max<std::size_t>(bytes, 1));
  }
  void free(void* p) override { ::operator delete(p); }
  void upload(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) std::memmove(dst, src, bytes);
  }
  void* upload_weights(const float* src, std::size_t n) override {
    void* p = alloc(n * sizeof(float));
    upload(p, src, n * sizeof(float));
    return p;
  }

  void embed(const std::int32_t* tokens, const std::int32_t* positions, int rows, const void* wte,
             const void* wpe, int C, void* out) override {
    const float* te = static_cast<const float*>(wte);
    const float* pe = static_cast<const float*>(wpe);
    float* o = static_cast<float*>(out);
    for (int r = 0; r < rows; ++r) {
      const float* a = te + static_cast<std::int64_t>(tokens[r]) * C;
      const float* b = pe + static_cast<std::int64_t>(positions[r]) * C;
      for (int c = 0; c < C; ++c) o[static_cast<std::int64_t>(r) * C + c] = a[c] + b[c];
    }
  }

  void layernorm(const void* x, const std::int32_t* src_rows, int rows, int C, const void* w,
                 const void* b, float eps, void* out) override {
    const float* in = static_cast<const float*>(x);
    const float* g = static_cast<const float*>(w);
    const float* be = static_cast<const float*>(b);
    float* o = static_cast<float*>(out);
    for (int r = 0; r < rows; ++r) {
      const float* xr = in + static_cast<std::int64_t>(src_rows ? src_rows[r] : r) * C;
      float mean = 0.0f;
      for (int c = 0; c < C; ++c) mean += xr[c];
      mean /= static_cast<float>(C);
      float var = 0.0f;
      for (int c = 0; c < C; ++c) var += (xr[c] - mean) * (xr[c] - mean);
      const float rstd = 1.0f / std::sqrt(var / static_cast<float>(C) + eps);
      float* orow = o + static_cast<std::int64_t>(r) * C;
      for (int c = 0; c < C; ++c) orow[c] = (xr[c] - mean) * rstd * g[c] + be[c];
    }
  }

  void linear(const void* x, const void* W, const void* bias, const void* residual, void* out,
              int rows, int K, int N, bool gelu) override {
    const float* xa = static_cast<const float*>(x);
    const float* wa = static_cast<const float*>(W);
    const float* ba = static_cast<const float*>(bias);
    const float* ra = static_cast<const float*>(residual);
    float* o = static_cast<float*>(out);
    parallel_columns(N, [&](int n0, int n1) {
      std::vector<float> acc(static_cast<std::size_t>(n1 - n0));
      for (int r = 0; r < rows; ++r) {
        std::copy(ba + n0, ba + n1, acc.begin());
        const float* xr = xa + static_cast<std::int64_t>(r) * K;
        for (int k = 0; k < K; ++k) {
          const float xv = xr[k];
          const float* wr = wa + static_cast<std::int64_t>(k) * N + n0;
          for (int n = 0; n < n1 - n0; ++n) acc[n] += xv * wr[n];
        }
        finish_row(acc.data(), gelu, ra, o, r, N, n0, n1);
      }
    });
  }

  // As linear, with W int8 [K, N] and a scale a kGpt2Q8Group rows and column: each group's
  // products summed, then scaled (fp32).
  void linear_q8(const void* x, const void* Wq, const void* bias, const void* residual, void* out,
                 int rows, int K, int N, bool gelu) override {
    const auto* qa = static_cast<const std::int8_t*>(Wq);
    linear_grouped<1>(x, static_cast<const char*>(Wq) + q8_scales_offset(K, N), bias, residual, out,
                      rows, K, N, gelu, [&](int k, int n0, int n1, const float* xk, float* part) {
                        const float xv = xk[0];
                        const std::int8_t* qr = qa + static_cast<std::int64_t>(k) * N + n0;
                        for (int n = 0; n < n1 - n0; ++n) {
                          part[n] += xv * static_cast<float>(qr[n]);
                        }
                      });
  }
  // The same with W int4 as upload_q4_weights packs it (q4_bytes' layout): a byte holds rows 2j
  // (low nibble) and 2j + 1 of a column, so each pair of rows is one pass over contiguous bytes,
  // which the compiler vectorizes (column-adjacent nibbles, picked one by one, ran 124M B1 at
  // 0.35x int8's rate on 2 cores).
  void linear_q4(const void* x, const void* Wq, const void* bias, const void* residual, void* out,
                 int rows, int K, int N, bool gelu) override {
    const auto* qa = static_cast<const std::uint8_t*>(Wq);
    linear_grouped<2>(x, static_cast<const char*>(Wq) + q4_scales_offset(K, N), bias, residual, out,
                      rows, K, N, gelu, [&](int k, int n0, int n1, const float* xk, float* part) {
                        const float x0 = xk[0], x1 = xk[1];
                        const std::uint8_t* qr = qa + static_cast<std::int64_t>(k / 2) * N + n0;
                        for (int n = 0; n < n1 - n0; ++n) {
                          part[n] += x0 * static_cast<float>((qr[n] & 15) - 8) +
                                     x1 * static_cast<float>((qr[n] >> 4) - 8);
                        }
                      });
  }

  void* upload_head(const float* wte, int V, int C) override {
    return upload_weights(wte, static_cast<std::size_t>(V) * C);
  }

  void lm_head(const void* x, const void* wte, float* logits, int rows, int C, int V,
               int ld) override {
    const float* xa = static_cast<const float*>(x);
    const float* te = static_cast<const float*>(wte);
    parallel_columns(V, [&](int v0, int v1) {
      for (int r = 0; r < rows; ++r) {
        const float* xr = xa + static_cast<std::int64_t>(r) * C;
        for (int v = v0; v < v1; ++v) {
          const float* er = te + static_cast<std::int64_t>(v) * C;
          float s = 0.0f;
          for (int c = 0; c < C; ++c) s += xr[c] * er[c];
          logits[static_cast<std::int64_t>(r) * ld + v] = s;
        }
      }
    });
  }

  void scatter_kv(const void* qkv, int rows, int C, const std::int32_t* slots, void* k_pool,
                  void* v_pool, DType pool) override {
    if (pool != DType::f32 && pool != DType::e4m3) {
      throw Error(ErrorCode::invalid_argument, std::string("gpuattn engine: scatter_kv into a ") +
                                                   to_string(pool) +
                                                   " cache on the CPU: float32 or float8_e4m3fn");
    }
    const float* src = static_cast<const float*>(qkv);
    for (int r = 0; r < rows; ++r) {
      const float* row = src + static_cast<std::int64_t>(r) * 3 * C;
      const std::int64_t dst = static_cast<std::int64_t>(slots[r]) * C;
      if (pool == DType::e4m3) {
        auto* k = static_cast<std::uint8_t*>(k_pool) + dst;
        auto* v = static_cast<std::uint8_t*>(v_pool) + dst;
        for (int c = 0; c < C; ++c) {
          k[c] = float_to_e4m3(row[C + c]);
          v[c] = float_to_e4m3(row[2 * C + c]);
        }
        continue;
      }
      std::memcpy(static_cast<float*>(k_pool) + dst, row + C, sizeof(float) * C);
      std::memcpy(static_cast<float*>(v_pool) + dst, row + 2 * C, sizeof(float) * C);
    }
  }

  void sample(const float* logits, int rows, int V, int ld, const SampleRow* params,
              std::int32_t* tokens) override {
    for (int r = 0; r < rows; ++r) {
      tokens[r] = sample_row_host(logits + static_cast<std::int64_t>(r) * ld, V, params[r]);
    }
  }

  void synchronize() override {}

 private:
  // out[r][n0, n1) = act(acc) (+ residual[r][n0, n1)): the linears' epilogue. residual may alias
  // out (each element is read before it is written).
  // The quantized linears' loop: out = act(x W + bias) (+ residual; bias may be null: 0, as for
  // the quantized head's logits) with W's scales (fp32
  // [K / kGpt2Q8Group, N], from `scales`) applied to each group's sums; row(k, n0, n1, xk, part)
  // adds W's rows k..k + Step - 1, columns [n0, n1), times xk[0..Step) to part.
  template <int Step, typename Row>
  void linear_grouped(const void* x, const char* scales, const void* bias, const void* residual,
                      void* out, int rows, int K, int N, bool gelu, const Row& row) {
    const float* xa = static_cast<const float*>(x);
    const auto* sa = reinterpret_cast<const float*>(scales);
    const float* ba = static_cast<const float*>(bias);
    const float* ra = static_cast<const float*>(residual);
    float* o = static_cast<float*>(out);
    parallel_columns(N, [&](int n0, int n1) {
      const std::size_t w = static_cast<std::size_t>(n1 - n0);
      std::vector<float> acc(w), part(w);
      for (int r = 0; r < rows; ++r) {
        if (ba != nullptr) {
          std::copy(ba + n0, ba + n1, acc.begin());
        } else {
          std::fill(acc.begin(), acc.end(), 0.0f);
        }
        const float* xr = xa + static_cast<std::int64_t>(r) * K;
        for (int k0 = 0; k0 < K; k0 += kGpt2Q8Group) {
          std::fill(part.begin(), part.end(), 0.0f);
          for (int k = k0; k < k0 + kGpt2Q8Group; k += Step) row(k, n0, n1, xr + k, part.data());
          const float* sr = sa + static_cast<std::int64_t>(k0 / kGpt2Q8Group) * N + n0;
          for (std::size_t n = 0; n < w; ++n) acc[n] += part[n] * sr[n];
        }
        finish_row(acc.data(), gelu, ra, o, r, N, n0, n1);
      }
    });
  }
  static void finish_row(const float* acc, bool gelu, const float* residual, float* out, int r,
                         int N, int n0, int n1) {
    float* orow = out + static_cast<std::int64_t>(r) * N;
    for (int n = n0; n < n1; ++n) {
      float v = acc[n - n0];
      if (gelu) v = gelu_tanh(v);
      if (residual) v += residual[static_cast<std::int64_t>(r) * N + n];
      orow[n] = v;
    }
  }
  static float gelu_tanh(float v) {
    const float k = 0.7978845608028654f;  // sqrt(2 / pi)
    return 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
  }

  // f(n0, n1) over column chunks of [0, N), on up to threads_ threads.
  void parallel_columns(int N, const std::function<void(int, int)>& f) const {
    const int chunks = std::min(threads_, std::max(1, N / 64));
    if (chunks <= 1) {
      f(0, N);
      return;
    }
    // engine/parallel.h: a chunk whose thread cannot start runs here, and an exception waits for
    // every thread (a vector of joinable threads destroyed by one called std::terminate)
    run_parts(chunks, [&](int i) {
      f(static_cast<int>(static_cast<std::int64_t>(N) * i / chunks),
        static_cast<int>(static_cast<std::int64_t>(N) * (i + 1) / chunks));
    });
  }

  int threads_;
};

}  // namespace

std::unique_ptr<ModelOps> make_cpu_ops(int threads) {
  return std::make_unique<CpuOps>(threads);
}

}  // namespace gpuattn::engine
