#include "core/rotary.h"

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>

#include "core/fwd_params.h"

namespace gpuattn {
namespace {

constexpr const char* kFn = "gpuattn::apply_rotary";

[[noreturn]] void invalid_in(const char* fn, const std::string& msg) {
  throw Error(ErrorCode::invalid_argument, std::string(fn) + ": " + msg);
}

[[noreturn]] void invalid(const std::string& msg) { invalid_in(kFn, msg); }

std::string place_of(const TensorView& t) {
  return to_string(t.device) + (t.device == Device::cuda ? ":" + std::to_string(t.device_index) : "");
}

// A view of `rank` dimensions: present, positive sizes, non-negative strides, the last 1, its
// pointer aligned to its elements, on `where`'s device (named `where_name` in the error).
void check_view_in(const char* fn, const TensorView& t, const char* name, int rank,
                   const char* layout, const TensorView& where, const char* where_name) {
  if (t.data == nullptr) invalid_in(fn, std::string(name) + " is a null pointer");
  check_place_values(t, name, fn);
  if (t.rank != rank) {
    invalid_in(fn, std::string(name) + " has rank " + std::to_string(t.rank) + " (shape " +
                       shape_str(t) + "), expected rank " + std::to_string(rank) + " " + layout);
  }
  for (int i = 0; i < rank; ++i) {
    if (t.shape[i] <= 0) {
      invalid_in(fn, std::string(name) + " has shape " + shape_str(t) +
                         ": every size must be positive");
    }
    if (t.shape[i] > INT32_MAX) {
      invalid_in(fn, std::string(name) + " has shape " + shape_str(t) + ", past int32 sizes");
    }
    if (t.stride[i] < 0) {
      invalid_in(fn, std::string(name) + " has a negative stride " + std::to_string(t.stride[i]) +
                         " in dimension " + std::to_string(i));
    }
  }
  if (t.stride[rank - 1] != 1) {
    invalid_in(fn, std::string(name) + " last-dimension stride is " +
                       std::to_string(t.stride[rank - 1]) + ", must be 1");
  }
  if (reinterpret_cast<std::uintptr_t>(t.data) % element_size(t.dtype) != 0) {
    std::ostringstream msg;
    msg << name << " pointer " << t.data << " is not aligned to its " << element_size(t.dtype)
        << "-byte elements";
    invalid_in(fn, msg.str());
  }
  if (t.device != where.device ||
      (t.device == Device::cuda && t.device_index != where.device_index)) {
    invalid_in(fn, std::string(name) + " is on " + place_of(t) + " but " + where_name + " is on " +
                       place_of(where));
  }
}

void check_view(const TensorView& t, const char* name, int rank, const char* layout,
                const TensorView& x) {
  check_view_in(kFn, t, name, rank, layout, x, "x");
}

}  // namespace

void check_rotary_tables(const TensorView& cos, const TensorView& sin, DType x_dtype,
                         std::int64_t head_dim, const TensorView& where, const RotaryNames& n) {
  check_view_in(n.fn, cos, n.cos, 2, "[S_ro, R / 2]", where, n.where);
  check_view_in(n.fn, sin, n.sin, 2, "[S_ro, R / 2]", where, n.where);
  const DType tt = cos.dtype;
  if (tt != x_dtype && tt != DType::f32) {
    invalid_in(n.fn, std::string(n.cos) + " dtype " + to_string(tt) + " is neither " + n.x +
                         "'s (" + to_string(x_dtype) + ") nor float32");
  }
  if (sin.dtype != tt) {
    invalid_in(n.fn, std::string(n.sin) + " dtype " + to_string(sin.dtype) + " differs from " +
                         n.cos + " dtype " + to_string(tt));
  }
  if (sin.shape[0] != cos.shape[0] || sin.shape[1] != cos.shape[1]) {
    invalid_in(n.fn, std::string(n.sin) + " shape " + shape_str(sin) + " differs from " + n.cos +
                         " shape " + shape_str(cos));
  }
  if (2 * cos.shape[1] > head_dim) {
    invalid_in(n.fn, std::string(n.cos) + " shape " + shape_str(cos) + " rotates " +
                         std::to_string(2 * cos.shape[1]) + " features, more than " + n.x +
                         "'s head dim " + std::to_string(head_dim));
  }
}

void check_rotary_indices(const RotaryParams& p, const std::int32_t* offsets,
                          const std::int32_t* cu) {
  if (cu != nullptr) {
    if (cu[0] != 0) invalid("cu_seqlens[0] is " + std::to_string(cu[0]) + ", must be 0");
    for (int b = 0; b < p.batch; ++b) {
      if (cu[b + 1] < cu[b]) {
        invalid("cu_seqlens[" + std::to_string(b + 1) + "] is " + std::to_string(cu[b + 1]) +
                ", below cu_seqlens[" + std::to_string(b) + "] = " + std::to_string(cu[b]) +
                ": the bounds must not fall");
      }
      if (p.max_seqlen >= 0 && cu[b + 1] - cu[b] > p.max_seqlen) {
        invalid("sequence " + std::to_string(b) + " has " + std::to_string(cu[b + 1] - cu[b]) +
                " rows (cu_seqlens[" + std::to_string(b) + ".." + std::to_string(b + 1) +
                "] = " + std::to_string(cu[b]) + ".." + std::to_string(cu[b + 1]) +
                "), more than max_seqlen " + std::to_string(p.max_seqlen));
      }
    }
    if (cu[p.batch] != p.seqlen) {
      invalid("cu_seqlens[" + std::to_string(p.batch) + "] is " + std::to_string(cu[p.batch]) +
              ", must be x's " + std::to_string(p.seqlen) + " rows");
    }
  }
  for (int b = 0; b < p.batch; ++b) {
    const int rows = cu != nullptr ? cu[b + 1] - cu[b] : p.seqlen;
    const std::int64_t last = p.same_position || rows == 0 ? 0 : rows - 1;
    const std::int64_t o = offsets != nullptr ? offsets[b] : p.seqlen_offset;
    if (o >= 0 && (rows == 0 || o < p.table - last)) continue;  // not o + last: o may be huge
    const std::string what =
        offsets != nullptr ? "seqlen_offsets[" + std::to_string(b) + "] is " + std::to_string(o)
                           : "seqlen_offset is " + std::to_string(o);
    if (o < 0) invalid(what + ", must be >= 0");
    invalid(what + ": " +
            (p.same_position ? "the rows of sequence " + std::to_string(b) + " take position " +
                                   std::to_string(o)
                             : "rows 0.." + std::to_string(last) + " of sequence " +
                                   std::to_string(b) + " take positions " + std::to_string(o) +
                                   ".." + std::to_string(o + last)) +
            ", past the " + std::to_string(p.table) + " positions of cos/sin (positions [0, " +
            std::to_string(p.table) + "))");
  }
}

RotaryParams make_rotary_params(const RotaryArgs& a) {
  check_backend_value(a.backend, kFn);
  const bool varlen = a.cu_seqlens.present();
  const int rank = varlen ? 3 : 4;
  const char* const layout = varlen ? "[total, H, D] (with cu_seqlens)" : "[B, S, H, D]";
  check_view(a.x, "x", rank, layout, a.x);
  const DType t = a.x.dtype;
  if (t != DType::f16 && t != DType::bf16 && t != DType::f32) {
    invalid(std::string("x dtype ") + to_string(t) + " is not float16, bfloat16 or float32");
  }
  if (a.x.device == Device::cuda && t == DType::f32) {
    throw Error(ErrorCode::not_supported,
                std::string(kFn) + ": float32 x is supported on the CPU backend only");
  }
  if (a.backend == Backend::cpu && a.x.device != Device::cpu) {
    invalid("backend cpu was requested but x is on " + place_of(a.x));
  }
  if (a.backend == Backend::cuda && a.x.device != Device::cuda) {
    invalid("backend cuda was requested but x is on the host (cpu)");
  }
  check_view(a.out, "out", rank, layout, a.x);
  if (a.out.dtype != t) {
    invalid(std::string("out dtype ") + to_string(a.out.dtype) + " differs from x dtype " +
            to_string(t));
  }
  if (a.out.shape != a.x.shape) {
    invalid("out shape " + shape_str(a.out) + " differs from x shape " + shape_str(a.x));
  }
  const std::int64_t head_dim = a.x.shape[rank - 1];
  check_rotary_tables(a.cos, a.sin, t, head_dim, a.x, RotaryNames{kFn, "cos", "sin", "x", "x"});
  std::int64_t batch = a.x.shape[0];
  if (varlen) {
    const TensorView& cu = a.cu_seqlens;
    check_view(cu, "cu_seqlens", 1, "[batch + 1]", a.x);
    if (cu.dtype != DType::i32) {
      invalid(std::string("cu_seqlens has dtype ") + to_string(cu.dtype) + ", expected int32");
    }
    if (cu.shape[0] < 2) {
      invalid("cu_seqlens has shape " + shape_str(cu) + ", expected [batch + 1] with batch >= 1");
    }
    batch = cu.shape[0] - 1;
    if (a.max_seqlen < -1) {
      invalid("max_seqlen is " + std::to_string(a.max_seqlen) + ", must be >= 0 (or -1: none)");
    }
  } else if (a.max_seqlen != -1) {
    invalid("max_seqlen is " + std::to_string(a.max_seqlen) +
            " without cu_seqlens: it bounds a varlen call's lengths");
  }
  if (a.seqlen_offsets.present()) {
    const TensorView& o = a.seqlen_offsets;
    check_view(o, "seqlen_offsets", 1, "[B]", a.x);
    if (o.dtype != DType::i32) {
      invalid(std::string("seqlen_offsets has dtype ") + to_string(o.dtype) + ", expected int32");
    }
    if (o.shape[0] != batch) {
      invalid("seqlen_offsets has shape " + shape_str(o) + ", expected [batch = " +
              std::to_string(batch) + "]");
    }
    if (a.seqlen_offset != 0) {
      invalid("seqlen_offset is " + std::to_string(a.seqlen_offset) +
              " beside a seqlen_offsets array: give one of the two");
    }
  }

  if (view_self_overlapping(a.out)) {
    invalid("out has elements that share an address: its strides must not overlap (a zero stride "
            "over more than one element, or a stride inside another dimension's span)");
  }
  // out is x (in place), or apart from every view the call reads.
  const bool in_place = same_view(a.out, a.x);
  if (!in_place) {
    if (views_share_bytes(a.out, a.x)) {
      invalid("out's memory overlaps x's without being x itself (give out = x to rotate in place)");
    }
    for (auto [v, name] : {std::pair{&a.cos, "cos"}, std::pair{&a.sin, "sin"},
                           std::pair{&a.seqlen_offsets, "seqlen_offsets"},
                           std::pair{&a.cu_seqlens, "cu_seqlens"}}) {
      if (v->present() && spans_overlap(a.out, *v)) {
        invalid(std::string("out's memory overlaps ") + name + "'s");
      }
    }
  } else {
    for (auto [v, name] : {std::pair{&a.cos, "cos"}, std::pair{&a.sin, "sin"},
                           std::pair{&a.seqlen_offsets, "seqlen_offsets"},
                           std::pair{&a.cu_seqlens, "cu_seqlens"}}) {
      if (v->present() && spans_overlap(a.x, *v)) {
        invalid(std::string("x (rotated in place) overlaps ") + name + "'s memory");
      }
    }
  }

  RotaryParams p;
  p.x = a.x.data;
  p.out = a.out.data;
  p.cos = a.cos.data;
  p.sin = a.sin.data;
  p.seqlen_offsets = static_cast<const std::int32_t*>(a.seqlen_offsets.data);
  p.seqlen_offset = a.seqlen_offset;
  p.cu_seqlens = static_cast<const std::int32_t*>(a.cu_seqlens.data);
  p.max_seqlen = a.max_seqlen;
  // A varlen view is [total, H, D]: its rows are the [B, S, H, D] rows of one batch entry.
  const int lead = varlen ? 0 : 1;
  p.x_batch_stride = varlen ? 0 : a.x.stride[0];
  p.x_row_stride = a.x.stride[lead];
  p.x_head_stride = a.x.stride[lead + 1];
  p.o_batch_stride = varlen ? 0 : a.out.stride[0];
  p.o_row_stride = a.out.stride[lead];
  p.o_head_stride = a.out.stride[lead + 1];
  p.cos_stride = a.cos.stride[0];
  p.sin_stride = a.sin.stride[0];
  p.batch = static_cast<int>(batch);
  p.seqlen = static_cast<int>(a.x.shape[lead]);
  p.heads = static_cast<int>(a.x.shape[lead + 1]);
  p.head_dim = static_cast<int>(head_dim);
  p.half = static_cast<int>(a.cos.shape[1]);
  p.table = static_cast<int>(a.cos.shape[0]);
  p.dtype = t;
  p.table_dtype = a.cos.dtype;
  p.interleaved = a.interleaved;
  p.same_position = a.same_position;
  p.in_place = in_place;
  p.check_indices = a.check_indices;
  p.device = a.x.device;
  p.device_index = a.x.device_index;
  if (p.device == Device::cpu || (p.seqlen_offsets == nullptr && p.cu_seqlens == nullptr)) {
    check_rotary_indices(p, p.seqlen_offsets, p.cu_seqlens);
  } else if (p.seqlen_offsets == nullptr) {
    // A varlen call's one offset is a host value: checked here even when the lengths, on the
    // device, are trusted. Row 0 of some sequence takes it (x has rows).
    if (p.seqlen_offset < 0) {
      invalid("seqlen_offset is " + std::to_string(p.seqlen_offset) + ", must be >= 0");
    }
    if (p.seqlen_offset >= p.table) {
      invalid("seqlen_offset is " + std::to_string(p.seqlen_offset) + ": row 0 of a sequence "
              "takes position " + std::to_string(p.seqlen_offset) + ", past the " +
              std::to_string(p.table) + " positions of cos/sin (positions [0, " +
              std::to_string(p.table) + "))");
    }
  }
  return p;
}

}  // namespace gpuattn
