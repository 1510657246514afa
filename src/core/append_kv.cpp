#include "core/append_kv.h"

#include <cstdint>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/fwd_params.h"
#include "core/rotary.h"

namespace gpuattn {
namespace {

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(ErrorCode::invalid_argument, "gpuattn::append_kv: " + msg);
}

// A rank-4 operand: present, non-negative sizes, head dim contiguous, other strides multiples of
// 16 bytes, 16-byte aligned, on `where`'s device.
void check_operand(const TensorView& t, const char* name, const char* layout,
                   const TensorView& where) {
  if (t.data == nullptr) invalid(std::string(name) + " is a null pointer");
  check_place_values(t, name, "gpuattn::append_kv");
  if (t.rank != 4) {
    invalid(std::string(name) + " has rank " + std::to_string(t.rank) + " (shape " + shape_str(t) +
            "), expected rank 4 " + layout);
  }
  const auto es = static_cast<std::int64_t>(element_size(t.dtype));
  for (int i = 0; i < 4; ++i) {
    if (t.shape[i] <= 0) {
      invalid(std::string(name) + " has shape " + shape_str(t) + ": every size must be positive");
    }
    if (t.stride[i] < 0) {
      invalid(std::string(name) + " has a negative stride " + std::to_string(t.stride[i]) +
              " in dimension " + std::to_string(i));
    }
  }
  if (t.stride[3] != 1) {
    invalid(std::string(name) + " last-dimension stride is " + std::to_string(t.stride[3]) +
            ", must be 1 (head dim contiguous)");
  }
  for (int i = 0; i < 3; ++i) {
    if (t.stride[i] % (16 / es) != 0) {  // (stride x es) % 16 without the product's overflow
      invalid(std::string(name) + " stride " + std::to_string(t.stride[i]) + " of dimension " +
              std::to_string(i) + " is not a multiple of 16 bytes");
    }
  }
  if (reinterpret_cast<std::uintptr_t>(t.data) % 16 != 0) {
    invalid(std::string(name) + " pointer is not 16-byte aligned");
  }
  if (t.device != where.device ||
      (t.device == Device::cuda && t.device_index != where.device_index)) {
    invalid(std::string(name) + " is on " + to_string(t.device) + ":" +
            std::to_string(t.device_index) + " but k_cache is on " + to_string(where.device) + ":" +
            std::to_string(where.device_index));
  }
}

// An int32 index array of `rank` dimensions, last stride 1, on `where`'s device.
void check_index_array(const TensorView& t, const char* name, int rank, const TensorView& where) {
  if (t.data == nullptr) invalid(std::string(name) + " is a null pointer");
  if (t.dtype != DType::i32) {
    invalid(std::string(name) + " has dtype " + to_string(t.dtype) + ", expected int32");
  }
  if (t.rank != rank) {
    invalid(std::string(name) + " has rank " + std::to_string(t.rank) + ", expected " +
            std::to_string(rank));
  }
  if (t.stride[rank - 1] != 1) {
    invalid(std::string(name) + " last-dimension stride is " + std::to_string(t.stride[rank - 1]) +
            ", must be 1");
  }
  if (rank == 2 && t.stride[0] < 0) invalid(std::string(name) + " has a negative stride");
  if (reinterpret_cast<std::uintptr_t>(t.data) % 4 != 0) {
    std::ostringstream msg;
    msg << name << " pointer " << t.data << " is not 4-byte aligned";
    invalid(msg.str());
  }
  if (t.device != where.device ||
      (t.device == Device::cuda && t.device_index != where.device_index)) {
    invalid(std::string(name) + " is not on the caches' device");
  }
}

// q's rotation validated by apply_rotary's own checks (positions aside: check_append_indices takes
// them), its errors in append_kv's names: x -> q, out -> q_out, cos/sin -> rotary_cos/rotary_sin.
RotaryParams q_rotary_params(const AppendKvArgs& a) {
  RotaryArgs r;
  r.x = a.q;
  r.out = a.q_out;
  r.cos = a.rotary_cos;
  r.sin = a.rotary_sin;
  r.interleaved = a.rotary_interleaved;
  r.same_position = true;  // with offset 0 the position check cannot fail here
  r.check_indices = false;
  r.backend = a.backend;
  RotaryParams p;
  try {
    p = make_rotary_params(r);
  } catch (const Error& e) {
    std::string msg = std::regex_replace(e.what(), std::regex("gpuattn::apply_rotary"),
                                         "gpuattn::append_kv");
    for (const auto& [from, to] : {std::pair{"\\bout\\b", "q_out"}, std::pair{"\\bx\\b", "q"},
                                   std::pair{"\\bcos\\b", "rotary_cos"},
                                   std::pair{"\\bsin\\b", "rotary_sin"}}) {
      msg = std::regex_replace(msg, std::regex(from), to);
    }
    throw Error(e.code(), msg);
  }
  p.seqlen_offsets = static_cast<const std::int32_t*>(a.cache_seqlens.data);
  p.same_position = a.q_same_position;
  return p;
}

}  // namespace

