// The `auto` sparsity policy: memory and work estimates of each mode, then the rule of
// gpuattn/sparsity.h. Host only; nothing here touches a device.
#include "gpuattn/sparsity.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "core/mask.h"

namespace gpuattn {
namespace {

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(ErrorCode::invalid_argument, "gpuattn::choose_sparsity: " + msg);
}

void check_positive(std::int64_t v, const char* name) {
  if (v <= 0) invalid(std::string(name) + " is " + std::to_string(v) + ", must be positive");
}

std::string bytes_str(std::int64_t b) {
  char s[32];
  if (b >= (std::int64_t{1} << 30)) {
    std::snprintf(s, sizeof s, "%.2f GiB", double(b) / double(std::int64_t{1} << 30));
  } else {
    std::snprintf(s, sizeof s, "%.1f MiB", double(b) / double(1 << 20));
  }
  return s;
}

std::string pairs_str(double n) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3g", n);
  return s;
}

// The sum over i in [a, b) of clamp(i + c, lo, hi) (a <= b, lo <= hi), exact: the i below lo - c
// give lo, those above hi - c give hi, and the ones between an arithmetic series of values in
// [lo, hi].
std::int64_t sum_clamped(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t lo,
                         std::int64_t hi) {
  const std::int64_t x1 = std::clamp(lo - c, a, b);
  const std::int64_t x2 = std::clamp(hi - c + 1, x1, b);
  const std::int64_t n = x2 - x1;
  return lo * (x1 - a) + n * (x1 + c) + n * (n - 1) / 2 + hi * (b - x2);
}

// (query, key) pairs of one sequence and head (Sq = Sk = s) under the mask choose_sparsity builds:
// causal or not, a window, global_tokens, no global stride or block layout. What summing
// MaskPolicy::visible_count over the rows gives, in O(1) (a row loop took 2.7 s at S = 2^30):
//   rows i < G (global): every key up to their causal end, i + 1 causal, s otherwise;
//   rows i >= G: their window [wb, we) = [max(0, i - L), min(s, i + R + 1)) (R = 0 causal) and
//     the global keys left of it, min(G, wb); none lie right of it, as we > i >= G.
// The sum is an integer (below s^2 <= 2^60), rounded to a double once.
double visible_pairs(const MaskPolicy& m, int s) {
  const std::int64_t n = s;
  const std::int64_t g = std::min<std::int64_t>(m.global_tokens, n);  // the global rows
  // A window edge past the sequence is no edge: cut L and R to s (-1, unbounded, too).
  const std::int64_t left = m.window_left < 0 ? n : std::min<std::int64_t>(m.window_left, n);
  const std::int64_t right =
      m.causal ? 0 : (m.window_right < 0 ? n : std::min<std::int64_t>(m.window_right, n));
  const std::int64_t global_rows = m.causal ? g * (g + 1) / 2 : g * n;
  const std::int64_t window = sum_clamped(g, n, right + 1, 0, n) - sum_clamped(g, n, -left, 0, n);
  const std::int64_t global_keys = sum_clamped(g, n, -left, 0, g);
  return static_cast<double>(global_rows + window + global_keys);
}

}  // namespace

const char* to_string(SparsityMode mode) {
  switch (mode) {
    case SparsityMode::dense: return "dense";
    case SparsityMode::sliding_window: return "sliding_window";
    case SparsityMode::block_sparse: return "block_sparse";
  }
  return "unknown";
}

