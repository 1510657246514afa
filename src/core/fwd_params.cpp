#include "core/fwd_params.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace gpuattn {
namespace {

constexpr std::int64_t kMaxRowStride = std::int64_t{1} << 23;  // 256 rows * stride fit an int32

[[noreturn]] void fail(ErrorCode code, const std::string& msg) {
  throw Error(code, "gpuattn::attention_forward: " + msg);
}
[[noreturn]] void invalid(const std::string& msg) {
  fail(ErrorCode::invalid_argument, msg);
}

std::string unaligned(const std::string& name, const void* ptr, int bytes) {
  std::ostringstream s;
  s << name << " pointer " << ptr << " is not " << bytes << "-byte aligned";
  return s.str();
}

void check_view(const TensorView& t, const char* name, int rank, const char* layout) {
  if (t.data == nullptr) invalid(std::string(name) + " is a null pointer");
  check_place_values(t, name, "gpuattn::attention_forward");
  if (t.rank != rank) {
    invalid(std::string(name) + " has rank " + std::to_string(t.rank) + " (shape " + shape_str(t) +
            "), expected rank " + std::to_string(rank) + " " + layout);
  }
  for (int i = 0; i < rank; ++i) {
    if (t.shape[i] < 0) {
      invalid(std::string(name) + " has a negative size " + std::to_string(t.shape[i]) +
              " in dimension " + std::to_string(i));
    }
    if (t.stride[i] < 0) {
      invalid(std::string(name) + " has a negative stride " + std::to_string(t.stride[i]) +
              " in dimension " + std::to_string(i));
    }
  }
}

// Attention operands: last dim contiguous, other strides multiples of 16 bytes, 16-byte aligned.
void check_operand(const TensorView& t, const char* name) {
  const auto es = static_cast<std::int64_t>(element_size(t.dtype));
  if (t.stride[t.rank - 1] != 1) {
    invalid(std::string(name) + " last-dimension stride is " +
            std::to_string(t.stride[t.rank - 1]) + ", must be 1 (head dim contiguous)");
  }
  for (int i = 0; i < t.rank - 1; ++i) {
    if (t.stride[i] % (16 / es) != 0) {  // (stride x es) % 16 without the product's overflow
      invalid(std::string(name) + " stride " + std::to_string(t.stride[i]) + " of dimension " +
              std::to_string(i) + " is not a multiple of 16 bytes");
    }
  }
  const auto addr = reinterpret_cast<std::uintptr_t>(t.data);
  if (addr % 16 != 0) {
    std::ostringstream s;
    s << name << " pointer " << t.data << " is not 16-byte aligned";
    invalid(s.str());
  }
}

void check_same_place(const TensorView& t, const TensorView& ref, const char* name) {
  if (t.device != ref.device || (t.device == Device::cuda && t.device_index != ref.device_index)) {
    invalid(std::string(name) + " is on " + to_string(t.device) + ":" +
            std::to_string(t.device_index) + " but q is on " + to_string(ref.device) + ":" +
            std::to_string(ref.device_index) + " (host/device mix)");
  }
}

void check_positive(std::int64_t v, const std::string& what) {
  if (v <= 0) invalid(what + " is " + std::to_string(v) + ", must be positive");
}

const TensorView& check_cu(const TensorView& cu, const char* name, const TensorView& q) {
  if (cu.data == nullptr) invalid(std::string(name) + " is a null pointer");
  if (cu.dtype != DType::i32) {
    invalid(std::string(name) + " has dtype " + to_string(cu.dtype) + ", expected int32");
  }
  if (cu.rank != 1) {
    invalid(std::string(name) + " has rank " + std::to_string(cu.rank) +
            ", expected 1 [batch + 1]");
  }
  if (cu.shape[0] < 2) {
    invalid(std::string(name) + " has " + std::to_string(cu.shape[0]) +
            " entries, needs batch + 1 >= 2");
  }
  if (cu.stride[0] != 1) {
    invalid(std::string(name) + " stride is " + std::to_string(cu.stride[0]) + ", must be 1");
  }
  if (reinterpret_cast<std::uintptr_t>(cu.data) % 4 != 0) {
    invalid(unaligned(name, cu.data, 4));
  }
  check_same_place(cu, q, name);
  return cu;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// A paged cache (AttentionArgs::block_table), once p has the dense shape: k/v are the page pool
// [num_pages, page_size, Hkv, D] and seqlen_k becomes max_pages * page_size.
void set_block_table(const AttentionArgs& a, FwdParams& p) {
  const TensorView& t = a.block_table;
  if (t.data == nullptr) invalid("block_table is a null pointer");
  if (t.dtype != DType::i32) {
    invalid(std::string("block_table has dtype ") + to_string(t.dtype) + ", expected int32");
  }
  if (t.rank != 2 || t.shape[0] != p.batch) {
    invalid("block_table has shape " + shape_str(t) +
            ", expected [batch = " + std::to_string(p.batch) + ", max_pages]");
  }
  check_positive(t.shape[1], "block_table max_pages (dim 1)");
  if (t.stride[1] != 1) {
    invalid("block_table last-dimension stride is " + std::to_string(t.stride[1]) + ", must be 1");
  }
  if (t.stride[0] < 0) {
    invalid("block_table has a negative stride " + std::to_string(t.stride[0]) + " in dimension 0");
  }
  if (reinterpret_cast<std::uintptr_t>(t.data) % 4 != 0) {
    invalid(unaligned("block_table", t.data, 4));
  }
  check_same_place(t, a.q, "block_table");
  const std::int64_t pages = a.k.shape[0], page_size = a.k.shape[1];
  if (pages > INT32_MAX) invalid("k page count " + std::to_string(pages) + " exceeds 2^31 - 1");
  // max_pages x page_size, saturated: the product of two int64 shapes can wrap.
  const std::int64_t sk =
      page_size > 0 && t.shape[1] > INT64_MAX / page_size ? INT64_MAX : t.shape[1] * page_size;
  if (sk > INT32_MAX) {
    invalid("block_table max_pages " + std::to_string(t.shape[1]) + " x page_size " +
            std::to_string(page_size) + " = " + std::to_string(sk) +
            " keys exceeds 2^31 - 1 (the logical cache length Sk)");
  }
  p.block_table = static_cast<const std::int32_t*>(t.data);
  p.block_table_stride = t.stride[0];
  p.page_size = static_cast<int>(page_size);
  p.num_pages = static_cast<int>(pages);
  p.seqlen_k = static_cast<int>(sk);
  p.total_k = pages * page_size;
}

// The block-sparse layout (MaskSpec::block_sparse), once p has its heads and sequence lengths.
void set_block_layout(const AttentionArgs& a, FwdParams& p) {
  const BlockSparseLayout& bs = a.mask.block_sparse;
  const TensorView& l = bs.layout;
  if (!l.present()) {
    if (bs.block_q != 0 || bs.block_k != 0) {
      invalid("mask.block_sparse.block_q/block_k are " + std::to_string(bs.block_q) + "/" +
              std::to_string(bs.block_k) +
              " but mask.block_sparse.layout is absent (0/0 without a layout)");
    }
    return;
  }
  const char* name = "mask.block_sparse.layout";
  if (l.data == nullptr) invalid(std::string(name) + " is a null pointer");
  if (l.dtype != DType::u8) {
    invalid(std::string(name) + " has dtype " + to_string(l.dtype) + ", expected uint8");
  }
  if (l.rank != 3) {
    invalid(std::string(name) + " has rank " + std::to_string(l.rank) + " (shape " + shape_str(l) +
            "), expected rank 3 [Hq or 1, n_blocks_q, n_blocks_k]");
  }
  for (auto [b, bname] : {std::pair{bs.block_q, "mask.block_sparse.block_q"},
                          std::pair{bs.block_k, "mask.block_sparse.block_k"}}) {
    if (b <= 0) invalid(std::string(bname) + " is " + std::to_string(b) + ", must be positive");
    if (b % 16 != 0) {
      fail(ErrorCode::not_supported, std::string(bname) + " " + std::to_string(b) +
                                         " is not a multiple of 16 (the kernels' tile granule; "
                                         "64 and 128 are the usual block sizes)");
    }
  }
  check_same_place(l, a.q, name);
  const bool varlen = p.is_varlen();
  const std::int64_t nq = ceil_div(p.seqlen_q, bs.block_q);
  const std::int64_t nk = ceil_div(p.seqlen_k, bs.block_k);
  if ((l.shape[0] != 1 && l.shape[0] != p.hq) || l.shape[1] != nq || l.shape[2] != nk) {
    const std::string sq = varlen ? "max_seqlen_q" : "Sq", sk = varlen ? "max_seqlen_k" : "Sk";
    invalid(std::string(name) + " shape " + shape_str(l) + " must be [Hq or 1, ceil(" + sq +
            " / block_q), ceil(" + sk + " / block_k)] = [" + std::to_string(p.hq) + " or 1, " +
            std::to_string(nq) + ", " + std::to_string(nk) + "] (" + sq + " " +
            std::to_string(p.seqlen_q) + ", " + sk + " " + std::to_string(p.seqlen_k) +
            ", block_q " + std::to_string(bs.block_q) + ", block_k " + std::to_string(bs.block_k) +
            ")");
  }
  for (int i = 0; i < 3; ++i) {
    if (l.stride[i] < 0) {
      invalid(std::string(name) + " has a negative stride " + std::to_string(l.stride[i]) +
              " in dimension " + std::to_string(i));
    }
  }
  p.block_layout = static_cast<const std::uint8_t*>(l.data);
  p.block_head_stride = l.shape[0] == 1 ? 0 : l.stride[0];
  p.block_row_stride = l.stride[1];
  p.block_col_stride = l.stride[2];
  p.block_q = bs.block_q;
  p.block_k = bs.block_k;
}

// "at 0x..., shape [...], strides [...]": a view's place in an overlap message.
std::string where(const TensorView& t) {
  std::ostringstream s;
  s << "at " << t.data << ", shape " << shape_str(t) << ", strides [";
  for (int i = 0; i < t.rank && i < TensorView::kMaxRank; ++i) s << (i ? ", " : "") << t.stride[i];
  s << "]";
  return s.str();
}

// out and lse, once every view's shape is checked: neither writes an element twice, nor memory the
// call reads (q, k, v; work items read them while others write) or the other writes. out may be q
// itself, the same view (in place): each row's q is read before its out is written, by the same
// work item.
void check_written_views(const AttentionArgs& a) {
  struct Named {
    const TensorView* t;
    const char* name;
  };
  const Named out{&a.out, "out"}, lse{&a.lse, "lse"};
  // Everything else the call reads: the index arrays and the layout are read again by later
  // work items after earlier ones wrote their rows (a seqused_k inside out was read back as a
  // float's bits: keys past the cache), the scales and counters likewise.
  const Named inputs[] = {{&a.q, "q"},
                          {&a.k, "k"},
                          {&a.v, "v"},
                          {&a.mask.block_sparse.layout, "mask.block_sparse.layout"},
                          {&a.cu_seqlens_q, "cu_seqlens_q"},
                          {&a.cu_seqlens_k, "cu_seqlens_k"},
                          {&a.seqused_k, "seqused_k"},
                          {&a.leftpad_k, "leftpad_k"},
                          {&a.block_table, "block_table"},
                          {&a.k_scale, "k_scale"},
                          {&a.v_scale, "v_scale"},
                          {&a.q_scale, "q_scale"},
                          {&a.alibi_slopes, "alibi_slopes"},
                          {&a.counters, "counters"}};
  for (const Named& w : {out, lse}) {
    if (!w.t->present()) continue;
    if (view_self_overlapping(*w.t)) {
      invalid(std::string(w.name) + " (" + where(*w.t) +
              ") has elements that share an address: its strides must not overlap (a zero "
              "stride over more than one element, or a stride inside another dimension's span)");
    }
    for (const Named& r : inputs) {
      if (w.t == &a.out && r.t == &a.q && same_view(a.out, a.q)) continue;  // in place
      if (views_share_bytes(*w.t, *r.t)) {
        invalid(std::string(w.name) + " (" + where(*w.t) + ") overlaps " + r.name + " (" +
                where(*r.t) + "): the call reads " + r.name + " while it writes " + w.name +
                (w.t == &a.out ? " (out may be q itself, the same view, in place)" : ""));
      }
    }
  }
  if (a.lse.present() && spans_overlap(a.lse, a.out)) {
    invalid("lse (" + where(a.lse) + ") overlaps out (" + where(a.out) + ")");
  }
}

}  // namespace

std::string shape_str(const TensorView& t) {
  std::ostringstream s;
  s << '[';
  // A rank beyond kMaxRank is itself the error being reported: print only the stored sizes.
  const int n = t.rank < TensorView::kMaxRank ? t.rank : TensorView::kMaxRank;
  for (int i = 0; i < n; ++i) s << (i ? ", " : "") << t.shape[i];
  s << (t.rank > n ? ", ...]" : "]");
  return s.str();
}

// Whether two elements of t share an address: a zero stride over more than one element, or
// strides (ordered by size) each short of the extent of the dimensions inside it. (Stricter than
// exact for exotic interleavings, which no caller of a written view has.)
bool view_self_overlapping(const TensorView& t) {
  std::vector<std::pair<std::int64_t, std::int64_t>> dims;  // |stride|, size
  for (int i = 0; i < t.rank; ++i) {
    if (t.shape[i] <= 0) return false;  // no element
    if (t.shape[i] > 1) dims.emplace_back(t.stride[i] < 0 ? -t.stride[i] : t.stride[i], t.shape[i]);
  }
  std::sort(dims.begin(), dims.end());
  std::int64_t extent = 1;  // elements spanned by the dimensions so far
  for (const auto& [stride, size] : dims) {
    if (stride < extent) return true;
    extent = stride * (size - 1) + extent;
  }
  return false;
}

bool same_view(const TensorView& a, const TensorView& b) {
  if (a.data != b.data || a.dtype != b.dtype || a.rank != b.rank || a.device != b.device ||
      a.device_index != b.device_index) {
    return false;
  }
  for (int i = 0; i < a.rank; ++i) {
    if (a.shape[i] != b.shape[i] || (a.shape[i] > 1 && a.stride[i] != b.stride[i])) return false;
  }
  return true;
}

void check_place_values(const TensorView& t, const char* name, const char* fn) {
  if (t.device != Device::cpu && t.device != Device::cuda) {
    throw Error(ErrorCode::invalid_argument, std::string(fn) + ": " + name + " has device value " +
                                                 std::to_string(static_cast<int>(t.device)) +
                                                 ", not a gpuattn::Device (cpu = 0, cuda = 1)");
  }
  if (element_size(t.dtype) == 0) {
    throw Error(ErrorCode::invalid_argument, std::string(fn) + ": " + name + " has dtype value " +
                                                 std::to_string(static_cast<int>(t.dtype)) +
                                                 ", not a gpuattn::DType");
  }
}

void check_backend_value(Backend backend, const char* fn) {
  if (backend != Backend::automatic && backend != Backend::cpu && backend != Backend::cuda) {
    throw Error(ErrorCode::invalid_argument, std::string(fn) + ": backend is " +
                                                 std::to_string(static_cast<int>(backend)) +
                                                 ", not a gpuattn::Backend (automatic, cpu, cuda)");
  }
}

bool spans_overlap(const TensorView& a, const TensorView& b) {
  if (a.data == nullptr || b.data == nullptr || a.device != b.device ||
      a.device_index != b.device_index) {
    return false;
  }
  struct Span {
    std::uintptr_t lo, hi;  // [lo, hi)
  };
  auto span = [](const TensorView& t) -> std::optional<Span> {
    const auto base = reinterpret_cast<std::uintptr_t>(t.data);
    const auto es = static_cast<std::int64_t>(element_size(t.dtype));
    std::int64_t lo = 0, hi = es;
    for (int i = 0; i < t.rank; ++i) {
      if (t.shape[i] <= 0) return std::nullopt;  // no element
      const std::int64_t reach = t.stride[i] * (t.shape[i] - 1) * es;
      (reach < 0 ? lo : hi) += reach;
    }
    return Span{base + static_cast<std::uintptr_t>(lo), base + static_cast<std::uintptr_t>(hi)};
  };
  const std::optional<Span> x = span(a), y = span(b);
  return x && y && x->lo < y->hi && y->lo < x->hi;
}

// Two views of one shape, strides and element size, their bases delta bytes apart, share a byte iff
// delta = sum d_i x stride_i x es + r with |d_i| < shape_i and |r| < es. With the strides nested
// (each at least the bytes the smaller ones span, as no self-overlapping view fails to be), each
// d_i is the quotient's floor or the one above it: at most 2^rank tries.
bool views_share_bytes(const TensorView& a, const TensorView& b) {
  if (!spans_overlap(a, b)) return false;
  if (a.rank != b.rank || element_size(a.dtype) != element_size(b.dtype)) return true;
  const auto es = static_cast<std::int64_t>(element_size(a.dtype));
  std::vector<std::pair<std::int64_t, std::int64_t>> dims;  // bytes of stride, size
  for (int i = 0; i < a.rank; ++i) {
    if (a.shape[i] != b.shape[i]) return true;
    if (a.shape[i] > 1 && a.stride[i] != b.stride[i]) return true;
    const std::int64_t stride = a.stride[i] < 0 ? -a.stride[i] : a.stride[i];
    if (a.shape[i] > 1 && stride != 0) dims.emplace_back(stride * es, a.shape[i]);
  }
  std::sort(dims.begin(), dims.end());
  std::vector<std::int64_t> reach(dims.size() + 1);  // reach[i]: |offset| dims below i reach
  std::int64_t extent = es;                          // bytes the dimensions so far span
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].first < extent) return true;  // not nested: the spans decide
    reach[i] = extent - 1;
    extent += dims[i].first * (dims[i].second - 1);
  }
  const std::int64_t delta = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(b.data) -
                                                       reinterpret_cast<std::uintptr_t>(a.data));
  // Largest stride first: dims[i] for i from the back.
  const auto solve = [&](const auto& self, std::size_t i, std::int64_t rem) -> bool {
    if (i == 0) return rem > -es && rem < es;
    const auto [stride, size] = dims[i - 1];
    const std::int64_t q = rem >= 0 ? rem / stride : -((-rem + stride - 1) / stride);  // floor
    for (const std::int64_t d : {q, q + 1}) {
      if (d <= -size || d >= size) continue;
      const std::int64_t left = rem - d * stride;
      if (left >= -reach[i - 1] && left <= reach[i - 1] && self(self, i - 1, left)) return true;
    }
    return false;
  };
  return solve(solve, dims.size(), delta);
}

