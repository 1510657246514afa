// A rank of the CPU backend: synchronous, its scratch in host memory.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "dist/rank_exec.h"
#include "gpuattn/numeric.h"

namespace gpuattn::dist {
namespace {

void store(void* base, DType t, std::int64_t i, float v) {
  switch (t) {
    case DType::f16: static_cast<std::uint16_t*>(base)[i] = float_to_f16(v); break;
    case DType::bf16: static_cast<std::uint16_t*>(base)[i] = float_to_bf16(v); break;
    default: static_cast<float*>(base)[i] = v; break;
  }
}

class HostExec final : public RankExec {
 public:
  explicit HostExec(int num_threads) : threads_(num_threads) {}

  void* alloc(std::size_t bytes) override {
    scratch_.emplace_back((bytes + 15) / 16 + 1);
    return scratch_.back().data();
  }

  void upload(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void download(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }

  void copy(const TensorView& src, const TensorView& dst) override {
    const std::int64_t es = static_cast<std::int64_t>(element_size(src.dtype));
    const bool rows = src.stride[3] == 1 && dst.stride[3] == 1;
    auto* out = static_cast<char*>(dst.data);
    const auto* in = static_cast<const char*>(src.data);
    for (std::int64_t a = 0; a < src.shape[0]; ++a) {
      for (std::int64_t b = 0; b < src.shape[1]; ++b) {
        for (std::int64_t c = 0; c < src.shape[2]; ++c) {
          const std::int64_t so = a * src.stride[0] + b * src.stride[1] + c * src.stride[2];
          const std::int64_t d = a * dst.stride[0] + b * dst.stride[1] + c * dst.stride[2];
          if (rows) {
            std::memmove(out + d * es, in + so * es, static_cast<std::size_t>(src.shape[3] * es));
            continue;
          }
          for (std::int64_t e = 0; e < src.shape[3]; ++e) {
            std::memmove(out + (d + e * dst.stride[3]) * es, in + (so + e * src.stride[3]) * es,
                         static_cast<std::size_t>(es));
          }
        }
      }
    }
  }

  void attention(AttentionArgs args) override {
    if (args.num_threads == 0) args.num_threads = threads_;
    attention_forward(args);
  }

  void merge(const Accumulator& acc, int row0, const TensorView& part, const float* part_lse,
             bool first) override {
    const int n = static_cast<int>(part.shape[1]);
    const int H = acc.heads, D = acc.head_dim;
    for (int b = 0; b < acc.batch; ++b) {
      for (int i = 0; i < n; ++i) {
        for (int h = 0; h < H; ++h) {
          const std::int64_t lse_at = (static_cast<std::int64_t>(b) * H + h) * acc.rows + row0 + i;
          const float p = part_lse[(static_cast<std::int64_t>(b) * H + h) * n + i];
          float* o = acc.o + ((static_cast<std::int64_t>(b) * acc.rows + row0 + i) * H + h) * D;
          const std::int64_t part_at = ((static_cast<std::int64_t>(b) * n + i) * H + h) * D;
          if (first) {
            for (int d = 0; d < D; ++d) o[d] = element_to_float(part.data, part.dtype, part_at + d);
            acc.lse[lse_at] = p;
            continue;
          }
          const float a = acc.lse[lse_at];
          const float m = std::max(a, p);
          if (m == -std::numeric_limits<float>::infinity()) continue;  // neither saw a key
          const float wa = std::exp(a - m), wp = std::exp(p - m);
          const float inv = 1.f / (wa + wp);
          for (int d = 0; d < D; ++d) {
            o[d] = (o[d] * wa + element_to_float(part.data, part.dtype, part_at + d) * wp) * inv;
          }
          acc.lse[lse_at] = m + std::log(wa + wp);
        }
      }
    }
  }

  void finish(const Accumulator& acc, const TensorView& out, const TensorView& lse) override {
    const int H = acc.heads, D = acc.head_dim;
    for (int b = 0; b < acc.batch; ++b) {
      for (int i = 0; i < acc.rows; ++i) {
        for (int h = 0; h < H; ++h) {
          const float* o = acc.o + ((static_cast<std::int64_t>(b) * acc.rows + i) * H + h) * D;
          const std::int64_t at = b * out.stride[0] + i * out.stride[1] + h * out.stride[2];
          for (int d = 0; d < D; ++d) store(out.data, out.dtype, at + d, o[d]);
          if (lse.present()) {
            static_cast<float*>(
                lse.data)[b * lse.stride[0] + h * lse.stride[1] + i * lse.stride[2]] =
                acc.lse[(static_cast<std::int64_t>(b) * H + h) * acc.rows + i];
          }
        }
      }
    }
  }

  void transfers_after_compute() override {}
  void compute_after_transfers() override {}

 private:
  struct alignas(16) Chunk {
    unsigned char b[16];
  };
  int threads_;
  std::vector<std::vector<Chunk>> scratch_;
};

}  // namespace

std::unique_ptr<RankExec> make_host_exec(int num_threads) {
  return std::make_unique<HostExec>(num_threads);
}

}  // namespace gpuattn::dist