void check_append_indices(const AppendParams& p, const std::int32_t* used,
                          const std::int32_t* table) {
  for (int b = 0; b < p.batch; ++b) {
    const std::int64_t end = static_cast<std::int64_t>(used[b]) + p.seqlen_new;
    if (used[b] < 0 || end > p.seqlen_k) {
      invalid("cache_seqlens[" + std::to_string(b) + "] is " + std::to_string(used[b]) + ": with " +
              std::to_string(p.seqlen_new) + " new keys it must be in [0, " +
              std::to_string(p.seqlen_k - p.seqlen_new) + "] (the cache has " +
              std::to_string(p.seqlen_k) + " slots a sequence)");
    }
    // Rows first..last of sequence b rotated: named in the error when the last is past the table.
    auto check_rotary = [&](const char* rows, std::int64_t first, std::int64_t last) {
      if (used[b] + last < p.rotary_table) return;
      const std::string seq = " of sequence " + std::to_string(b);
      invalid("cache_seqlens[" + std::to_string(b) + "] is " + std::to_string(used[b]) + ": " +
              rows +
              (first == last ? " " + std::to_string(first) + seq + " takes rotary position " +
                                   std::to_string(used[b] + first)
                             : "s " + std::to_string(first) + ".." + std::to_string(last) + seq +
                                   " take rotary positions " + std::to_string(used[b] + first) +
                                   ".." + std::to_string(used[b] + last)) +
              ", past the " + std::to_string(p.rotary_table) +
              " positions of rotary_cos/rotary_sin");
    };
    if (p.rotary_half > 0) check_rotary("new key row", 0, p.seqlen_new - 1);
    // Queries at one position take cache_seqlens[b], the first key row's: checked above.
    if (p.rotates_q && !p.q_rotary.same_position) {
      check_rotary("query row", 0, p.q_rotary.seqlen - 1);
    }
    if (table == nullptr) continue;
    const std::int64_t max_pages = p.seqlen_k / p.page_size;
    for (std::int64_t i = used[b] / p.page_size; i * p.page_size < end; ++i) {
      const std::int32_t e = table[b * max_pages + i];
      if (e < 0 || e >= p.num_pages) {
        invalid("block_table[" + std::to_string(b) + "][" + std::to_string(i) + "] is " +
                std::to_string(e) + ", must be a page in [0, " + std::to_string(p.num_pages) +
                ") (the new keys of sequence " + std::to_string(b) + " land in it)");
      }
    }
  }
}

