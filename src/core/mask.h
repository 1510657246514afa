// Attention masks as one small policy type: which keys a query row sees, which keys a block of rows
// may see, and which tiles need no per-element mask. The CPU backend, the fp64 reference and the
// CUDA kernels all decide visibility here and nowhere else. Host-side core: no CUDA headers, no
// standard library calls (every method also runs in device code).
//
// Positions: in a sequence of lq queries and lk keys, query row i sits at key position
// p = i + (lk - lq) (bottom-right alignment, flash-attn >= 2.1). Query i sees key j (0 <= j < lk)
// iff
//   causal_ok  = !causal || j <= p
//   in_window  = (window_left < 0 || j >= p - window_left) &&
//                (window_right < 0 || j <= p + window_right)
//   global     = j is a global key || p is a global position (0 <= p, see is_global_key)
//   block_on   = no block layout, or byte (i / block_q, j / block_k) of the layout is nonzero
//   visible    = block_on && causal_ok && (in_window || global)
// Global tokens widen a sliding window; without a window every key is visible anyway, so they
// change nothing. Causal is a hard limit: a global key after the causal limit stays invisible,
// and a global query sees every key up to its causal limit. A block layout is ANDed with all of
// that: an element is visible iff its block is on and the other masks allow it. Blocks are counted
// from the first row and the first key of the sequence (row index i, not the position p).
#pragma once

#if defined(__CUDACC__)
#define GPUATTN_HD __host__ __device__ __forceinline__
#else
#define GPUATTN_HD inline
#endif

namespace gpuattn {

// Keys [begin, end) of one sequence; begin >= end means none.
struct KeyRange {
  int begin = 0;
  int end = 0;
  GPUATTN_HD bool empty() const { return begin >= end; }
};

struct MaskPolicy {
  bool causal = false;
  int window_left = -1;   // keys before the query position it sees; -1: unbounded
  int window_right = -1;  // keys after the query position it sees; -1: unbounded
  int global_tokens = 0;  // positions [0, global_tokens) are global
  int global_stride = 0;  // positions p with p % global_stride == 0 are global; 0: off
  // Block-sparse layout of one head (nullptr: none): rows [r * block_q, (r + 1) * block_q) may see
  // keys [c * block_k, (c + 1) * block_k) iff blocks[r * block_row_stride + c * block_col_stride]
  // is nonzero. The layout covers every block of the sequence (validated).
  const unsigned char* blocks = nullptr;
  long long block_row_stride = 0;
  long long block_col_stride = 0;
  int block_q = 0;
  int block_k = 0;

  GPUATTN_HD bool has_window() const { return window_left >= 0 || window_right >= 0; }
  GPUATTN_HD bool has_global() const { return global_tokens > 0 || global_stride > 0; }
  GPUATTN_HD bool has_blocks() const { return blocks != nullptr; }

  // Block (query block r, key block c) of the layout is on (has_blocks()).
  GPUATTN_HD bool block_on(int r, int c) const {
    return blocks[r * block_row_stride + c * block_col_stride] != 0;
  }

  // A global position (key index, or query position p >= 0): seen by / sees every other token.
  GPUATTN_HD bool is_global_key(int j) const {
    return j < global_tokens || (global_stride > 0 && j % global_stride == 0);
  }
  GPUATTN_HD bool is_global_query(int i, int lq, int lk) const {
    const int p = i + (lk - lq);
    return p >= 0 && is_global_key(p);
  }

  // End (exclusive) of the keys query i may see under causal alone, in [0, lk].
  GPUATTN_HD int causal_end(int i, int lq, int lk) const {
    if (!causal) return lk;
    return clamp(static_cast<long long>(i) + (lk - lq) + 1, 0, lk);
  }

  // Query row i sees key j. No intermediate overflows while lq + lk < 2^31 (validated).
  GPUATTN_HD bool visible(int i, int j, int lq, int lk) const {
    if (j < 0 || j >= lk) return false;
    if (blocks != nullptr && !block_on(i / block_q, j / block_k)) return false;
    const int rel = (j - i) - (lk - lq);  // key position minus query position
    if (causal && rel > 0) return false;
    if ((window_left < 0 || -rel <= window_left) && (window_right < 0 || rel <= window_right)) {
      return true;
    }
    return is_global_key(j) || is_global_query(i, lq, lk);
  }

  // Number of keys query row i sees (O(1); O(key blocks) with a block layout).
  GPUATTN_HD int visible_count(int i, int lq, int lk) const {
    if (blocks == nullptr) return keys_in(i, 0, lk, lq, lk);
    const int r = i / block_q;
    const int ce = causal_end(i, lq, lk);
    int n = 0;
    for (int j0 = 0, c = 0; j0 < ce; j0 += block_k, ++c) {
      const int j1 = j0 + min_(block_k, ce - j0);  // no overflow: j0 < ce <= lk
      if (block_on(r, c)) n += keys_in(i, j0, j1, lq, lk);
      if (ce - j0 <= block_k) break;
    }
    return n;
  }