void check_cu_seqlens(const std::int32_t* cu, int batch, std::int64_t total, int max_seqlen,
                      const char* name) {
  if (cu[0] != 0) {
    invalid(std::string(name) + "[0] is " + std::to_string(cu[0]) + ", must be 0");
  }
  for (int b = 0; b < batch; ++b) {
    const std::int64_t len = static_cast<std::int64_t>(cu[b + 1]) - cu[b];
    if (len < 0) {
      invalid(std::string(name) + " decreases at index " + std::to_string(b + 1) + " (" +
              std::to_string(cu[b]) + " -> " + std::to_string(cu[b + 1]) +
              "): negative sequence length " + std::to_string(len));
    }
    if (len > max_seqlen) {
      invalid(std::string(name) + " gives sequence " + std::to_string(b) + " length " +
              std::to_string(len) + " > max_seqlen " + std::to_string(max_seqlen));
    }
  }
  if (cu[batch] != total) {
    invalid(std::string(name) + "[" + std::to_string(batch) + "] is " + std::to_string(cu[batch]) +
            " but the packed tensor has " + std::to_string(total) + " rows");
  }
}

namespace {

// Every one of `n` scales named `name` positive, finite and at most FLT_MAX / 448, so that a
// dequantized value (448 x scale at most for e4m3, 127 x scale for int8) stays finite (a k_scale
// of 1e37 made an int8 key of 127 inf, and the row NaN).
void check_scale_values(const float* scales, int n, const char* name, const char* fn) {
  constexpr float kMaxScale = std::numeric_limits<float>::max() / 448.0f;
  for (int i = 0; i < n; ++i) {
    if (!(std::isfinite(scales[i]) && scales[i] > 0.f && scales[i] <= kMaxScale)) {
      char v[32];
      std::snprintf(v, sizeof v, "%.9g", static_cast<double>(scales[i]));
      throw Error(ErrorCode::invalid_argument,
                  std::string(fn) + ": " + name + "[" + std::to_string(i) + "] is " + v +
                      ", must be positive, finite and at most 7.6e35 (FLT_MAX / 448)");
    }
  }
}

}  // namespace

