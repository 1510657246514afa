// The one params struct of the attention-forward family: validated once at the public boundary,
// then read by every backend (CPU loops and CUDA kernels, passed as `const __grid_constant__`).
// Host-side core: no CUDA headers here.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/mask.h"
#include "gpuattn/attention.h"

namespace gpuattn {

struct FwdParams {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;
  float* lse = nullptr;  // nullptr: not requested

  // Element strides. For varlen the batch strides are 0 and rows start at cu_seqlens[b].
  std::int64_t q_batch_stride = 0, q_row_stride = 0, q_head_stride = 0;
  std::int64_t k_batch_stride = 0, k_row_stride = 0, k_head_stride = 0;
  std::int64_t v_batch_stride = 0, v_row_stride = 0, v_head_stride = 0;
  std::int64_t o_batch_stride = 0, o_row_stride = 0, o_head_stride = 0;
  std::int64_t lse_batch_stride = 0, lse_head_stride = 0, lse_row_stride = 0;

  const std::int32_t* cu_seqlens_q = nullptr;  // nullptr: dense
  const std::int32_t* cu_seqlens_k = nullptr;

  int batch = 0;
  int hq = 0;
  int hkv = 0;
  int head_dim = 0;
  int seqlen_q = 0;          // dense: Sq; varlen: max_seqlen_q
  int seqlen_k = 0;          // dense: Sk; varlen: max_seqlen_k
  std::int64_t total_q = 0;  // rows of q over the whole batch (B*Sq dense, total_q varlen)
  std::int64_t total_k = 0;

  float scale = 0.f;       // softmax scale applied to q.k
  float scale_log2 = 0.f;  // scale * log2(e), for exp2-based softmax (softcap * log2(e) below)
  // AttentionArgs::softcap: a soft-capped score is softcap * tanh(q.k * softcap_pre), softcap_pre
  // = scale / softcap; both 0 for none (has_softcap).
  float softcap_pre = 0.f;
  float softcap = 0.f;
  // The largest cap the GPU kernels' fast tanh serves (ptx::tanh_of_log2; above it the exact one,
  // ptx::tanh_of_log2_exact): its logits' error, softcap * 2.5e-7, is at most 6.4e-5 there (Gemma 2
  // caps at 30 and 50); a cap of 1e7, nearly no cap at all, would move every logit by up to 2.5.
  // The sm_90a kernels compile the fast form only: calls capped above it run the sm_80 kernel on
  // Hopper too (pick_forward_kernel), where the exact one's second tile loop costs nothing.
  static constexpr float kFastTanhMaxCap = 256.f;
  GPUATTN_HD bool exact_tanh() const { return softcap > kFastTanhMaxCap; }