SparsityChoice choose_sparsity(const SparsityRequest& r) {
  check_positive(r.seqlen, "seqlen");
  check_positive(r.batch, "batch");
  check_positive(r.heads, "heads");
  check_positive(r.head_dim, "head_dim");
  check_positive(r.dtype_bytes, "dtype_bytes");
  check_positive(r.max_dense_seqlen, "max_dense_seqlen");
  check_positive(r.block_size, "block_size");
  if (r.seqlen > INT32_MAX / 2) {
    invalid("seqlen " + std::to_string(r.seqlen) +
            " exceeds 2^30 - 1, the limit for a masked call");
  }
  if (r.kv_heads < 0 || (r.kv_heads > 0 && r.heads % r.kv_heads != 0)) {
    invalid("kv_heads " + std::to_string(r.kv_heads) + " does not divide heads " +
            std::to_string(r.heads) + " (0: same as heads)");
  }
  if (r.free_memory_bytes < 0) {
    invalid("free_memory_bytes " + std::to_string(r.free_memory_bytes) + " is negative");
  }
  if (r.window_hint && *r.window_hint < 0) {
    invalid("window_hint " + std::to_string(*r.window_hint) + " is negative");
  }
  if (r.global_tokens < 0) {
    invalid("global_tokens " + std::to_string(r.global_tokens) + " is negative");
  }
  if (r.block_size % 16 != 0) {
    invalid("block_size " + std::to_string(r.block_size) + " is not a multiple of 16");
  }

  const int s = static_cast<int>(r.seqlen);
  const std::int64_t hkv = r.kv_heads > 0 ? r.kv_heads : r.heads;
  const double heads_seqs = double(r.heads) * r.batch;
  // The estimates below are int64 byte counts: refuse requests whose bytes would overflow them.
  const double blocks_d = std::ceil(double(r.seqlen) / r.block_size);
  const double bytes_d = double(r.batch) * double(r.seqlen) * (2.0 * r.heads + 2.0 * double(hkv)) *
                             r.head_dim * r.dtype_bytes +
                         double(r.batch) * r.heads * double(r.seqlen) * 4 +
                         double(r.heads) * blocks_d * blocks_d;
  if (bytes_d > 4.0e18) {
    char est[32];
    std::snprintf(est, sizeof est, "%.3g", bytes_d);
    invalid(std::string("the request needs about ") + est + " bytes (batch " +
            std::to_string(r.batch) + ", seqlen " + std::to_string(r.seqlen) + ", heads " +
            std::to_string(r.heads) + ", head_dim " + std::to_string(r.head_dim) +
            "), beyond what the estimates can count (4e18)");
  }
  // Q and O: B S Hq D; K and V: B S Hkv D; LSE: fp32 B Hq S.
  const std::int64_t io =
      std::int64_t{r.batch} * r.seqlen * (2 * std::int64_t{r.heads} + 2 * hkv) * r.head_dim *
          r.dtype_bytes +
      std::int64_t{r.batch} * r.heads * r.seqlen * 4;  // 64-bit from the first product
  const std::int64_t n_blocks = (r.seqlen + r.block_size - 1) / r.block_size;
  const std::int64_t layout = std::int64_t{r.heads} * n_blocks * n_blocks;  // one per query head
  const double budget = double(r.max_dense_seqlen);
  const double density = std::min(1.0, budget / double(r.seqlen));

  SparsityChoice c;
  const double dense_pairs =
      heads_seqs * (r.causal ? double(r.seqlen) * (r.seqlen + 1) / 2 : double(r.seqlen) * r.seqlen);
  c.dense = {io, dense_pairs, io <= r.free_memory_bytes};
  c.block_sparse = {io + layout, density * dense_pairs, io + layout <= r.free_memory_bytes};

  // The window of the sliding-window mode: the hint, or the keys per row a dense call of
  // max_dense_seqlen tokens averages (half of them causal), like the block-sparse density.
  const std::int64_t wide = r.max_dense_seqlen;
  MaskPolicy w;
  w.causal = r.causal;
  if (r.window_hint) {
    w.window_left = *r.window_hint;
    w.window_right = r.causal ? 0 : *r.window_hint;
  } else {
    w.window_left = static_cast<int>(
        std::min<std::int64_t>(r.causal ? std::max<std::int64_t>(wide / 2 - 1, 0) : wide / 2, s));
    w.window_right = r.causal ? 0 : w.window_left;
  }
  w.global_tokens = r.global_tokens;
  c.sliding_window = {io, heads_seqs * visible_pairs(w, s), io <= r.free_memory_bytes};

  const std::string len = "S = " + std::to_string(r.seqlen);
  const std::string free = bytes_str(r.free_memory_bytes) + " free";
  const std::string io_str = bytes_str(io) + " for Q, K, V, O and LSE";
  const bool hint_covers = r.window_hint && *r.window_hint >= r.seqlen - 1;
  auto use_window = [&]() {
    c.mode = SparsityMode::sliding_window;
    c.window_left = w.window_left;
    c.window_right = w.window_right;
    c.global_tokens = r.global_tokens;
    c.fits = c.sliding_window.fits;
    c.reason = "sliding_window (" + std::to_string(w.window_left) + ", " +
               std::to_string(w.window_right) + ")" +
               (r.global_tokens > 0 ? " + " + std::to_string(r.global_tokens) + " global tokens"
                                    : std::string()) +
               ": " + len + " > max_dense_seqlen " + std::to_string(r.max_dense_seqlen) + "; " +
               pairs_str(c.sliding_window.visible_pairs) + " visible pairs vs " +
               pairs_str(dense_pairs) + " dense; " + io_str + ", " + free;
  };

  if (r.seqlen <= r.max_dense_seqlen || hint_covers) {
    c.mode = SparsityMode::dense;
    c.fits = c.dense.fits;
    c.reason = "dense: " + len +
               (hint_covers && r.seqlen > r.max_dense_seqlen
                    ? ", and the window hint " + std::to_string(*r.window_hint) +
                          " reaches across the whole sequence"
                    : " <= max_dense_seqlen " + std::to_string(r.max_dense_seqlen)) +
               ", so exact attention is affordable (" + pairs_str(dense_pairs) +
               " visible pairs); " + io_str + ", " + free;
  } else if (r.window_hint) {
    use_window();
    c.reason += "; the window hint keeps the work linear in S";
  } else if (c.block_sparse.fits) {
    c.mode = SparsityMode::block_sparse;
    c.fits = c.block_sparse.fits;
    c.block_size = r.block_size;
    c.max_block_density = density;
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.2f%%", 100.0 * density);
    c.reason = "block_sparse (block " + std::to_string(r.block_size) + ", at most " + pct +
               " of the blocks on): " + len + " > max_dense_seqlen " +
               std::to_string(r.max_dense_seqlen) + " and no window hint; " +
               pairs_str(c.block_sparse.visible_pairs) + " visible pairs at most vs " +
               pairs_str(dense_pairs) + " dense; " + io_str + " + " + bytes_str(layout) +
               " for the layout (" + std::to_string(r.heads) + " x " + std::to_string(n_blocks) +
               " x " + std::to_string(n_blocks) + " bytes), " + free;
  } else {
    use_window();
    c.reason += "; no window hint, and the block-sparse layout (" + bytes_str(layout) + ", total " +
                bytes_str(io + layout) + ") does not fit";
  }
  if (!c.fits) {
    c.reason += "; DOES NOT FIT: " + io_str + " alone exceed " + free +
                ", no mode fits on one device (split the batch, or shard the sequence)";
  }
  return c;
}

}  // namespace gpuattn