void check_kv_scales(const float* k_scale, const float* v_scale, int n, const char* fn) {
  check_scale_values(k_scale, n, "k_scale", fn);
  check_scale_values(v_scale, n, "v_scale", fn);
}

void check_q_scales(const float* q_scale, int n, const char* fn) {
  check_scale_values(q_scale, n, "q_scale", fn);
}

void check_alibi_slopes(const float* slopes, int batch, int hq, float alibi_raw, bool capped,
                        const char* fn) {
  // The bias of the farthest key (distance below 2^31) finite in float32, in the CPU backend's
  // base-2 units (slope x log2(e)) and in the kernels' raw ones (slope x alibi_raw).
  const double unit = std::max(1.4426950408889634, static_cast<double>(alibi_raw));
  const double limit = static_cast<double>(std::numeric_limits<float>::max()) / 2147483648.0;
  const int n = batch * hq;
  for (int i = 0; i < n; ++i) {
    const double x = slopes[i];
    if (std::isfinite(x) && std::fabs(x) * unit <= limit) continue;
    char v[160];
    std::snprintf(v, sizeof v, "%.9g", x);
    std::string where = "alibi_slopes[" + std::to_string(i) + "]";
    if (batch > 1) {
      where = "alibi_slopes[" + std::to_string(i / hq) + "][" + std::to_string(i % hq) + "]";
    }
    throw Error(ErrorCode::invalid_argument,
                std::string(fn) + ": " + where + " is " + v +
                    (std::isfinite(x)
                         ? std::string(": |slope| x max(log2(e), 1 / ") +
                               (capped ? "softcap" : "softmax_scale") +
                               ") must be at most 1.58e29 (FLT_MAX / 2^31: its bias at every key "
                               "distance a float32)"
                         : std::string(", must be finite")));
  }
}