  DType dtype = DType::f16;
  Device device = Device::cpu;
  int device_index = 0;
  bool causal = false;
  // Sliding window and global tokens (AttentionArgs::mask); read them through mask(), which joins
  // them with `causal` into the one visibility rule.
  int window_left = -1;
  int window_right = -1;
  int global_tokens = 0;
  int global_stride = 0;
  // Block-sparse layout (AttentionArgs::mask.block_sparse), read through mask(h): block (r, c) of
  // query head h is on iff block_layout[h * block_head_stride + r * block_row_stride +
  // c * block_col_stride] != 0 (head stride 0 for a layout shared by all heads). Same device as q.
  const std::uint8_t* block_layout = nullptr;  // nullptr: no layout
  std::int64_t block_head_stride = 0, block_row_stride = 0, block_col_stride = 0;
  int block_q = 0;  // query rows per block (a multiple of 16)
  int block_k = 0;  // keys per block (a multiple of 16)
  Precision precision = Precision::standard;
  int num_threads = 0;
  // Dense only: keys used per sequence (nullptr: Sk), read through keys_used(). Last in the struct,
  // so the prefill kernels, which never read it, keep their parameter offsets (and SASS).
  const std::int32_t* seqused_k = nullptr;
  // Dense only: a paged K/V cache (nullptr: none). k/v point at the page pool; k/v_batch_stride
  // are then the pool's page strides, and key j of sequence b is row j % page_size of page
  // block_table[b * block_table_stride + j / page_size]. seqlen_k is the logical length,
  // max_pages * page_size. After seqused_k for the same reason.
  const std::int32_t* block_table = nullptr;
  std::int64_t block_table_stride = 0;
  int page_size = 0;
  int num_pages = 0;
  // AttentionArgs::check_indices: the CUDA host side checks index arrays on a host copy.
  bool check_indices = true;
  // A quantized K/V cache (AttentionArgs::k_scale; nullptr: none): k/v hold kv_dtype (i8, e4m3)
  // and element x of KV head hk stands for x * k_scale[hk * kv_scale_stride] (v: v_scale). Read
  // by the CPU backend, the reference and the decode kernel; every other CUDA kernel runs on a
  // dequantized copy. kv_dtype is k's dtype (== dtype unless quantized).
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  int kv_scale_stride = 0;  // 1: a scale per KV head; 0: one for every head
  DType kv_dtype = DType::f16;
  // AttentionArgs::counters (nullptr: none): the caller's zeroed int32 counters and their count.
  std::int32_t* counters = nullptr;
  std::int64_t counters_count = 0;
  bool pdl = false;        // AttentionArgs::pdl (the decode kernels' launch)
  bool pdl_early = false;  // pdl and AttentionArgs::pdl_cache_ready
  // FP8 attention (AttentionArgs::q_scale; nullptr: none): q holds e4m3 and element x of query
  // head h stands for x * q_scale[h * q_scale_stride]; k/v are then an e4m3 cache and `dtype` is
  // out's (the dtype the call computes in). Last, so that no other kernel's parameters move.
  const float* q_scale = nullptr;
  int q_scale_stride = 0;  // q_scale's stride in floats (a scale a head); 0: one for every head
  // Dense only: the first key each sequence uses (AttentionArgs::leftpad_k; nullptr: 0), read
  // through key_start(): sequence b attends to logical keys key_start(b) .. keys_end(b) - 1, key j
  // of the call (j from 0, what masks count) at logical position key_start(b) + j. Read by the
  // CPU backend, the reference, the sm_80 kernel, the decode kernels (dense and paged) and the
  // gather; last, so that no other kernel's parameters move.
  const std::int32_t* leftpad_k = nullptr;
  // AttentionArgs::alibi_slopes (nullptr: none), read through alibi_slope(b, h): the score of
  // query i and key j (as the masks count them) gets -slope * |i + keys_used(b) - len_q(b) - j|
  // in natural-log units. alibi_raw = log2(e) / scale_log2 turns a slope into the units of the
  // kernels' scores before their scale_log2 (1 / scale, or 1 / softcap when capped). Read by the
  // CPU backend, the reference, the sm_80 kernel's masked instantiations, the sm_90a dense loop
  // (FwdTraits::kAlibi) and the 16-bit decode kernel; last, so that no other kernel's parameters
  // move.
  const float* alibi_slopes = nullptr;
  std::int64_t alibi_batch_stride = 0;  // 0: one slope a head for every sequence ([Hq])
  float alibi_raw = 0.f;

  GPUATTN_HD bool is_varlen() const { return cu_seqlens_q != nullptr; }
  GPUATTN_HD bool kv_quantized() const { return k_scale != nullptr; }
  GPUATTN_HD bool q_quantized() const { return q_scale != nullptr; }
  GPUATTN_HD bool has_softcap() const { return softcap_pre != 0.f; }
  GPUATTN_HD bool has_alibi() const { return alibi_slopes != nullptr; }
  GPUATTN_HD float alibi_slope(int b, int h) const {
    return alibi_slopes[b * alibi_batch_stride + h];
  }
  // The rows of Hq slopes the call reads: 1 (one for every sequence), or the batch.
  int alibi_rows() const { return alibi_batch_stride == 0 ? 1 : batch; }
  GPUATTN_HD float q_scale_of(int h) const { return q_scale[h * q_scale_stride]; }
  GPUATTN_HD float k_scale_of(int hk) const { return k_scale[hk * kv_scale_stride]; }
  GPUATTN_HD float v_scale_of(int hk) const { return v_scale[hk * kv_scale_stride]; }
  GPUATTN_HD int group_size() const { return hq / hkv; }
  GPUATTN_HD int kv_head(int h) const { return h / (hq / hkv); }

