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
//   visible    = causal_ok && (in_window || global)
// Global tokens widen a sliding window; without a window every key is visible anyway, so they
// change nothing. Causal is a hard limit: a global key after the causal limit stays invisible,
// and a global query sees every key up to its causal limit.
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

  GPUATTN_HD bool has_window() const { return window_left >= 0 || window_right >= 0; }
  GPUATTN_HD bool has_global() const { return global_tokens > 0 || global_stride > 0; }

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
    const int rel = (j - i) - (lk - lq);  // key position minus query position
    if (causal && rel > 0) return false;
    if ((window_left < 0 || -rel <= window_left) && (window_right < 0 || rel <= window_right)) {
      return true;
    }
    return is_global_key(j) || is_global_query(i, lq, lk);
  }

  // Number of keys query row i sees (O(1)).
  GPUATTN_HD int visible_count(int i, int lq, int lk) const {
    const int ce = causal_end(i, lq, lk);
    if (ce <= 0) return 0;
    if (!has_window() || is_global_query(i, lq, lk)) return ce;
    const KeyRange w = window_keys(i, i, lq, lk, ce);
    int n = w.end - w.begin;
    if (has_global()) {
      n += global_keys_below(ce) - (global_keys_below(w.end) - global_keys_below(w.begin));
    }
    return n;
  }

  // The smallest [begin, end) holding every key that some row in [i_first, i_last] sees
  // (0 <= i_first <= i_last < lq). Keys outside it never need to be loaded for these rows.
  GPUATTN_HD KeyRange key_range(int i_first, int i_last, int lq, int lk) const {
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

  // Some row in [i_first, i_last] sees some key in [j_first, j_last] (exact). Tiles for which this
  // is false are skipped without loading them.
  GPUATTN_HD bool tile_any_visible(int i_first, int i_last, int j_first, int j_last, int lq,
                                   int lk) const {
    const KeyRange r = key_range(i_first, i_last, lq, lk);
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

  // Every row in [i_first, i_last] sees every key in [j_first, j_last]: the tile needs no
  // per-element mask. Conservative: false may still be a fully visible tile.
  GPUATTN_HD bool tile_fully_visible(int i_first, int i_last, int j_first, int j_last, int lq,
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

 private:
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