int check_q_scale_view(const TensorView& t, int hq, const TensorView& q) {
  auto bad = [](const std::string& msg) {
    throw Error(ErrorCode::invalid_argument, "gpuattn::attention_forward: " + msg);
  };
  if (t.data == nullptr) bad("q_scale is a null pointer");
  if (t.dtype != DType::f32) {
    bad(std::string("q_scale has dtype ") + to_string(t.dtype) + ", expected float32");
  }
  if (t.rank != 1 || (t.shape[0] != hq && t.shape[0] != 1)) {
    bad("q_scale has shape " + shape_str(t) + ", expected [Hq = " + std::to_string(hq) +
        "] or [1]");
  }
  // A [1] view's stride is never stepped over; a [Hq] view's last scale must sit within int32
  // floats of its first (the kernels index h * stride in int).
  if (t.shape[0] != 1 &&
      (t.stride[0] < 0 || t.stride[0] > INT32_MAX / (t.shape[0] - 1))) {  // no product to wrap
    bad("q_scale has stride " + std::to_string(t.stride[0]) +
        ": (Hq - 1) x stride must be in [0, 2^31)");
  }
  if (reinterpret_cast<std::uintptr_t>(t.data) % 4 != 0) bad(unaligned("q_scale", t.data, 4));
  if (t.device != q.device || (t.device == Device::cuda && t.device_index != q.device_index)) {
    bad("q_scale is on " + std::string(to_string(t.device)) + ":" + std::to_string(t.device_index) +
        " but q is on " + to_string(q.device) + ":" + std::to_string(q.device_index));
  }
  const int stride = t.shape[0] == 1 ? 0 : static_cast<int>(t.stride[0]);
  if (q.device == Device::cpu) {
    const int n = t.shape[0] == 1 ? 1 : hq;
    std::vector<float> qs(n);
    for (int i = 0; i < n; ++i) qs[i] = static_cast<const float*>(t.data)[i * stride];
    check_q_scales(qs.data(), n, "gpuattn::attention_forward");
  }
  return stride;
}

int check_kv_scale_views(const TensorView& k_scale, const TensorView& v_scale, DType kv, int hkv,
                         const TensorView& ref, const char* ref_name, const char* fn) {
  auto bad = [fn](const std::string& msg) {
    throw Error(ErrorCode::invalid_argument, std::string(fn) + ": " + msg);
  };
  const bool quantized = is_quantized_kv(kv);
  int stride = 0;
  for (auto [t, name] : {std::pair{&k_scale, "k_scale"}, std::pair{&v_scale, "v_scale"}}) {
    if (!quantized) {
      if (t->present()) {
        bad(std::string(name) + " is given but the cache dtype is " + to_string(kv) +
            " (scales are for an int8 or float8_e4m3fn cache)");
      }
      continue;
    }
    if (!t->present()) {
      bad(std::string("the cache dtype is ") + to_string(kv) + " but " + name +
          " is missing (float32 [Hkv] or [1])");
    }
    if (t->data == nullptr) bad(std::string(name) + " is a null pointer");
    if (t->dtype != DType::f32) {
      bad(std::string(name) + " has dtype " + to_string(t->dtype) + ", expected float32");
    }
    if (t->rank != 1 || (t->shape[0] != hkv && t->shape[0] != 1)) {
      bad(std::string(name) + " has shape " + shape_str(*t) +
          ", expected [Hkv = " + std::to_string(hkv) + "] or [1]");
    }
    if (t->shape[0] != 1 && t->stride[0] < 0) {  // a [1] view's stride is never stepped over
      bad(std::string(name) + " has a negative stride " + std::to_string(t->stride[0]));
    }
    if (reinterpret_cast<std::uintptr_t>(t->data) % 4 != 0) {
      bad(unaligned(name, t->data, 4));
    }
    if (t->device != ref.device ||
        (t->device == Device::cuda && t->device_index != ref.device_index)) {
      bad(std::string(name) + " is on " + to_string(t->device) + ":" +
          std::to_string(t->device_index) + " but " + ref_name + " is on " + to_string(ref.device) +
          ":" + std::to_string(ref.device_index));
    }
  }
  if (!quantized) return 0;
  const bool one = k_scale.shape[0] == 1;
  if (k_scale.shape[0] != v_scale.shape[0] || (!one && k_scale.stride[0] != v_scale.stride[0])) {
    bad("k_scale " + shape_str(k_scale) + " (stride " + std::to_string(k_scale.stride[0]) +
        ") and v_scale " + shape_str(v_scale) + " (stride " + std::to_string(v_scale.stride[0]) +
        ") differ in shape or stride (both [Hkv] or both [1], laid out alike)");
  }
  // The kernels index hk * stride in int: the last scale within int32 floats of the first.
  if (!one && k_scale.stride[0] > INT32_MAX / (k_scale.shape[0] - 1)) {  // no product to wrap
    bad("k_scale stride " + std::to_string(k_scale.stride[0]) +
        ": (Hkv - 1) x stride exceeds 2^31 - 1");
  }
  stride = one ? 0 : static_cast<int>(k_scale.stride[0]);
  if (ref.device == Device::cpu) {
    const int n = k_scale.shape[0] == 1 ? 1 : hkv;
    std::vector<float> ks(n), vs(n);
    for (int i = 0; i < n; ++i) {
      ks[i] = static_cast<const float*>(k_scale.data)[i * stride];
      vs[i] = static_cast<const float*>(v_scale.data)[i * stride];
    }
    check_kv_scales(ks.data(), vs.data(), n, fn);
  }
  return stride;
}

void check_seqused_k(const std::int32_t* used, int batch, int seqlen_k) {
  for (int b = 0; b < batch; ++b) {
    if (used[b] < 0 || used[b] > seqlen_k) {
      invalid("seqused_k[" + std::to_string(b) + "] is " + std::to_string(used[b]) +
              ", must be in [0, Sk = " + std::to_string(seqlen_k) + "]");
    }
  }
}

void check_leftpad_k(const std::int32_t* start, const std::int32_t* used, int batch,
                     int seqlen_k) {
  for (int b = 0; b < batch; ++b) {
    const int end = used ? used[b] : seqlen_k;
    if (start[b] < 0 || start[b] > end) {
      invalid("leftpad_k[" + std::to_string(b) + "] is " + std::to_string(start[b]) +
              ", must be in [0, " +
              (used ? "seqused_k[" + std::to_string(b) + "]" : std::string("Sk")) + " = " +
              std::to_string(end) + "]");
    }
  }
}

void check_block_table(const FwdParams& p, const std::int32_t* table, const std::int32_t* used,
                       const std::int32_t* start) {
  for (int b = 0; b < p.batch; ++b) {
    const int end = used ? used[b] : p.seqlen_k;
    const int first = start ? start[b] : 0;
    const std::int64_t i0 = first / p.page_size;
    const std::int64_t n = end > first ? (static_cast<std::int64_t>(end) + p.page_size - 1) /
                                             p.page_size
                                       : i0;
    for (std::int64_t i = i0; i < n; ++i) {
      const std::int32_t e = table[b * p.block_table_stride + i];
      if (e < 0 || e >= p.num_pages) {
        const std::string keys =
            start ? "keys " + std::to_string(first) + ".." + std::to_string(end - 1)
                  : std::to_string(end) + " keys";
        invalid("block_table[" + std::to_string(b) + "][" + std::to_string(i) + "] is " +
                std::to_string(e) + ", must be a page in [0, " + std::to_string(p.num_pages) +
                ") (sequence " + std::to_string(b) + " uses " + keys + ", pages " +
                std::to_string(i0) + ".." + std::to_string(n - 1) + " of its row)");
      }
    }
  }
}