  // Sequence lengths and first rows of batch entry b (cu_seqlens must be readable from the caller:
  // host memory on the CPU, device memory inside kernels).
  GPUATTN_HD int len_q(int b) const {
    return cu_seqlens_q ? cu_seqlens_q[b + 1] - cu_seqlens_q[b] : seqlen_q;
  }
  GPUATTN_HD int len_k(int b) const {
    return cu_seqlens_k ? cu_seqlens_k[b + 1] - cu_seqlens_k[b] : seqlen_k;
  }
  // The keys sequence b attends to: len_k(b), or seqused_k[b] when given, less the leftpad_k[b]
  // keys before its first. Read by the CPU backend, the reference, the decode kernels and the
  // sm_80 kernel, the paths that take seqused_k and leftpad_k (the sm_90a kernel keeps len_k, so
  // its code does not carry the test).
  GPUATTN_HD int keys_used(int b) const { return keys_end(b) - key_start(b); }
  // The logical end of sequence b's keys: len_k(b), or seqused_k[b].
  GPUATTN_HD int keys_end(int b) const { return seqused_k ? seqused_k[b] : len_k(b); }
  // The logical position of sequence b's first key: leftpad_k[b], or 0.
  GPUATTN_HD int key_start(int b) const { return leftpad_k ? leftpad_k[b] : 0; }
  // Either of the per-sequence key arrays (only the decode and sm_80 kernels read them).
  GPUATTN_HD bool has_key_range() const { return seqused_k != nullptr || leftpad_k != nullptr; }
  GPUATTN_HD std::int64_t row0_q(int b) const { return cu_seqlens_q ? cu_seqlens_q[b] : 0; }
  GPUATTN_HD std::int64_t row0_k(int b) const { return cu_seqlens_k ? cu_seqlens_k[b] : 0; }

  // Element offsets of (batch b, row i within the sequence, head h).
  GPUATTN_HD std::int64_t q_offset(int b, std::int64_t i, int h) const {
    return b * q_batch_stride + (row0_q(b) + i) * q_row_stride + h * q_head_stride;
  }
  // K and V follow the block table when there is one (the table must be readable from the caller:
  // the CPU backend, the reference, the CUDA gather of a paged call). Key j of the call is the
  // sequence's logical key key_start(b) + j.
  GPUATTN_HD std::int64_t k_offset(int b, std::int64_t j, int hk) const {
    if (block_table != nullptr) {
      const std::int64_t pos = key_start(b) + j;
      return page_of(b, pos) * k_batch_stride + (pos % page_size) * k_row_stride +
             hk * k_head_stride;
    }
    return k_offset_unpaged(b, j, hk);
  }
  GPUATTN_HD std::int64_t v_offset(int b, std::int64_t j, int hk) const {
    if (block_table != nullptr) {
      const std::int64_t pos = key_start(b) + j;
      return page_of(b, pos) * v_batch_stride + (pos % page_size) * v_row_stride +
             hk * v_head_stride;
    }
    return v_offset_unpaged(b, j, hk);
  }
  // The same for a call without a block table: what the CUDA kernels read by row strides (no
  // paged call reaches them: decode_16x64 reads pages itself, every other kernel a gathered copy).
  GPUATTN_HD std::int64_t k_offset_unpaged(int b, std::int64_t j, int hk) const {
    return k_row_offset(b, row0_k(b) + key_start(b) + j, hk);
  }
  GPUATTN_HD std::int64_t v_offset_unpaged(int b, std::int64_t j, int hk) const {
    return v_row_offset(b, row0_k(b) + key_start(b) + j, hk);
  }
  // The same with the row counted from the tensor's first (row0_k(b) + j for varlen): for kernels
  // that read row0_k(b) once, since reading it per row reloaded cu_seqlens_k[b] after every
  // barrier (the decode kernels).
  GPUATTN_HD std::int64_t k_row_offset(int b, std::int64_t row, int hk) const {
    return b * k_batch_stride + row * k_row_stride + hk * k_head_stride;
  }
  GPUATTN_HD std::int64_t v_row_offset(int b, std::int64_t row, int hk) const {
    return b * v_batch_stride + row * v_row_stride + hk * v_head_stride;
  }
  GPUATTN_HD bool is_paged() const { return block_table != nullptr; }
  // The pool page holding logical key j of sequence b (paged calls only).
  GPUATTN_HD std::int64_t page_of(int b, std::int64_t j) const {
    return block_table[b * block_table_stride + j / page_size];
  }
  GPUATTN_HD std::int64_t o_offset(int b, std::int64_t i, int h) const {
    return b * o_batch_stride + (row0_q(b) + i) * o_row_stride + h * o_head_stride;
  }
  GPUATTN_HD std::int64_t lse_offset(int b, std::int64_t i, int h) const {
    return b * lse_batch_stride + h * lse_head_stride + (row0_q(b) + i) * lse_row_stride;
  }