  // The smallest [begin, end) holding every key that some row in [i_first, i_last] sees
  // (0 <= i_first <= i_last < lq). Keys outside it never need to be loaded for these rows. With a
  // block layout the range is cut to the first and last key block that is on for these rows: it
  // still holds every key seen, but need not be tight.
  GPUATTN_HD KeyRange key_range(int i_first, int i_last, int lq, int lk) const {
    const KeyRange r = position_key_range(i_first, i_last, lq, lk);
    if (blocks == nullptr || r.empty()) return r;
    const int r0 = i_first / block_q, r1 = i_last / block_q;
    const int c0 = r.begin / block_k, c1 = (r.end - 1) / block_k;
    int first = -1, last = -1;
    for (int c = c0; c <= c1 && first < 0; ++c) {
      for (int rb = r0; rb <= r1; ++rb) {
        if (block_on(rb, c)) {
          first = c;
          break;
        }
      }
    }
    if (first < 0) return {0, 0};
    for (int c = c1; c >= first && last < 0; --c) {
      for (int rb = r0; rb <= r1; ++rb) {
        if (block_on(rb, c)) {
          last = c;
          break;
        }
      }
    }
    const int begin = max_(r.begin, first * block_k);
    const int last_begin = last * block_k;  // < r.end <= lk: the block's end cannot overflow
    const int end = min_(r.end, last_begin + min_(block_k, r.end - last_begin));
    return {begin, end};
  }

  // Some row in [i_first, i_last] sees some key in [j_first, j_last] (exact). Tiles for which this
  // is false are skipped without loading them. With a block layout: some block of the tile that
  // is on holds a visible element (one check per block the tile overlaps).
  GPUATTN_HD bool tile_any_visible(int i_first, int i_last, int j_first, int j_last, int lq,
                                   int lk) const {
    if (blocks == nullptr) return position_tile_any(i_first, i_last, j_first, j_last, lq, lk);
    j_first = max_(j_first, 0);
    j_last = min_(j_last, lk - 1);
    if (j_first > j_last) return false;
    for (int rb = i_first / block_q; rb <= i_last / block_q; ++rb) {
      const int a = max_(i_first, rb * block_q);
      const int b = block_last(rb, block_q, i_last);
      for (int c = j_first / block_k; c <= j_last / block_k; ++c) {
        if (block_on(rb, c) && position_tile_any(a, b, max_(j_first, c * block_k),
                                                 block_last(c, block_k, j_last), lq, lk)) {
          return true;
        }
      }
    }
    return false;
  }

  // Every row in [i_first, i_last] sees every key in [j_first, j_last]: the tile needs no
  // per-element mask. Conservative: false may still be a fully visible tile. With a block layout,
  // every block the tile overlaps must be on as well.
  GPUATTN_HD bool tile_fully_visible(int i_first, int i_last, int j_first, int j_last, int lq,
                                     int lk) const {
    if (!position_tile_full(i_first, i_last, j_first, j_last, lq, lk)) return false;
    if (blocks == nullptr) return true;
    for (int rb = i_first / block_q; rb <= i_last / block_q; ++rb) {
      for (int c = j_first / block_k; c <= j_last / block_k; ++c) {
        if (!block_on(rb, c)) return false;
      }
    }
    return true;
  }

 private:
  // ---- the position mask alone (causal, window, global tokens; the block layout ignored) ------

  // Keys in [a, b) that row i sees under the position mask (O(1)).
  GPUATTN_HD int keys_in(int i, int a, int b, int lq, int lk) const {
    const int ce = causal_end(i, lq, lk);
    a = max_(a, 0);
    b = min_(b, ce);
    if (a >= b) return 0;
    if (!has_window() || is_global_query(i, lq, lk)) return b - a;
    const KeyRange w = window_keys(i, i, lq, lk, ce);
    const int wb = max_(a, w.begin), we = min_(b, w.end);
    int n = we > wb ? we - wb : 0;
    if (has_global()) {
      n += global_keys_below(b) - global_keys_below(a);
      if (we > wb) n -= global_keys_below(we) - global_keys_below(wb);
    }
    return n;
  }