namespace {

// Validates AttentionArgs::alibi_slopes' view (float32 [hq] or [batch, hq], last stride 1, a
// batch stride of 0 or at least hq, 4-byte aligned, on q's device), not its values; returns its
// batch stride (0 for [hq]).
std::int64_t check_alibi_view(const TensorView& t, int batch, int hq, const TensorView& q,
                              bool varlen) {
  const std::string bshape = varlen ? "sequences" : "B";
  auto bad = [](const std::string& msg) { invalid("alibi_slopes " + msg); };
  if (t.data == nullptr) bad("is a null pointer");
  if (t.dtype != DType::f32) bad(std::string("has dtype ") + to_string(t.dtype) + ", expected float32");
  const std::string want = "[Hq = " + std::to_string(hq) + "] or [" + bshape + " = " +
                           std::to_string(batch) + ", Hq = " + std::to_string(hq) + "]";
  const bool per_head = t.rank == 1 && t.shape[0] == hq;
  const bool per_seq = t.rank == 2 && t.shape[0] == batch && t.shape[1] == hq;
  if (!per_head && !per_seq) bad("has shape " + shape_str(t) + ", expected " + want);
  if (t.stride[t.rank - 1] != 1 && hq > 1) {
    bad("last-dimension stride is " + std::to_string(t.stride[t.rank - 1]) +
        ", must be 1 (a slope a head, contiguous)");
  }
  std::int64_t batch_stride = 0;
  if (per_seq && batch > 1) {
    // Rows apart or one row for all (0, a broadcast); overlapping rows would not copy as rows.
    if (t.stride[0] != 0 && t.stride[0] < hq) {
      bad("has batch stride " + std::to_string(t.stride[0]) + ": must be 0 or at least Hq = " +
          std::to_string(hq));
    }
    batch_stride = t.stride[0];
  }
  if (reinterpret_cast<std::uintptr_t>(t.data) % 4 != 0) invalid(unaligned("alibi_slopes", t.data, 4));
  check_same_place(t, q, "alibi_slopes");
  return batch_stride;
}

}  // namespace