  GPUATTN_HD bool has_block_layout() const { return block_layout != nullptr; }

  // The mask of query head h (causal, window, global tokens and the head's block layout) as the
  // shared policy of core/mask.h.
  GPUATTN_HD MaskPolicy mask(int h) const {
    MaskPolicy m = mask();
    if (block_layout != nullptr) {
      m.blocks = block_layout + h * block_head_stride;
      m.block_row_stride = block_row_stride;
      m.block_col_stride = block_col_stride;
      m.block_q = block_q;
      m.block_k = block_k;
    }
    return m;
  }
  // The position mask alone (causal, window, global tokens): the same for every head, and the
  // whole mask of a call without a block layout. Block-sparse calls must read mask(h).
  GPUATTN_HD MaskPolicy mask() const {
    MaskPolicy m;
    m.causal = causal;
    m.window_left = window_left;
    m.window_right = window_right;
    m.global_tokens = global_tokens;
    m.global_stride = global_stride;
    return m;
  }
  // Neither a window, global tokens nor a block layout: every key up to the causal limit (if any)
  // is visible.
  GPUATTN_HD bool dense_or_causal() const {
    return !mask().has_window() && !mask().has_global() && !has_block_layout();
  }

  // A sliding window (with or without causal) and nothing else: no global tokens, no block
  // layout. The sm_90a kernel runs these on its dense instantiation, tiles from the window's
  // first.
  GPUATTN_HD bool banded() const {
    return mask().has_window() && !mask().has_global() && !has_block_layout();
  }

  // A block layout and nothing else (no causal, window or global tokens) whose blocks are whole
  // row blocks of `block_m` rows and whole key tiles of `block_n` keys (block_q and block_k
  // multiples of them): every key tile of a row block is then seen by all of the block's rows or
  // by none (keys past the sequence end aside). The sm_90a kernel runs these on its dense
  // instantiation, loading only the tiles whose layout block is on (LayoutTiles).
  GPUATTN_HD bool whole_tile_layout(int block_m, int block_n) const {
    return has_block_layout() && !causal && !mask().has_window() && !mask().has_global() &&
           block_q % block_m == 0 && block_k % block_n == 0;
  }