  // The smallest [begin, end) holding every key some row in [i_first, i_last] sees (tight).
  GPUATTN_HD KeyRange position_key_range(int i_first, int i_last, int lq, int lk) const {
    const int ce = causal_end(i_last, lq, lk);  // no row of the block sees a key at or past ce
    if (ce <= 0) return {0, 0};
    if (!has_window()) return {0, ce};
    const KeyRange w = window_keys(i_first, i_last, lq, lk, ce);
    if (!has_global()) return w.empty() ? KeyRange{0, 0} : w;
    // Key 0 is global and below ce, so row i_last sees it.
    int end = w.empty() ? 0 : w.end;
    end = max_(end, last_global_key_below(ce) + 1);
    const int g = last_global_query(i_first, i_last, lq, lk);
    if (g >= 0) end = max_(end, causal_end(g, lq, lk));
    return {0, end};
  }

  // Position-mask tile_any_visible (exact).
  GPUATTN_HD bool position_tile_any(int i_first, int i_last, int j_first, int j_last, int lq,
                                    int lk) const {
    const KeyRange r = position_key_range(i_first, i_last, lq, lk);
    j_first = max_(j_first, r.begin);
    j_last = min_(j_last, r.end - 1);
    if (j_first > j_last) return false;
    if (!has_window()) return true;  // the range is a causal prefix: all of it is seen
    const int ce = causal_end(i_last, lq, lk);
    const KeyRange w = window_keys(i_first, i_last, lq, lk, ce);
    if (j_first < w.end && j_last >= w.begin) return true;
    if (!has_global()) return false;
    const int g = last_global_query(i_first, i_last, lq, lk);
    if (g >= 0 && j_first < causal_end(g, lq, lk)) return true;
    // A global key in [j_first, j_last] (all below ce here): row i_last sees it.
    return global_keys_below(j_last + 1) > global_keys_below(j_first);
  }

  // Position-mask tile_fully_visible (conservative).
  GPUATTN_HD bool position_tile_full(int i_first, int i_last, int j_first, int j_last, int lq,
                                     int lk) const {
    if (j_first < 0 || j_last >= lk) return false;
    const long long d = static_cast<long long>(lk) - lq;
    if (causal && j_last > i_first + d) return false;
    if (!has_window()) return true;
    const bool left_ok = window_left < 0 || j_first >= i_last + d - window_left;
    const bool right_ok = window_right < 0 || j_last <= i_first + d + window_right;
    if (left_ok && right_ok) return true;
    if (j_last < global_tokens || global_stride == 1) return true;  // every key global
    return i_first + d >= 0 && i_last + d < global_tokens;          // every row global
  }

  // Last index of block n (of `size`) that is <= last: min(last, (n + 1) * size - 1) without
  // overflow (n * size <= last).
  GPUATTN_HD static int block_last(int n, int size, int last) {
    const int first = n * size;
    return last - first < size ? last : first + size - 1;
  }

  // ---- helpers ---------------------------------------------------------------------------------
  GPUATTN_HD static int min_(int a, int b) { return a < b ? a : b; }
  GPUATTN_HD static int max_(int a, int b) { return a > b ? a : b; }
  GPUATTN_HD static int clamp(long long x, int lo, int hi) {
    return x < lo ? lo : (x > hi ? hi : static_cast<int>(x));
  }
  GPUATTN_HD static int ceil_div(int a, int b) { return a / b + (a % b != 0); }  // a >= 0, b > 0

  // Union of the window bands of rows [i_first, i_last], clipped to [0, ce). Consecutive rows
  // shift the band by one key, so the union is one interval.
  GPUATTN_HD KeyRange window_keys(int i_first, int i_last, int lq, int lk, int ce) const {
    const long long d = static_cast<long long>(lk) - lq;
    const int b = window_left < 0 ? 0 : clamp(i_first + d - window_left, 0, ce);
    const int e = window_right < 0 ? ce : clamp(i_last + d + window_right + 1, 0, ce);
    return {b, e > b ? e : b};
  }

  // Global keys in [0, n), n >= 0.
  GPUATTN_HD int global_keys_below(int n) const {
    const int g = min_(global_tokens, n);
    return global_stride > 0 ? g + ceil_div(n, global_stride) - ceil_div(g, global_stride) : g;
  }
  // Largest global key below n (n > 0, has_global()).
  GPUATTN_HD int last_global_key_below(int n) const {
    int last = min_(global_tokens, n) - 1;
    if (global_stride > 0) last = max_(last, (n - 1) / global_stride * global_stride);
    return last;
  }
  // Last row in [i_first, i_last] at a global position, or -1.
  GPUATTN_HD int last_global_query(int i_first, int i_last, int lq, int lk) const {
    const int d = lk - lq;
    const int lo = max_(i_first + d, 0), hi = i_last + d;  // positions of the rows
    if (lo > hi) return -1;
    int p = min_(hi, global_tokens - 1);
    if (global_stride > 0) p = max_(p, hi / global_stride * global_stride);
    return p >= lo ? p - d : -1;
  }
};

}  // namespace gpuattn