AppendParams make_append_params(const AppendKvArgs& a) {
  check_backend_value(a.backend, "gpuattn::append_kv");
  const bool paged = a.block_table.present();
  const char* cache_layout = paged ? "[num_pages, page_size, Hkv, D]" : "[B, Sk, Hkv, D]";
  check_operand(a.k_cache, "k_cache", cache_layout, a.k_cache);
  check_operand(a.v_cache, "v_cache", cache_layout, a.k_cache);
  check_operand(a.k_new, "k_new", "[B, Snew, Hkv, D]", a.k_cache);
  check_operand(a.v_new, "v_new", "[B, Snew, Hkv, D]", a.k_cache);
  // The cache's dtype, and the new rows': the same, or a quantized cache (int8, e4m3) written from
  // float16 / bfloat16 (float32 on the CPU) rows with k_scale / v_scale.
  const DType cache_t = a.k_cache.dtype;
  const DType t = a.k_new.dtype;
  const bool quantized = is_quantized_kv(cache_t);
  if (!quantized && cache_t != DType::f16 && cache_t != DType::bf16 && cache_t != DType::f32) {
    invalid(std::string("k_cache dtype ") + to_string(cache_t) +
            " is not float16, bfloat16, float32, int8 or float8_e4m3fn");
  }
  if (a.v_cache.dtype != cache_t) {
    invalid(std::string("v_cache dtype ") + to_string(a.v_cache.dtype) +
            " differs from k_cache dtype " + to_string(cache_t));
  }
  if (quantized ? (t != DType::f16 && t != DType::bf16 && t != DType::f32) : t != cache_t) {
    invalid(std::string("k_new dtype ") + to_string(t) +
            (quantized ? std::string(" cannot be quantized into a ") + to_string(cache_t) +
                             " cache (float16, bfloat16; float32 on the CPU)"
                       : std::string(" differs from k_cache dtype ") + to_string(cache_t)));
  }
  if (a.v_new.dtype != t) {
    invalid(std::string("v_new dtype ") + to_string(a.v_new.dtype) + " differs from k_new dtype " +
            to_string(t));
  }
  if (a.k_cache.device == Device::cuda && t == DType::f32) {
    throw Error(
        ErrorCode::not_supported,
        "gpuattn::append_kv: float32 caches and rows are supported on the CPU backend only");
  }
  if (a.backend == Backend::cpu && a.k_cache.device != Device::cpu) {
    invalid("backend cpu was requested but the caches are on cuda");
  }
  if (a.backend == Backend::cuda && a.k_cache.device != Device::cuda) {
    invalid("backend cuda was requested but the caches are on the host (cpu)");
  }
  for (int i = 0; i < 4; ++i) {
    if (a.v_cache.shape[i] != a.k_cache.shape[i]) {
      invalid("v_cache shape " + shape_str(a.v_cache) + " differs from k_cache shape " +
              shape_str(a.k_cache));
    }
    if (a.v_new.shape[i] != a.k_new.shape[i]) {
      invalid("v_new shape " + shape_str(a.v_new) + " differs from k_new shape " +
              shape_str(a.k_new));
    }
  }
  const std::int64_t B = a.k_new.shape[0];
  if (a.k_new.shape[2] != a.k_cache.shape[2] || a.k_new.shape[3] != a.k_cache.shape[3]) {
    invalid("k_new shape " + shape_str(a.k_new) + " does not match the cache's heads and head dim " +
            shape_str(a.k_cache));
  }
  if (!paged && a.k_cache.shape[0] != B) {
    invalid("k_cache batch " + std::to_string(a.k_cache.shape[0]) + " differs from k_new batch " +
            std::to_string(B));
  }
  AppendParams p;
  p.k_cache = a.k_cache.data;
  p.v_cache = a.v_cache.data;
  p.k_new = a.k_new.data;
  p.v_new = a.v_new.data;
  p.kc_batch_stride = a.k_cache.stride[0];
  p.kc_row_stride = a.k_cache.stride[1];
  p.kc_head_stride = a.k_cache.stride[2];
  p.vc_batch_stride = a.v_cache.stride[0];
  p.vc_row_stride = a.v_cache.stride[1];
  p.vc_head_stride = a.v_cache.stride[2];
  p.kn_batch_stride = a.k_new.stride[0];
  p.kn_row_stride = a.k_new.stride[1];
  p.kn_head_stride = a.k_new.stride[2];
  p.vn_batch_stride = a.v_new.stride[0];
  p.vn_row_stride = a.v_new.stride[1];
  p.vn_head_stride = a.v_new.stride[2];
  if (B > INT32_MAX || a.k_new.shape[1] > INT32_MAX || a.k_cache.shape[2] > INT32_MAX) {
    invalid("k_new shape " + shape_str(a.k_new) + " exceeds int32 sizes");
  }
  p.batch = static_cast<int>(B);
  p.seqlen_new = static_cast<int>(a.k_new.shape[1]);
  p.hkv = static_cast<int>(a.k_cache.shape[2]);
  p.head_dim = static_cast<int>(a.k_cache.shape[3]);
  p.dtype = t;
  p.cache_dtype = cache_t;
  p.scale_stride = check_kv_scale_views(a.k_scale, a.v_scale, cache_t, p.hkv, a.k_cache, "k_cache",
                                        "gpuattn::append_kv");
  if (quantized) {
    p.k_scale = static_cast<const float*>(a.k_scale.data);
    p.v_scale = static_cast<const float*>(a.v_scale.data);
  }
  if (a.rotary_cos.present() != a.rotary_sin.present()) {
    invalid(std::string(a.rotary_cos.present() ? "rotary_cos" : "rotary_sin") +
            " is given without " + (a.rotary_cos.present() ? "rotary_sin" : "rotary_cos") +
            ": the two go together");
  }
  if (a.rotary_cos.present()) {
    check_rotary_tables(a.rotary_cos, a.rotary_sin, t, a.k_new.shape[3], a.k_cache,
                        RotaryNames{"gpuattn::append_kv", "rotary_cos", "rotary_sin", "k_new",
                                    "k_cache"});
    for (auto [tab, tname] : {std::pair{&a.rotary_cos, "rotary_cos"},
                              std::pair{&a.rotary_sin, "rotary_sin"}}) {
      for (auto [c, cname] :
           {std::pair{&a.k_cache, "k_cache"}, std::pair{&a.v_cache, "v_cache"}}) {
        if (spans_overlap(*tab, *c)) {
          invalid(std::string(tname) + "'s memory overlaps " + cname + "'s, which the append "
                  "writes");
        }
      }
    }
    p.rotary_cos = a.rotary_cos.data;
    p.rotary_sin = a.rotary_sin.data;
    p.rotary_cos_stride = a.rotary_cos.stride[0];
    p.rotary_sin_stride = a.rotary_sin.stride[0];
    p.rotary_half = static_cast<int>(a.rotary_cos.shape[1]);
    p.rotary_table = static_cast<int>(a.rotary_cos.shape[0]);
    p.rotary_f32 = a.rotary_cos.dtype == DType::f32;
    p.rotary_interleaved = a.rotary_interleaved;
  }
  if (a.q.present() || a.q_out.present()) {
    if (!a.rotary_cos.present()) {
      invalid("q and q_out are given without rotary_cos/rotary_sin: they are there to be rotated");
    }
    if (!a.q.present() || !a.q_out.present()) {
      invalid(std::string(a.q.present() ? "q" : "q_out") + " is given without " +
              (a.q.present() ? "q_out" : "q") + ": the two go together");
    }
    if (a.q.dtype != t) {
      invalid(std::string("q dtype ") + to_string(a.q.dtype) + " differs from k_new dtype " +
              to_string(t));
    }
    for (auto [v, name] : {std::pair{&a.q, "q"}, std::pair{&a.q_out, "q_out"}}) {
      if (v->device != a.k_cache.device ||
          (v->device == Device::cuda && v->device_index != a.k_cache.device_index)) {
        invalid(std::string(name) + " is on " + to_string(v->device) + ":" +
                std::to_string(v->device_index) + " but k_cache is on " +
                to_string(a.k_cache.device) + ":" + std::to_string(a.k_cache.device_index));
      }
    }
    p.q_rotary = q_rotary_params(a);
    p.rotates_q = true;
    if (a.q.shape[0] != B || a.q.shape[3] != a.k_new.shape[3]) {
      invalid("q shape " + shape_str(a.q) + " does not match k_new's batch and head dim " +
              shape_str(a.k_new));
    }
    // q_out is written beside the caches: apart from every view the call reads or writes.
    for (auto [v, name] : {std::pair{&a.k_cache, "k_cache"}, std::pair{&a.v_cache, "v_cache"},
                           std::pair{&a.k_new, "k_new"}, std::pair{&a.v_new, "v_new"},
                           std::pair{&a.cache_seqlens, "cache_seqlens"},
                           std::pair{&a.block_table, "block_table"},
                           std::pair{&a.k_scale, "k_scale"}, std::pair{&a.v_scale, "v_scale"}}) {
      if (v->present() && spans_overlap(a.q_out, *v)) {
        invalid(std::string("q_out's memory overlaps ") + name + "'s");
      }
    }
    // q may lie in a cache: it is then rotated before the append writes (the launches in that
    // order); apart from both caches, one launch does both.
    p.q_in_cache = spans_overlap(a.q, a.k_cache) || spans_overlap(a.q, a.v_cache);
  }
  p.device = a.k_cache.device;
  p.device_index = a.k_cache.device_index;
  p.check_indices = a.check_indices;
  if ((p.head_dim * element_size(cache_t)) % 16 != 0) {
    invalid("head dim " + std::to_string(p.head_dim) + " is not a multiple of 16 bytes");
  }

  check_index_array(a.cache_seqlens, "cache_seqlens", 1, a.k_cache);
  if (a.cache_seqlens.shape[0] != B) {
    invalid("cache_seqlens has shape " + shape_str(a.cache_seqlens) +
            ", expected [batch = " + std::to_string(B) + "]");
  }
  p.cache_seqlens = static_cast<const std::int32_t*>(a.cache_seqlens.data);
  if (paged) {
    check_index_array(a.block_table, "block_table", 2, a.k_cache);
    if (a.block_table.shape[0] != B || a.block_table.shape[1] <= 0) {
      invalid("block_table has shape " + shape_str(a.block_table) +
              ", expected [batch = " + std::to_string(B) + ", max_pages]");
    }
    const std::int64_t sk = a.block_table.shape[1] * a.k_cache.shape[1];
    if (a.k_cache.shape[0] > INT32_MAX || sk > INT32_MAX) {
      invalid("the paged cache (" + shape_str(a.k_cache) + ", block_table " +
              shape_str(a.block_table) + ") exceeds int32 sizes");
    }
    p.block_table = static_cast<const std::int32_t*>(a.block_table.data);
    p.block_table_stride = a.block_table.stride[0];
    p.page_size = static_cast<int>(a.k_cache.shape[1]);
    p.num_pages = static_cast<int>(a.k_cache.shape[0]);
    p.seqlen_k = static_cast<int>(sk);
  } else {
    if (a.k_cache.shape[1] > INT32_MAX) invalid("k_cache length exceeds int32");
    p.seqlen_k = static_cast<int>(a.k_cache.shape[1]);
  }
  // The new rows are read while the cache is written: rows that lie in a cache would be
  // overwritten before (or while) they are read.
  for (auto [nw, nname] : {std::pair{&a.k_new, "k_new"}, std::pair{&a.v_new, "v_new"}}) {
    for (auto [c, cname] : {std::pair{&a.k_cache, "k_cache"}, std::pair{&a.v_cache, "v_cache"}}) {
      if (spans_overlap(*nw, *c)) {
        invalid(std::string(nname) + "'s memory overlaps " + cname +
                "'s: the new keys and values must not lie in the caches they are appended to "
                "(copy them out first)");
      }
    }
  }
  if (p.seqlen_new > p.seqlen_k) {
    invalid("k_new shape " + shape_str(a.k_new) + " holds " + std::to_string(p.seqlen_new) +
            " new keys a sequence, more than the cache's " + std::to_string(p.seqlen_k) +
            " slots a sequence (" +
            (paged ? "block_table " + shape_str(a.block_table) + " of pages of " +
                         std::to_string(p.page_size) + " keys"
                   : "k_cache shape " + shape_str(a.k_cache)) +
            ")");
  }
  if (p.device == Device::cpu) {
    std::vector<std::int32_t> packed;
    if (paged) {  // the checker reads max_pages entries a row
      const std::int64_t max_pages = a.block_table.shape[1];
      packed.resize(static_cast<std::size_t>(B * max_pages));
      for (std::int64_t b = 0; b < B; ++b) {
        for (std::int64_t i = 0; i < max_pages; ++i) {
          packed[b * max_pages + i] = p.block_table[b * p.block_table_stride + i];
        }
      }
    }
    check_append_indices(p, p.cache_seqlens, paged ? packed.data() : nullptr);
  }
  return p;
}

}  // namespace gpuattn