  // Number of keys query row i of head h sees (bottom-right aligned; in [0, lk]).
  GPUATTN_HD int visible_keys(int i, int lq, int lk, int h) const {
    return mask(h).visible_count(i, lq, lk);
  }
};

// The key tiles of `block_n` keys that the rows [m0, m0 + block_m) of query head h see under a
// whole_tile_layout(block_m, block_n) (m0 a multiple of block_m): tile t iff the layout block
// (m0 / block_q, t * block_n / block_k) is on.
struct LayoutTiles {
  const std::uint8_t* row;  // the row block's layout row
  std::int64_t col_stride;
  int tiles_per_block;  // block_k / block_n
  GPUATTN_HD LayoutTiles(const FwdParams& p, int h, int m0, int block_n)
      : row(p.block_layout + h * p.block_head_stride +
            static_cast<std::int64_t>(m0 / p.block_q) * p.block_row_stride),
        col_stride(p.block_col_stride),
        tiles_per_block(p.block_k / block_n) {}
  GPUATTN_HD bool on(int t) const { return row[(t / tiles_per_block) * col_stride] != 0; }
};

// The keys a query row at key position `pos` (its row + lk - lq) sees under the position mask:
// [lo, hi) (its window, or every key below ce for a row without a window or at a global position)
// and the global keys below ce, its causal end (lk without causal). The sm_90a kernel masks S with
// it per element.
struct RowKeys {
  int lo, hi, ce;
};
GPUATTN_HD RowKeys row_keys(const FwdParams& p, int pos, int lk) {
  RowKeys k;
  k.ce = p.causal ? (pos + 1 < 0 ? 0 : pos + 1 < lk ? pos + 1 : lk) : lk;
  k.lo = 0;
  k.hi = k.ce;
  const bool window = p.window_left >= 0 || p.window_right >= 0;
  const bool global_row =
      pos >= 0 && (pos < p.global_tokens || (p.global_stride > 0 && pos % p.global_stride == 0));
  if (window && !global_row) {
    if (p.window_left >= 0 && p.window_left < pos) k.lo = pos - p.window_left;
    if (p.window_right >= 0 && p.window_right < lk - pos) {
      const int end = pos + p.window_right + 1;
      k.hi = end < 0 ? 0 : end < k.hi ? end : k.hi;
    }
  }
  return k;
}

// A sliding window alone (p.banded()) on the sm_90a kernel's dense instantiation: the key tiles
// [t_first, t_first + n_tiles) of block_n keys that hold every key some query row of
// [m0, min(m0 + rows, lq)) sees (n_tiles 0: none; m0 < lq).
struct BandTiles {
  int t_first = 0;
  int n_tiles = 0;
};
GPUATTN_HD BandTiles band_tiles(const FwdParams& p, int m0, int rows, int block_n, int lq, int lk) {
  const int last = m0 + rows < lq ? m0 + rows - 1 : lq - 1;
  const KeyRange r = p.mask().key_range(m0, last, lq, lk);
  BandTiles t;
  if (!r.empty()) {
    t.t_first = r.begin / block_n;
    t.n_tiles = (r.end + block_n - 1) / block_n - t.t_first;
  }
  return t;
}

// The keys every query row of [first, last] (last < lq) sees under a window alone: [lo, hi), empty
// when lo >= hi. A row's first and end key grow with the row, so lo is the last row's first key
// and hi the first row's end; a tile inside [lo, hi) needs no per-element mask for these rows.
GPUATTN_HD KeyRange common_keys(const FwdParams& p, int first, int last, int lq, int lk) {
  return {row_keys(p, last + lk - lq, lk).lo, row_keys(p, first + lk - lq, lk).hi};
}

// Whether the sm_90a kernels' TMA tensor maps can describe q, k, v and out (dense or varlen,
// not paged): every stride that steps over more than one index positive and under 2^40 bytes (a
// map takes a size-1 dimension's stride as free, and none can be zero or negative). A broadcast
// view (stride 0 over heads or batches of size > 1, e.g. expanded K/V heads) or a negative stride
// runs the kernels that address by offsets instead.
GPUATTN_HD bool strides_fit_tma(const FwdParams& p) {
  const bool varlen = p.is_varlen();
  const std::int64_t rows_q = varlen ? p.total_q : p.seqlen_q;
  const std::int64_t rows_k = varlen ? p.total_k : p.seqlen_k;
  const std::int64_t batch = varlen ? 1 : p.batch;
  const auto ok = [](std::int64_t stride, std::int64_t size) {
    return size <= 1 || (stride > 0 && stride < (std::int64_t{1} << 39));  // 2-byte elements
  };
  return ok(p.q_head_stride, p.hq) && ok(p.q_row_stride, rows_q) && ok(p.q_batch_stride, batch) &&
         ok(p.o_head_stride, p.hq) && ok(p.o_row_stride, rows_q) && ok(p.o_batch_stride, batch) &&
         ok(p.k_head_stride, p.hkv) && ok(p.k_row_stride, rows_k) && ok(p.k_batch_stride, batch) &&
         ok(p.v_head_stride, p.hkv) && ok(p.v_row_stride, rows_k) && ok(p.v_batch_stride, batch);
}

// A __grid_constant__ kernel parameter: raw pointers and plain values only.
static_assert(std::is_trivially_copyable_v<FwdParams>, "FwdParams is copied to the GPU as bytes");

// Validates everything about `args` that can be checked without touching device memory and builds
// the params. cu_seqlens contents are checked here when they live on the host; device-resident
// cu_seqlens are checked by the CUDA backend through check_cu_seqlens() on a host copy.
// Throws gpuattn::Error naming the offending value.
FwdParams make_fwd_params(const AttentionArgs& args);

// Enum values a C++ caller may have cast from a wrong integer, refused by name rather than read as
// a default. check_place_values: `t`'s device (cpu, cuda) and dtype; check_backend_value: a
// Backend. `fn` prefixes the message ("gpuattn::append_kv").
void check_place_values(const TensorView& t, const char* name, const char* fn);
void check_backend_value(Backend backend, const char* fn);

// Whether the bytes two views span (from their lowest to their highest element, whatever the
// strides) intersect: on the same device, neither empty. A test of the spans, so two interleaved
// views that share no element (k and v of one packed tensor) count as overlapping too.
bool spans_overlap(const TensorView& a, const TensorView& b);

// Whether a and b share a byte: exact for two views of one shape, strides and element size (out
// beside q, k and v in one packed buffer, [B, S, 4, H, D] sliced at dimension 2, shares none),
// where their strides are nested (each at least the bytes the smaller ones span); by the spans
// (spans_overlap) otherwise, which may say yes for views that share nothing, never no for views
// that share something.
bool views_share_bytes(const TensorView& a, const TensorView& b);

// Whether two elements of `t` may share an address (a zero stride over more than one element, or a
// stride inside another dimension's span): a written view must not.
bool view_self_overlapping(const TensorView& t);

// Whether a and b are one view (pointer, dtype, place, shape; strides where a size is above 1): an
// output that is its input, in place.
bool same_view(const TensorView& a, const TensorView& b);

// "[2, 3, 4]": a view's shape in a message (sizes past kMaxRank as "...").
std::string shape_str(const TensorView& t);

// Checks host copies of a quantized call's scales (`n` entries each, packed): every one positive
// and finite. `fn` names the entry point in the message.
void check_kv_scales(const float* k_scale, const float* v_scale, int n, const char* fn);

// Checks host copies of an FP8 call's q_scale (`n` entries, packed): every one positive and finite.
void check_q_scales(const float* q_scale, int n, const char* fn);

// Checks host copies of AttentionArgs::alibi_slopes (`batch` x `hq` slopes, packed; batch 1 for
// a slope a head): each finite, with its bias over any key distance below 2^31 a float32 in the
// kernels' units (alibi_raw = FwdParams::alibi_raw; `capped`: a soft-capped call, for the
// message). `fn` names the entry point in the message.
void check_alibi_slopes(const float* slopes, int batch, int hq, float alibi_raw, bool capped,
                        const char* fn);

// Validates AttentionArgs::q_scale of an FP8 call: float32 [hq] or [1], 4-byte aligned, on q's
// device; on the host its values too. Returns its stride (the view's, for a scale a head; 0 for
// one scale).
int check_q_scale_view(const TensorView& q_scale, int hq, const TensorView& q);

// Validates the scale tensors of a quantized cache of `kv` dtype (AttentionArgs and AppendKvArgs
// k_scale / v_scale): both present for an i8/e4m3 cache, both absent otherwise; float32 [hkv] or
// [1], 4-byte aligned, on the device of `ref` (named `ref_name`); on the host their values are
// checked too. Returns the scale stride (1 per head, 0 for one scale). `fn` prefixes messages.
int check_kv_scale_views(const TensorView& k_scale, const TensorView& v_scale, DType kv, int hkv,
                         const TensorView& ref, const char* ref_name, const char* fn);

// Whether `t` is the dtype of a quantized KV cache (i8, e4m3).
inline bool is_quantized_kv(DType t) {
  return t == DType::i8 || t == DType::e4m3;
}

// Checks a host copy of seqused_k: every entry in [0, seqlen_k].
void check_seqused_k(const std::int32_t* used, int batch, int seqlen_k);

// Checks a host copy of leftpad_k against the keys' ends (`used`[b], or seqlen_k when `used` is
// null; already checked): every entry in [0, end].
void check_leftpad_k(const std::int32_t* start, const std::int32_t* used, int batch, int seqlen_k);

// Checks a host copy of a paged call's block table (p.block_table_stride entries a row): the
// entries of the pages each sequence uses (its logical keys `start`[b] (0 when null) ..
// `used`[b] (p.seqlen_k when null)) are in [0, p.num_pages).
void check_block_table(const FwdParams& p, const std::int32_t* table, const std::int32_t* used,
                       const std::int32_t* start = nullptr);

// Checks a host copy of cu_seqlens: starts at 0, non-decreasing, ends at `total`, and no length
// exceeds `max_seqlen`. `name` is used in messages ("cu_seqlens_q").
void check_cu_seqlens(const std::int32_t* cu, int batch, std::int64_t total, int max_seqlen,
                      const char* name);

// Attention FLOPs (2 GEMMs, 2 flops per multiply-add) of visible elements only. With a block
// layout, p.block_layout must be readable from the host (a host copy for CUDA calls).
double attention_flops(const FwdParams& p, const std::int32_t* host_cu_q = nullptr,
                       const std::int32_t* host_cu_k = nullptr);

}  // namespace gpuattn