FwdParams make_fwd_params(const AttentionArgs& a) {
  const bool varlen = a.cu_seqlens_q.present() || a.cu_seqlens_k.present();
  if (a.cu_seqlens_q.present() != a.cu_seqlens_k.present()) {  // before q's rank is judged by it
    invalid(std::string(a.cu_seqlens_q.present() ? "cu_seqlens_q" : "cu_seqlens_k") +
            " is given but " + (a.cu_seqlens_q.present() ? "cu_seqlens_k" : "cu_seqlens_q") +
            " is missing (a varlen call takes both)");
  }
  check_backend_value(a.backend, "gpuattn::attention_forward");
  if (a.precision != Precision::standard && a.precision != Precision::compensated) {
    invalid("precision is " + std::to_string(static_cast<int>(a.precision)) +
            ", not a gpuattn::Precision (standard, compensated)");
  }
  const int rank = varlen ? 3 : 4;
  const char* qlayout = varlen ? "[total_q, Hq, D]" : "[B, Sq, Hq, D]";
  const char* klayout = varlen                    ? "[total_k, Hkv, D]"
                        : a.block_table.present() ? "[num_pages, page_size, Hkv, D] (paged)"
                                                  : "[B, Sk, Hkv, D]";
  check_view(a.q, "q", rank, qlayout);
  check_view(a.k, "k", rank, klayout);
  check_view(a.v, "v", rank, klayout);
  check_view(a.out, "out", rank, qlayout);
  // The optional views' device and dtype values, before a message below prints them by name.
  for (const auto& [t, name] :
       {std::pair{&a.lse, "lse"}, std::pair{&a.cu_seqlens_q, "cu_seqlens_q"},
        std::pair{&a.cu_seqlens_k, "cu_seqlens_k"}, std::pair{&a.seqused_k, "seqused_k"},
        std::pair{&a.leftpad_k, "leftpad_k"},
        std::pair{&a.block_table, "block_table"}, std::pair{&a.k_scale, "k_scale"},
        std::pair{&a.v_scale, "v_scale"}, std::pair{&a.q_scale, "q_scale"},
        std::pair{&a.alibi_slopes, "alibi_slopes"}, std::pair{&a.counters, "counters"},
        std::pair{&a.mask.block_sparse.layout, "mask.block_sparse.layout"}}) {
    if (t->present()) check_place_values(*t, name, "gpuattn::attention_forward");
  }

  // dtypes. FP8 attention: q e4m3 (with q_scale) beside an e4m3 cache; out's dtype is then the
  // one the call computes in.
  const bool q_fp8 = a.q.dtype == DType::e4m3;
  const DType compute = q_fp8 ? a.out.dtype : a.q.dtype;
  if (q_fp8) {
    if (compute != DType::f16 && compute != DType::bf16 && compute != DType::f32) {
      fail(ErrorCode::not_supported,
           std::string("out dtype ") + to_string(a.out.dtype) +
               " is not supported with float8_e4m3fn q (float16, bfloat16, float32 on CPU)");
    }
    if (a.k.dtype != DType::e4m3) {
      invalid(std::string("q dtype float8_e4m3fn needs k/v of float8_e4m3fn (with k_scale / "
                          "v_scale); k dtype is ") +
              to_string(a.k.dtype));
    }
    if (!a.q_scale.present()) {
      invalid("q dtype is float8_e4m3fn but q_scale is missing (float32 [Hq] or [1])");
    }
  } else if (a.q.dtype != DType::f16 && a.q.dtype != DType::bf16 && a.q.dtype != DType::f32) {
    fail(ErrorCode::not_supported,
         std::string("q dtype ") + to_string(a.q.dtype) +
             " is not supported (float16, bfloat16, float32 on CPU, or float8_e4m3fn with "
             "q_scale)");
  } else if (a.out.dtype != a.q.dtype) {
    invalid(std::string("out dtype ") + to_string(a.out.dtype) + " differs from q dtype " +
            to_string(a.q.dtype));
  }
  if (!q_fp8 && a.q_scale.present()) {
    invalid(std::string("q_scale is given but q dtype is ") + to_string(a.q.dtype) +
            " (q_scale is for float8_e4m3fn q)");
  }
  // k/v: q's dtype, or both an 8-bit quantized cache (k_scale / v_scale, checked below).
  const bool quantized = is_quantized_kv(a.k.dtype);
  if (!quantized && a.k.dtype != a.q.dtype) {
    invalid(std::string("k dtype ") + to_string(a.k.dtype) + " differs from q dtype " +
            to_string(a.q.dtype) + " (k/v take q's dtype, or int8 / float8_e4m3fn with k_scale)");
  }
  if (a.v.dtype != a.k.dtype) {
    invalid(std::string("v dtype ") + to_string(a.v.dtype) + " differs from k dtype " +
            to_string(a.k.dtype));
  }

  // devices and backend
  check_same_place(a.k, a.q, "k");
  check_same_place(a.v, a.q, "v");
  check_same_place(a.out, a.q, "out");
  if (a.lse.present()) check_same_place(a.lse, a.q, "lse");
  if (a.backend == Backend::cpu && a.q.device != Device::cpu) {
    invalid("backend cpu was requested but the tensors are on cuda:" +
            std::to_string(a.q.device_index));
  }
  if (a.backend == Backend::cuda && a.q.device != Device::cuda) {
    invalid("backend cuda was requested but the tensors are on the host (cpu)");
  }
  if (a.q.device == Device::cuda && compute == DType::f32) {
    fail(ErrorCode::not_supported,
         q_fp8 ? "out dtype float32 is supported on the CPU backend only (FP8 attention on CUDA "
                 "computes in float16 or bfloat16)"
               : "dtype float32 is supported on the CPU backend only");
  }

  // shapes
  const int h_dim = rank - 2;
  const std::int64_t D = a.q.shape[rank - 1];
  if (D != 64 && D != 128 && D != 256) {
    fail(ErrorCode::not_supported,
         "head dim " + std::to_string(D) + " is not supported (64, 128, 256)");
  }
  for (auto [t, name] : {std::pair{&a.k, "k"}, std::pair{&a.v, "v"}}) {
    if (t->shape[rank - 1] != D) {
      invalid(std::string(name) + " head dim " + std::to_string(t->shape[rank - 1]) +
              " differs from q head dim " + std::to_string(D));
    }
  }
  for (int i = 0; i < rank; ++i) {
    if (a.out.shape[i] != a.q.shape[i]) {
      invalid("out shape " + shape_str(a.out) + " differs from q shape " + shape_str(a.q));
    }
    if (a.v.shape[i] != a.k.shape[i]) {
      invalid("v shape " + shape_str(a.v) + " differs from k shape " + shape_str(a.k));
    }
  }
  const std::int64_t hq = a.q.shape[h_dim];
  const std::int64_t hkv = a.k.shape[h_dim];
  check_positive(hq, "q heads (Hq)");
  check_positive(hkv, "k heads (Hkv)");
  if (hq > INT32_MAX || hkv > INT32_MAX) {  // a stride-0 view can claim any count
    invalid("q heads " + std::to_string(hq) + " / kv heads " + std::to_string(hkv) +
            ": each must be at most 2^31 - 1");
  }
  if (hq % hkv != 0) {
    invalid("q heads " + std::to_string(hq) + " are not a multiple of kv heads " +
            std::to_string(hkv) + " (GQA needs Hq % Hkv == 0)");
  }
  check_operand(a.q, "q");
  check_operand(a.k, "k");
  check_operand(a.v, "v");
  check_operand(a.out, "out");

  // The kernels work in base 2: scale x log2(e) must stay finite (3e38 gave NaN everywhere).
  constexpr float kMaxSoftmaxScale = std::numeric_limits<float>::max() / 1.4426950408889634f;
  if (a.softmax_scale && !(std::isfinite(*a.softmax_scale) && *a.softmax_scale > 0.f &&
                           *a.softmax_scale <= kMaxSoftmaxScale)) {
    char v[32];
    std::snprintf(v, sizeof v, "%.9g", static_cast<double>(*a.softmax_scale));
    invalid(std::string("softmax_scale ") + v +
            " must be positive, finite and at most 2.36e38 (FLT_MAX / log2(e))");
  }
  if (!(std::isfinite(a.softcap) && a.softcap >= 0.f)) {
    char v[32];
    std::snprintf(v, sizeof v, "%.9g", static_cast<double>(a.softcap));
    invalid(std::string("softcap ") + v + " must be finite and >= 0 (0: no soft-capping)");
  }
  if (a.num_threads < 0) invalid("num_threads " + std::to_string(a.num_threads) + " is negative");
  for (auto [w, name] : {std::pair{a.mask.window_left, "mask.window_left"},
                         std::pair{a.mask.window_right, "mask.window_right"}}) {
    if (w < -1) {
      invalid(std::string(name) + " " + std::to_string(w) +
              " is invalid: must be >= 0, or -1 for unbounded");
    }
  }
  if (a.mask.global_tokens < 0) {
    invalid("mask.global_tokens " + std::to_string(a.mask.global_tokens) +
            " is negative (0 turns global tokens off)");
  }
  if (a.mask.global_stride < 0) {
    invalid("mask.global_stride " + std::to_string(a.mask.global_stride) +
            " is negative (0 turns strided global tokens off)");
  }

  const int kv_scale_stride =
      check_kv_scale_views(a.k_scale, a.v_scale, a.k.dtype, static_cast<int>(hkv), a.q, "q",
                           "gpuattn::attention_forward");

  FwdParams p;
  if (q_fp8) {
    p.q_scale_stride = check_q_scale_view(a.q_scale, static_cast<int>(hq), a.q);
    p.q_scale = static_cast<const float*>(a.q_scale.data);
  }
  if (quantized) {
    p.k_scale = static_cast<const float*>(a.k_scale.data);
    p.v_scale = static_cast<const float*>(a.v_scale.data);
    p.kv_scale_stride = kv_scale_stride;
  }
  p.kv_dtype = a.k.dtype;
  p.q = a.q.data;
  p.k = a.k.data;
  p.v = a.v.data;
  p.o = a.out.data;
  p.hq = static_cast<int>(hq);
  p.hkv = static_cast<int>(hkv);
  p.head_dim = static_cast<int>(D);
  p.dtype = compute;
  p.device = a.q.device;
  p.device_index = a.q.device_index;
  p.causal = a.causal;
  p.window_left = a.mask.window_left;
  p.window_right = a.mask.window_right;
  p.global_tokens = a.mask.global_tokens;
  p.global_stride = a.mask.global_stride;
  p.precision = a.precision;
  p.num_threads = a.num_threads;
  p.check_indices = a.check_indices;
  if (a.counters.present()) {
    const TensorView& c = a.counters;
    if (a.q.device != Device::cuda) {
      invalid("counters is for CUDA calls (the kernels' work counters); q is on the host");
    }
    if (c.data == nullptr) invalid("counters is a null pointer");
    if (c.dtype != DType::i32) {
      invalid(std::string("counters has dtype ") + to_string(c.dtype) + ", expected int32");
    }
    if (c.rank != 1 || c.shape[0] < 1) {
      invalid("counters has shape " + shape_str(c) + ", expected [n] with n >= 1");
    }
    if (c.stride[0] != 1) {
      invalid("counters stride is " + std::to_string(c.stride[0]) + ", must be 1");
    }
    if (reinterpret_cast<std::uintptr_t>(c.data) % 4 != 0) {
      invalid(unaligned("counters", a.counters.data, 4));
    }
    check_same_place(c, a.q, "counters");
    p.counters = static_cast<std::int32_t*>(c.data);
    p.counters_count = c.shape[0];
  }
  p.pdl = a.pdl;
  p.pdl_early = a.pdl && a.pdl_cache_ready;
  p.scale = a.softmax_scale ? *a.softmax_scale : static_cast<float>(1.0 / std::sqrt(double(D)));
  p.scale_log2 = static_cast<float>(p.scale * 1.4426950408889634);
  if (a.softcap > 0.f) {
    // softcap * tanh(q.k * scale / softcap): the tanh's argument and the exp2's factor. Both must
    // be normal floats: a ratio that underflows (a huge softcap) or overflows (a tiny one: 0 x inf
    // is NaN for a zero q.k) would change the result, not round it.
    auto text = [](double x) {
      char v[32];
      std::snprintf(v, sizeof v, "%.9g", x);
      return std::string(v);
    };
    const std::string cap = "softcap " + text(a.softcap);
    const double pre = static_cast<double>(p.scale) / a.softcap;
    const double fmin = std::numeric_limits<float>::min(), fmax = std::numeric_limits<float>::max();
    if (static_cast<double>(a.softcap) * 1.4426950408889634 > fmax) {
      invalid(cap + " must be at most 2.36e38 (FLT_MAX / log2(e))");
    }
    if (!(pre >= fmin && pre <= fmax)) {
      invalid(cap + " with softmax_scale " + text(p.scale) +
              ": scale / softcap must be a normal float (1.18e-38 to 3.4e38), the factor of q.k "
              "inside the tanh");
    }
    p.softcap_pre = static_cast<float>(pre);
    p.softcap = a.softcap;
    p.scale_log2 = static_cast<float>(static_cast<double>(a.softcap) * 1.4426950408889634);
    if (a.q_scale.present()) {
      throw Error(ErrorCode::not_supported,
                  "gpuattn::attention_forward: softcap with an FP8 q (q_scale) is not supported");
    }
  }

  if (!varlen) {
    const std::int64_t B = a.q.shape[0];
    check_positive(B, "batch size (q dim 0)");
    check_positive(a.q.shape[1], "q sequence length (Sq)");
    const bool paged = a.block_table.present();
    check_positive(a.k.shape[1], paged ? "k page size (k dim 1)" : "k sequence length (Sk)");
    if (paged) check_positive(a.k.shape[0], "k page count (k dim 0)");
    if (!paged && a.k.shape[0] != B) {
      invalid("k batch " + std::to_string(a.k.shape[0]) + " differs from q batch " +
              std::to_string(B));
    }
    if (B > INT32_MAX) invalid("q batch " + std::to_string(B) + " exceeds 2^31 - 1");
    for (auto [t, name] :
         {std::pair{&a.q, "q sequence length (Sq, q dim 1)"},
          std::pair{&a.k, paged ? "k page size (k dim 1)" : "k sequence length (Sk, k dim 1)"}}) {
      if (t->shape[1] > INT32_MAX) {
        invalid(std::string(name) + " " + std::to_string(t->shape[1]) + " exceeds 2^31 - 1");
      }
    }
    if (a.max_seqlen_q != 0 || a.max_seqlen_k != 0) {
      invalid("max_seqlen_q/k are for varlen (cu_seqlens) calls only; got " +
              std::to_string(a.max_seqlen_q) + "/" + std::to_string(a.max_seqlen_k));
    }
    p.batch = static_cast<int>(B);
    p.seqlen_q = static_cast<int>(a.q.shape[1]);
    p.seqlen_k = static_cast<int>(a.k.shape[1]);
    p.total_q = B * p.seqlen_q;
    p.total_k = B * p.seqlen_k;
    if (paged) set_block_table(a, p);
    p.q_batch_stride = a.q.stride[0];
    p.q_row_stride = a.q.stride[1];
    p.q_head_stride = a.q.stride[2];
    p.k_batch_stride = a.k.stride[0];
    p.k_row_stride = a.k.stride[1];
    p.k_head_stride = a.k.stride[2];
    p.v_batch_stride = a.v.stride[0];
    p.v_row_stride = a.v.stride[1];
    p.v_head_stride = a.v.stride[2];
    p.o_batch_stride = a.out.stride[0];
    p.o_row_stride = a.out.stride[1];
    p.o_head_stride = a.out.stride[2];
    // int32 [B], stride 1, 4-byte aligned, beside q: seqused_k and leftpad_k.
    const auto per_sequence = [&](const TensorView& u, const char* name) {
      const std::string n = name;
      if (u.data == nullptr) invalid(n + " is a null pointer");
      if (u.dtype != DType::i32) {
        invalid(n + " has dtype " + to_string(u.dtype) + ", expected int32");
      }
      if (u.rank != 1 || u.shape[0] != B) {
        invalid(n + " has shape " + shape_str(u) + ", expected [batch = " + std::to_string(B) +
                "]");
      }
      if (u.stride[0] != 1) invalid(n + " stride is " + std::to_string(u.stride[0]) + ", must be 1");
      if (reinterpret_cast<std::uintptr_t>(u.data) % 4 != 0) invalid(unaligned(name, u.data, 4));
      check_same_place(u, a.q, name);
      return static_cast<const std::int32_t*>(u.data);
    };
    if (a.seqused_k.present()) {
      p.seqused_k = per_sequence(a.seqused_k, "seqused_k");
      if (a.q.device == Device::cpu) check_seqused_k(p.seqused_k, p.batch, p.seqlen_k);
    }
    if (a.leftpad_k.present()) {
      p.leftpad_k = per_sequence(a.leftpad_k, "leftpad_k");
      if (a.q.device == Device::cpu) {
        check_leftpad_k(p.leftpad_k, p.seqused_k, p.batch, p.seqlen_k);
      }
    }
    if (paged && a.q.device == Device::cpu) {
      check_block_table(p, p.block_table, p.seqused_k, p.leftpad_k);
    }
  } else {
    if (a.seqused_k.present()) {
      invalid("seqused_k is for dense calls; a varlen call gives its key lengths in cu_seqlens_k");
    }
    if (a.leftpad_k.present()) {
      invalid("leftpad_k is for dense calls; a varlen call gives each sequence's keys in "
              "cu_seqlens_k");
    }
    if (a.block_table.present()) {
      invalid(
          "block_table is for dense calls (q [B, Sq, Hq, D], k/v [num_pages, page_size, Hkv, "
          "D]); varlen calls with a paged cache are not supported");
    }
    if (!a.cu_seqlens_q.present()) invalid("cu_seqlens_k is given but cu_seqlens_q is missing");
    if (!a.cu_seqlens_k.present()) invalid("cu_seqlens_q is given but cu_seqlens_k is missing");
    check_cu(a.cu_seqlens_q, "cu_seqlens_q", a.q);
    check_cu(a.cu_seqlens_k, "cu_seqlens_k", a.q);
    if (a.cu_seqlens_q.shape[0] != a.cu_seqlens_k.shape[0]) {
      invalid("cu_seqlens_q has " + std::to_string(a.cu_seqlens_q.shape[0]) +
              " entries but cu_seqlens_k has " + std::to_string(a.cu_seqlens_k.shape[0]));
    }
    check_positive(a.max_seqlen_q, "max_seqlen_q");
    check_positive(a.max_seqlen_k, "max_seqlen_k");
    if (a.q.shape[0] > INT32_MAX || a.k.shape[0] > INT32_MAX) {
      invalid("packed row counts q " + std::to_string(a.q.shape[0]) + " / k " +
              std::to_string(a.k.shape[0]) +
              ": each must be at most 2^31 - 1 (cu_seqlens are int32)");
    }
    p.batch = static_cast<int>(a.cu_seqlens_q.shape[0] - 1);
    p.seqlen_q = a.max_seqlen_q;
    p.seqlen_k = a.max_seqlen_k;
    p.total_q = a.q.shape[0];
    p.total_k = a.k.shape[0];
    p.cu_seqlens_q = static_cast<const std::int32_t*>(a.cu_seqlens_q.data);
    p.cu_seqlens_k = static_cast<const std::int32_t*>(a.cu_seqlens_k.data);
    if (a.q.device == Device::cpu) {
      check_cu_seqlens(p.cu_seqlens_q, p.batch, p.total_q, p.seqlen_q, "cu_seqlens_q");
      check_cu_seqlens(p.cu_seqlens_k, p.batch, p.total_k, p.seqlen_k, "cu_seqlens_k");
    }
    p.q_row_stride = a.q.stride[0];
    p.q_head_stride = a.q.stride[1];
    p.k_row_stride = a.k.stride[0];
    p.k_head_stride = a.k.stride[1];
    p.v_row_stride = a.v.stride[0];
    p.v_head_stride = a.v.stride[1];
    p.o_row_stride = a.out.stride[0];
    p.o_head_stride = a.out.stride[1];
  }

  set_block_layout(a, p);

  if (a.alibi_slopes.present()) {
    p.alibi_batch_stride = check_alibi_view(a.alibi_slopes, p.batch, p.hq, a.q, varlen);
    p.alibi_slopes = static_cast<const float*>(a.alibi_slopes.data);
    p.alibi_raw = static_cast<float>(1.4426950408889634 / static_cast<double>(p.scale_log2));
    if (!std::isfinite(p.alibi_raw)) {  // a scale (or cap) below ~2.9e-39: no slope has a unit
      char v[32];
      std::snprintf(v, sizeof v, "%.9g", static_cast<double>(a.softcap > 0.f ? a.softcap : p.scale));
      invalid(std::string("alibi_slopes with ") + (a.softcap > 0.f ? "softcap " : "softmax_scale ") +
              v + ": 1 / " + (a.softcap > 0.f ? "softcap" : "softmax_scale") +
              " must be a float (the kernels' unit of the bias)");
    }
  }

  // The mask works on int positions (key minus query position): Sq + Sk must fit an int.
  if (!p.dense_or_causal() && std::int64_t{p.seqlen_q} + p.seqlen_k > INT32_MAX) {
    invalid("Sq + Sk = " + std::to_string(std::int64_t{p.seqlen_q} + p.seqlen_k) +
            " exceeds 2^31 - 1, the limit for a sliding window, global tokens or a block layout");
  }

  // CUDA launches: a CTA per (row block, head, batch entry) or a persistent grid over them, with
  // 32-bit tile and work-item counts and the grid's y and z limits.
  if (p.device == Device::cuda) {
    constexpr std::int64_t kMaxTokens = std::int64_t{1} << 30, kMaxGridYZ = 65535;
    if (p.seqlen_q > kMaxTokens || p.seqlen_k > kMaxTokens) {
      invalid("sequence length Sq " + std::to_string(p.seqlen_q) + " / Sk " +
              std::to_string(p.seqlen_k) + " exceeds 2^30, the CUDA kernels' limit");
    }
    if (p.hq > kMaxGridYZ) {
      invalid("Hq " + std::to_string(p.hq) + " exceeds 65535, the CUDA grid's limit on heads");
    }
    if (p.batch > kMaxGridYZ) {
      invalid("batch " + std::to_string(p.batch) +
              " exceeds 65535, the CUDA grid's limit on batch entries (sequences)");
    }
    const std::int64_t row_blocks = (std::int64_t{p.seqlen_q} + 63) / 64 * p.hq * p.batch;
    if (row_blocks > kMaxTokens) {
      invalid("ceil(Sq / 64) * Hq * batch = " + std::to_string(row_blocks) +
              " row blocks exceeds 2^30 (Sq " + std::to_string(p.seqlen_q) + ", Hq " +
              std::to_string(p.hq) + ", batch " + std::to_string(p.batch) + "): split the call");
    }
  }

  // Kernels step through tiles of up to 256 rows with 32-bit offsets. A row dim of one row (dense
  // Sq or Sk of 1, a page of 1, a varlen total of 1) never steps: its stride may be anything (torch
  // gives size-1 dims arbitrary strides) and becomes 0, so that no kernel forms an offset from it,
  // not even for the masked rows of a tile.
  const int row_dim = p.is_varlen() ? 0 : 1;
  for (auto [stride, t, name] :
       {std::tuple{&p.q_row_stride, &a.q, "q"}, std::tuple{&p.k_row_stride, &a.k, "k"},
        std::tuple{&p.v_row_stride, &a.v, "v"}, std::tuple{&p.o_row_stride, &a.out, "out"}}) {
    if (t->shape[row_dim] == 1) *stride = 0;
    if (*stride > kMaxRowStride) {
      invalid(std::string(name) + " sequence (row) stride " + std::to_string(*stride) +
              " exceeds the supported maximum of " + std::to_string(kMaxRowStride) + " elements");
    }
  }

  if (a.lse.present()) {
    const TensorView& l = a.lse;
    if (l.data == nullptr) invalid("lse is a null pointer");
    if (l.dtype != DType::f32) {
      invalid(std::string("lse dtype ") + to_string(l.dtype) + " must be float32");
    }
    if (reinterpret_cast<std::uintptr_t>(l.data) % 4 != 0) invalid(unaligned("lse", l.data, 4));
    if (!varlen) {
      if (l.rank != 3 || l.shape[0] != p.batch || l.shape[1] != p.hq || l.shape[2] != p.seqlen_q) {
        invalid("lse shape " + shape_str(l) + " must be [B, Hq, Sq] = [" + std::to_string(p.batch) +
                ", " + std::to_string(p.hq) + ", " + std::to_string(p.seqlen_q) + "]");
      }
      p.lse_batch_stride = l.stride[0];
      p.lse_head_stride = l.stride[1];
      p.lse_row_stride = l.stride[2];
    } else {
      if (l.rank != 2 || l.shape[0] != p.hq || l.shape[1] != p.total_q) {
        invalid("lse shape " + shape_str(l) + " must be [Hq, total_q] = [" + std::to_string(p.hq) +
                ", " + std::to_string(p.total_q) + "]");
      }
      p.lse_head_stride = l.stride[0];
      p.lse_row_stride = l.stride[1];
    }
    for (int i = 0; i < l.rank; ++i) {
      if (l.stride[i] < 0) invalid("lse has a negative stride " + std::to_string(l.stride[i]));
    }
    p.lse = static_cast<float*>(l.data);
  }
  check_written_views(a);
  if (p.has_alibi() && a.q.device == Device::cpu) {  // values last; on CUDA a host copy's
    const int rows = p.alibi_rows();
    std::vector<float> host(static_cast<std::size_t>(rows) * p.hq);
    for (int b = 0; b < rows; ++b) {
      for (int h = 0; h < p.hq; ++h) host[std::size_t(b) * p.hq + h] = p.alibi_slope(b, h);
    }
    check_alibi_slopes(host.data(), rows, p.hq, p.alibi_raw, p.has_softcap(),
                       "gpuattn::attention_forward");
  }
  return p;
}

double attention_flops(const FwdParams& p, const std::int32_t* cu_q, const std::int32_t* cu_k) {
  // Without a per-head layout every head sees the same keys: count head 0 and multiply.
  const bool per_head = p.has_block_layout() && p.block_head_stride != 0;
  double visible = 0;
  for (int h = 0; h < (per_head ? p.hq : 1); ++h) {
    const MaskPolicy mask = p.mask(h);
    for (int b = 0; b < p.batch; ++b) {
      const int lq = cu_q ? cu_q[b + 1] - cu_q[b] : p.seqlen_q;
      const int lk = cu_k ? cu_k[b + 1] - cu_k[b] : p.seqlen_k;
      if (!p.causal && p.dense_or_causal()) {
        visible += double(lq) * lk;
      } else {
        for (int i = 0; i < lq; ++i) visible += mask.visible_count(i, lq, lk);
      }
    }
  }
  return 4.0 * visible * p.head_dim * (per_head ? 1 : p.hq);
}

}  // namespace gpuattn
