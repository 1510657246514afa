// Python binding `gpu_attention._C`: DLPack arrays (torch tensors, numpy arrays, anything with
// __dlpack__) in, gpuattn::attention_forward out; and the `auto` sparsity policy
// (gpuattn::choose_sparsity). No torch headers: tensors cross as nb::ndarray, zero-copy. The
// flash-attn compatible functions and the policy's dataclass live in Python (gpu_attention/); this
// file only translates arrays, options, results and errors.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "gpuattn/attention.h"
#include "gpuattn/kv_cache.h"
#include "gpuattn/rotary.h"
#include "gpuattn/sparsity.h"
#include "py_args.h"

namespace nb = nanobind;

void bind_engine(nb::module_& m);  // engine_module.cpp
void bind_dist(nb::module_& m);    // dist_module.cpp

namespace {

using Input = nb::ndarray<nb::ro>;  // read-only inputs: q, k, v, cu_seqlens, block_layout
using Output = nb::ndarray<>;       // written by the library: out, lse

[[noreturn]] void invalid(const std::string& msg) {
  throw gpuattn::Error(gpuattn::ErrorCode::invalid_argument, msg);
}

// CUDA asked for where no CUDA device is usable: a RuntimeError (python/README.md, "Errors").
[[noreturn]] void no_cuda_device(const std::string& what) {
#if defined(GPUATTN_WITH_CUDA)
  const char* why = "no CUDA device is visible (no driver, or none visible to this process)";
#else
  const char* why =
      "this build of gpu_attention has no CUDA backend (built with GPUATTN_CUDA=OFF "
      "or without nvcc)";
#endif
  throw nb::builtin_exception(nb::exception_type::runtime_error,
                              (what + " needs a CUDA device, but none is usable: " + why).c_str());
}

std::string dtype_str(nb::dlpack::dtype t) {
  using C = nb::dlpack::dtype_code;
  const char* prefix = nullptr;
  switch (static_cast<C>(t.code)) {
    case C::Int: prefix = "int"; break;
    case C::UInt: prefix = "uint"; break;
    case C::Float: prefix = "float"; break;
    case C::Bfloat: prefix = "bfloat"; break;
    case C::Complex: prefix = "complex"; break;
    case C::Bool: prefix = "bool"; break;
    default:
      return "dtype(code=" + std::to_string(t.code) + ", bits=" + std::to_string(t.bits) + ")";
  }
  std::string s = prefix + std::to_string(t.bits);
  if (t.lanes != 1) s += "x" + std::to_string(t.lanes);
  return s;
}

gpuattn::DType to_dtype(nb::dlpack::dtype t, const char* name) {
  using C = nb::dlpack::dtype_code;
  if (t.lanes == 1) {
    if (t.code == static_cast<std::uint8_t>(C::Float) && t.bits == 16) return gpuattn::DType::f16;
    if (t.code == static_cast<std::uint8_t>(C::Bfloat) && t.bits == 16) return gpuattn::DType::bf16;
    if (t.code == static_cast<std::uint8_t>(C::Float) && t.bits == 32) return gpuattn::DType::f32;
    if (t.code == static_cast<std::uint8_t>(C::Int) && t.bits == 32) return gpuattn::DType::i32;
    if (t.code == static_cast<std::uint8_t>(C::UInt) && t.bits == 8) return gpuattn::DType::u8;
    if (t.code == static_cast<std::uint8_t>(C::Int) && t.bits == 8) return gpuattn::DType::i8;
    if (t.code == static_cast<std::uint8_t>(C::Float8_E4M3FN) && t.bits == 8) {
      return gpuattn::DType::e4m3;
    }
  }
  // ALiBi slopes are float32 only (the library names a float16 one): a dtype it has no name for
  // (float64, numpy's default and that of torch.tensor of Python floats) is named as such, not
  // against the attention inputs' list.
  if (std::string(name) == "alibi_slopes") {
    invalid("alibi_slopes has dtype " + dtype_str(t) +
            ", expected float32 ([nheads] or [batch, nheads])");
  }
  // An unsupported q dtype is "not supported"; any other tensor with a dtype we cannot even
  // describe cannot match q, so it is an invalid argument (as a dtype mismatch is in the core).
  const bool is_q = std::string(name) == "q";
  throw gpuattn::Error(
      is_q ? gpuattn::ErrorCode::not_supported : gpuattn::ErrorCode::invalid_argument,
      std::string(name) + " has dtype " + dtype_str(t) +
          ", which is not supported (float16, bfloat16, float32; int32 for "
          "cu_seqlens; uint8 for the block-sparse layout; int8 or float8_e4m3fn for a quantized "
          "KV cache)");
}

// "[2, 0, 64]"
std::string shape_text(const std::int64_t* dims, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// An array of no elements passed as a row of storage (flash_attn_interface._call): torch exports
// a null data pointer for a tensor of no elements, while the library takes one (a varlen side of
// no rows) only through a valid pointer to a row of storage. The wrappers then pass that row (the
// array's shape with each 0 made 1, allocated on its device) and the array's own shape in
// `empty_shapes`, keyed by the parameter's name; the view of the row is narrowed to that shape.
class EmptyShapes {
 public:
  explicit EmptyShapes(const std::optional<nb::dict>& shapes) : shapes_(shapes) {}

  // The shape given for argument `key`, if any.
  std::optional<std::vector<std::int64_t>> find(const char* key) {
    if (!shapes_ || !shapes_->contains(key)) return std::nullopt;
    ++found_;
    const std::string name = std::string("empty_shapes['") + key + "']";
    const nb::object shape = (*shapes_)[key];
    if (!nb::isinstance<nb::tuple>(shape)) {
      throw nb::type_error(
          (name + " must be a tuple of ints, got " + gpuattn_py::repr_of(shape)).c_str());
    }
    std::vector<std::int64_t> dims;
    for (nb::handle d : shape) {
      dims.push_back(
          gpuattn_py::int_arg(d, name + "[" + std::to_string(dims.size()) + "]", 0, INT64_MAX));
    }
    return dims;
  }

  // After every argument is converted: each key named one of them.
  void check_all_used() const {
    if (shapes_ && found_ != shapes_->size()) {
      invalid("empty_shapes " + gpuattn_py::repr_of(*shapes_) +
              " names an argument that is absent or takes no array");
    }
  }

 private:
  const std::optional<nb::dict>& shapes_;
  std::size_t found_ = 0;
};

// DLPack -> TensorView. Strides from DLPack are already in elements; a missing strides array
// means row-major contiguous (DLPack < 1.2 producers may omit it). `empty_shape`: the array is a
// row of storage for an array of that shape, of no elements (EmptyShapes).
template <typename Array>
gpuattn::TensorView to_view(const Array& a, const char* name,
                            const std::optional<std::vector<std::int64_t>>& empty_shape = {}) {
  gpuattn::TensorView t;
  const auto rank = static_cast<int>(a.ndim());
  if (rank < 1 || rank > gpuattn::TensorView::kMaxRank) {
    invalid(std::string(name) + " has " + std::to_string(rank) +
            " dimensions; attention tensors have 1 to 4");
  }
  switch (a.device_type()) {
    case nb::device::cpu::value:
    case nb::device::cuda_host::value: t.device = gpuattn::Device::cpu; break;
    case nb::device::cuda::value:
#if !defined(GPUATTN_WITH_CUDA)
      no_cuda_device(std::string(name) + " on cuda:" + std::to_string(a.device_id()));
#endif
      t.device = gpuattn::Device::cuda;
      t.device_index = a.device_id();
      break;
    default:
      invalid(std::string(name) + " lives on DLPack device type " +
              std::to_string(a.device_type()) + "; only cpu and cuda tensors are supported");
  }
  t.dtype = to_dtype(a.dtype(), name);
  t.data = const_cast<void*>(a.data());
  t.rank = rank;
  std::int64_t contiguous_stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    t.shape[i] = static_cast<std::int64_t>(a.shape(i));
    t.stride[i] = a.stride_ptr() ? a.stride(i) : contiguous_stride;
    contiguous_stride *= t.shape[i];
  }
  if (empty_shape) {
    bool within = static_cast<int>(empty_shape->size()) == rank;
    bool none = false;
    for (int i = 0; within && i < rank; ++i) {
      within = (*empty_shape)[i] <= t.shape[i];
      none = none || (*empty_shape)[i] == 0;
    }
    if (!within || !none) {
      invalid(std::string("empty_shapes gives ") + name + " the shape " +
              shape_text(empty_shape->data(), static_cast<int>(empty_shape->size())) +
              ", which is no empty part of the array passed, " + shape_text(t.shape.data(), rank) +
              " (as many dimensions, each at most the array's, one of them 0)");
    }
    for (int i = 0; i < rank; ++i) t.shape[i] = (*empty_shape)[i];
  } else if (t.numel() == 0) {
    // No element to address: its strides (numpy exports zeros) are set row-major contiguous as
    // if each 0 were 1 (a row of storage's), which the layout checks take; a null pointer has no
    // such row.
    if (t.data == nullptr) {
      invalid(std::string(name) + " has no elements (shape " + shape_text(t.shape.data(), rank) +
              ") and was exported without storage (a null data pointer, as torch exports such "
              "a tensor): the library takes an array of no elements only through a pointer to "
              "a row of storage");
    }
    std::int64_t stride = 1;
    for (int i = rank - 1; i >= 0; --i) {
      t.stride[i] = stride;
      const std::int64_t n = t.shape[i] > 1 ? t.shape[i] : 1;
      stride = stride > INT64_MAX / n ? INT64_MAX : stride * n;  // saturated: never stepped over
    }
  }
  // A dimension of size 1 is never stepped over, so its stride is arbitrary (torch reports
  // whatever a view produced); 0 keeps the library's stride checks from tripping on it.
  for (int i = 0; i < rank - 1; ++i) {
    if (t.shape[i] == 1) t.stride[i] = 0;
  }
  return t;
}

// A quantized cache's k/v: int8 or float8_e4m3fn arrays as they are, or uint8 arrays read as
// `kv_format` ("e4m3": FP8 E4M3 bytes, for frameworks whose DLPack export has no float8 type).
template <typename Array>
gpuattn::TensorView kv_view(const Array& a, const char* name, const std::string& kv_format,
                            const std::optional<std::vector<std::int64_t>>& empty_shape = {}) {
  gpuattn::TensorView t = to_view(a, name, empty_shape);
  if (kv_format.empty()) return t;
  if (kv_format != "e4m3") invalid("kv_format '" + kv_format + "' is not one of '', 'e4m3'");
  if (t.dtype != gpuattn::DType::u8 && t.dtype != gpuattn::DType::e4m3) {
    invalid(std::string(name) + " has dtype " + gpuattn::to_string(t.dtype) +
            " but kv_format 'e4m3' reads uint8 (or float8_e4m3fn) bytes");
  }
  t.dtype = gpuattn::DType::e4m3;
  return t;
}

gpuattn::Precision to_precision(const std::string& s) {
  if (s == "standard") return gpuattn::Precision::standard;
  if (s == "compensated") return gpuattn::Precision::compensated;
  invalid("precision '" + s + "' is not one of 'standard', 'compensated'");
}

gpuattn::Backend to_backend(const std::string& s) {
  if (s == "auto") return gpuattn::Backend::automatic;
  if (s == "cpu") return gpuattn::Backend::cpu;
  if (s == "cuda") return gpuattn::Backend::cuda;
  invalid("backend '" + s + "' is not one of 'auto', 'cpu', 'cuda'");
}

void attention_forward(const Input& q, const Input& k, const Input& v, const Output& out,
                       const std::optional<Output>& lse, const std::optional<Input>& cu_seqlens_q,
                       const std::optional<Input>& cu_seqlens_k, int max_seqlen_q, int max_seqlen_k,
                       std::optional<double> softmax_scale, bool causal, std::uintptr_t stream,
                       const std::string& precision, const std::string& backend, int num_threads,
                       int window_left, int window_right, int global_tokens, int global_stride,
                       const std::optional<Input>& block_layout, int block_q, int block_k,
                       const std::optional<Input>& seqused_k,
                       const std::optional<Input>& block_table, bool check_indices,
                       const std::optional<Input>& k_scale, const std::optional<Input>& v_scale,
                       const std::string& kv_format, bool pdl, const std::optional<Input>& q_scale,
                       bool check_only, const std::optional<nb::dict>& empty_shapes,
                       double softcap, const std::optional<Input>& leftpad_k,
                       const std::optional<Input>& alibi_slopes) {
  gpuattn::AttentionArgs args;
  EmptyShapes empty(empty_shapes);
  // FP8 attention: with q_scale, q is read as k/v are (kv_format).
  args.q = q_scale ? kv_view(q, "q", kv_format, empty.find("q")) : to_view(q, "q", empty.find("q"));
  if (q_scale) args.q_scale = to_view(*q_scale, "q_scale", empty.find("q_scale"));
  args.k = kv_view(k, "k", kv_format, empty.find("k"));
  args.v = kv_view(v, "v", kv_format, empty.find("v"));
  if (k_scale) args.k_scale = to_view(*k_scale, "k_scale", empty.find("k_scale"));
  if (v_scale) args.v_scale = to_view(*v_scale, "v_scale", empty.find("v_scale"));
  args.out = to_view(out, "out", empty.find("out"));
  if (lse) args.lse = to_view(*lse, "lse", empty.find("lse"));
  if (cu_seqlens_q) {
    args.cu_seqlens_q = to_view(*cu_seqlens_q, "cu_seqlens_q", empty.find("cu_seqlens_q"));
  }
  if (cu_seqlens_k) {
    args.cu_seqlens_k = to_view(*cu_seqlens_k, "cu_seqlens_k", empty.find("cu_seqlens_k"));
  }
  args.max_seqlen_q = max_seqlen_q;
  args.max_seqlen_k = max_seqlen_k;
  if (seqused_k) args.seqused_k = to_view(*seqused_k, "seqused_k", empty.find("seqused_k"));
  if (leftpad_k) args.leftpad_k = to_view(*leftpad_k, "leftpad_k", empty.find("leftpad_k"));
  if (block_table) {
    args.block_table = to_view(*block_table, "block_table", empty.find("block_table"));
  }
  // float32 [Hq] or [B, Hq] on q's device; shape, strides, device and values are validated by
  // the library (gpuattn::AttentionArgs::alibi_slopes).
  if (alibi_slopes) {
    args.alibi_slopes = to_view(*alibi_slopes, "alibi_slopes", empty.find("alibi_slopes"));
  }
  args.check_indices = check_indices;
  args.pdl = pdl;
  if (softmax_scale) args.softmax_scale = static_cast<float>(*softmax_scale);
  // Validated by the library (finite, >= 0, its ratio to the scale a normal float); here only a
  // value that float32 would turn into another one (a positive 1e-46 into 0, "no cap"; 1e39 into
  // inf) is named as passed.
  const float cap = static_cast<float>(softcap);
  if ((softcap != 0.0 && cap == 0.f) || (std::isfinite(softcap) && !std::isfinite(cap))) {
    char v[40];
    std::snprintf(v, sizeof v, "%.9g", softcap);
    invalid(std::string("softcap ") + v + " is outside float32's range (it would round to " +
            (cap == 0.f ? "0, no soft-capping)" : "inf)"));
  }
  args.softcap = cap;
  args.causal = causal;
  args.mask.window_left = window_left;  // validated by the library (>= -1, >= 0 for globals)
  args.mask.window_right = window_right;
  args.mask.global_tokens = global_tokens;
  args.mask.global_stride = global_stride;
  // Block-sparse layout: uint8 [Hq or 1, n_blocks_q, n_blocks_k]; shape, dtype, device and block
  // sizes are validated by the library (block_q/block_k must be 0 without a layout).
  if (block_layout) {
    args.mask.block_sparse.layout =
        to_view(*block_layout, "mask.block_sparse.layout", empty.find("block_layout"));
  }
  empty.check_all_used();
  args.mask.block_sparse.block_q = block_q;
  args.mask.block_sparse.block_k = block_k;
  args.precision = to_precision(precision);
  args.backend = to_backend(backend);
  args.stream = reinterpret_cast<void*>(stream);
  args.num_threads = num_threads;

  // The arrays stay alive through the references held by the caller's frame; no Python object is
  // touched while the GIL is released.
  nb::gil_scoped_release release;
  if (check_only) {
    gpuattn::check_attention_args(args);
    return;
  }
  gpuattn::attention_forward(args);
}

nb::dict estimate_dict(const gpuattn::SparsityEstimate& e) {
  nb::dict d;
  d["bytes"] = e.bytes;
  d["visible_pairs"] = e.visible_pairs;
  d["fits"] = e.fits;
  return d;
}

// gpuattn::choose_sparsity field by field; the request's checks (and their ValueError messages)
// are the library's. Returns the SparsityChoice as a dict (gpu_attention/sparsity_policy.py makes
// it a frozen dataclass).
nb::dict choose_sparsity(std::int64_t seqlen, int batch, int heads, int kv_heads, int head_dim,
                         int dtype_bytes, std::int64_t free_memory_bytes,
                         std::optional<int> window_hint, int global_tokens, bool causal,
                         std::int64_t max_dense_seqlen, int block_size) {
  gpuattn::SparsityRequest r;
  r.seqlen = seqlen;
  r.batch = batch;
  r.heads = heads;
  r.kv_heads = kv_heads;
  r.head_dim = head_dim;
  r.dtype_bytes = dtype_bytes;
  r.free_memory_bytes = free_memory_bytes;
  r.window_hint = window_hint;
  r.global_tokens = global_tokens;
  r.causal = causal;
  r.max_dense_seqlen = max_dense_seqlen;
  r.block_size = block_size;
  gpuattn::SparsityChoice c;
  {
    nb::gil_scoped_release release;  // the window estimate walks every row: O(seqlen)
    c = gpuattn::choose_sparsity(r);
  }
  nb::dict d;
  d["mode"] = std::string(gpuattn::to_string(c.mode));
  d["fits"] = c.fits;
  d["window_left"] = c.window_left;
  d["window_right"] = c.window_right;
  d["global_tokens"] = c.global_tokens;
  d["block_size"] = c.block_size;
  d["max_block_density"] = c.max_block_density;
  d["dense"] = estimate_dict(c.dense);
  d["sliding_window"] = estimate_dict(c.sliding_window);
  d["block_sparse"] = estimate_dict(c.block_sparse);
  d["reason"] = c.reason;
  return d;
}

void translate_error(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const gpuattn::Error& e) {
    PyObject* type = PyExc_RuntimeError;
    switch (e.code()) {
      case gpuattn::ErrorCode::invalid_argument: type = PyExc_ValueError; break;
      case gpuattn::ErrorCode::not_supported: type = PyExc_NotImplementedError; break;
      case gpuattn::ErrorCode::cuda_error: type = PyExc_RuntimeError; break;
    }
    PyErr_SetString(type, e.what());
  }
}

}  // namespace

// The array conversions, for the other translation units (dist_module.cpp).
gpuattn::TensorView array_view(const nb::ndarray<nb::ro>& a, const char* name) {
  return to_view(a, name);
}
gpuattn::TensorView array_view(const nb::ndarray<>& a, const char* name) {
  return to_view(a, name);
}
gpuattn::Precision precision_of(const std::string& s) {
  return to_precision(s);
}
void require_cuda_device(const std::string& what) {
  if (!gpuattn::cuda_available()) no_cuda_device(what);
}

void append_kv(const Output& k_cache, const Output& v_cache, const Input& k_new, const Input& v_new,
               const Input& cache_seqlens, const std::optional<Input>& block_table,
               bool check_indices, std::uintptr_t stream, const std::string& backend,
               const std::optional<Input>& k_scale, const std::optional<Input>& v_scale,
               const std::string& kv_format, const std::optional<nb::dict>& empty_shapes,
               const std::optional<Input>& rotary_cos, const std::optional<Input>& rotary_sin,
               bool rotary_interleaved, const std::optional<Input>& q,
               const std::optional<Output>& q_out, bool q_same_position) {
  gpuattn::AppendKvArgs args;
  EmptyShapes empty(empty_shapes);
  args.k_cache = kv_view(k_cache, "k_cache", kv_format, empty.find("k_cache"));
  args.v_cache = kv_view(v_cache, "v_cache", kv_format, empty.find("v_cache"));
  if (k_scale) args.k_scale = to_view(*k_scale, "k_scale", empty.find("k_scale"));
  if (v_scale) args.v_scale = to_view(*v_scale, "v_scale", empty.find("v_scale"));
  args.k_new = to_view(k_new, "k", empty.find("k_new"));
  args.v_new = to_view(v_new, "v", empty.find("v_new"));
  args.cache_seqlens = to_view(cache_seqlens, "cache_seqlens", empty.find("cache_seqlens"));
  if (block_table) {
    args.block_table = to_view(*block_table, "block_table", empty.find("block_table"));
  }
  if (rotary_cos) args.rotary_cos = to_view(*rotary_cos, "rotary_cos", empty.find("rotary_cos"));
  if (rotary_sin) args.rotary_sin = to_view(*rotary_sin, "rotary_sin", empty.find("rotary_sin"));
  args.rotary_interleaved = rotary_interleaved;
  if (q) args.q = to_view(*q, "q", empty.find("q"));
  if (q_out) args.q_out = to_view(*q_out, "q_out", empty.find("q_out"));
  args.q_same_position = q_same_position;
  empty.check_all_used();
  args.check_indices = check_indices;
  args.backend = to_backend(backend);
  args.stream = reinterpret_cast<void*>(stream);
  nb::gil_scoped_release release;
  gpuattn::append_kv(args);
}

void apply_rotary(const Input& x, const Output& out, const Input& cos, const Input& sin,
                  const std::optional<Input>& seqlen_offsets, std::int64_t seqlen_offset,
                  const std::optional<Input>& cu_seqlens, std::int64_t max_seqlen,
                  bool interleaved, bool same_position, bool check_indices, std::uintptr_t stream,
                  const std::string& backend) {
  gpuattn::RotaryArgs args;
  args.x = to_view(x, "x");
  args.out = to_view(out, "out");
  args.cos = to_view(cos, "cos");
  args.sin = to_view(sin, "sin");
  if (seqlen_offsets) args.seqlen_offsets = to_view(*seqlen_offsets, "seqlen_offsets");
  args.seqlen_offset = seqlen_offset;
  if (cu_seqlens) args.cu_seqlens = to_view(*cu_seqlens, "cu_seqlens");
  args.max_seqlen = max_seqlen;
  args.interleaved = interleaved;
  args.same_position = same_position;
  args.check_indices = check_indices;
  args.backend = to_backend(backend);
  args.stream = reinterpret_cast<void*>(stream);
  nb::gil_scoped_release release;
  gpuattn::apply_rotary(args);
}

NB_MODULE(_C, m) {
  m.doc() =
      "gpu_attention native module: gpuattn::attention_forward over DLPack arrays, and the "
      "`auto` sparsity policy (gpuattn::choose_sparsity)";
  m.attr("__version__") = GPUATTN_VERSION;
  nb::register_exception_translator(&translate_error);

  m.def("attention_forward", &attention_forward, nb::arg("q").noconvert(), nb::arg("k").noconvert(),
        nb::arg("v").noconvert(), nb::arg("out").noconvert(),
        nb::arg("lse").noconvert().none() = nb::none(),
        nb::arg("cu_seqlens_q").noconvert().none() = nb::none(),
        nb::arg("cu_seqlens_k").noconvert().none() = nb::none(), nb::arg("max_seqlen_q") = 0,
        nb::arg("max_seqlen_k") = 0, nb::arg("softmax_scale").none() = nb::none(),
        nb::arg("causal") = false, nb::arg("stream") = 0, nb::arg("precision") = "standard",
        nb::arg("backend") = "auto", nb::arg("num_threads") = 0, nb::arg("window_left") = -1,
        nb::arg("window_right") = -1, nb::arg("global_tokens") = 0, nb::arg("global_stride") = 0,
        nb::arg("block_layout").noconvert().none() = nb::none(), nb::arg("block_q") = 0,
        nb::arg("block_k") = 0, nb::arg("seqused_k").noconvert().none() = nb::none(),
        nb::arg("block_table").noconvert().none() = nb::none(), nb::arg("check_indices") = true,
        nb::arg("k_scale").noconvert().none() = nb::none(),
        nb::arg("v_scale").noconvert().none() = nb::none(), nb::arg("kv_format") = "",
        nb::arg("pdl") = false, nb::arg("q_scale").noconvert().none() = nb::none(),
        nb::arg("check_only") = false, nb::arg("empty_shapes").none() = nb::none(),
        nb::arg("softcap") = 0.0, nb::arg("leftpad_k").noconvert().none() = nb::none(),
        nb::arg("alibi_slopes").noconvert().none() = nb::none(),
        "Computes attention into `out` (and `lse` when given) with gpuattn::attention_forward.\n\n"
        "Dense: q [B, Sq, Hq, D], k/v [B, Sk, Hkv, D], out like q, lse float32 [B, Hq, Sq].\n"
        "Varlen (cu_seqlens given): q [total_q, Hq, D], k/v [total_k, Hkv, D], lse [Hq, "
        "total_q], cu_seqlens int32 [batch + 1] on q's device.\n"
        "seqused_k (dense only): int32 [B] on q's device, the keys each sequence uses.\n"
        "leftpad_k (dense only): int32 [B] on q's device, the first key each sequence uses "
        "(keys leftpad_k[b] .. seqused_k[b] - 1; gpuattn::AttentionArgs::leftpad_k).\n"
        "block_table (dense only): int32 [B, max_pages] on q's device; k/v are then a page pool "
        "[num_pages, page_size, Hkv, D] (a paged KV cache).\n"
        "check_indices=False (CUDA): cu_seqlens, seqused_k, leftpad_k and block_table are "
        "trusted, not "
        "checked on a host copy (no stream synchronization; CUDA-graph capturable; a checked "
        "call with any of them, or with scales, refuses a capturing stream).\n"
        "pdl=True (CUDA, sm_90+): a decode call's kernel launches with programmatic dependent "
        "launch (gpuattn::AttentionArgs::pdl).\n"
        "`stream` is a cudaStream_t as an integer (0: default stream); the CUDA call is "
        "asynchronous on it. window_left/window_right/global_tokens/global_stride are "
        "gpuattn::MaskSpec (-1: unbounded window side; 0: no global tokens / no stride), "
        "combined with `causal` as documented in gpuattn/attention.h. block_layout (uint8 "
        "[Hq or 1, ceil(Sq / block_q), ceil(Sk / block_k)], max_seqlen for varlen) with "
        "block_q/block_k is gpuattn::MaskSpec::block_sparse (None with 0/0: no block mask). "
        "k_scale/v_scale (float32 [Hkv] or [1] on q's device) make k/v a quantized cache of "
        "int8 or float8_e4m3fn (uint8 bytes with kv_format='e4m3'): element x of kv head h is "
        "x * k_scale[h]. "
        "q_scale (float32 [Hq] or [1] on q's device) makes the call FP8 attention: q, k and v of "
        "float8_e4m3fn (uint8 bytes with kv_format='e4m3') with q_scale, k_scale and v_scale, "
        "out float16 or bfloat16 (float32 on the CPU). "
        "softcap > 0 soft-caps the scores: softcap * tanh(q.k * scale / softcap) "
        "(gpuattn::AttentionArgs::softcap). "
        "alibi_slopes (float32 [Hq] or [B, Hq] on q's device, last stride 1; B the batch or the "
        "number of varlen sequences) adds the ALiBi bias -slope[b][h] * |i + Sk - Sq - j| to the "
        "score of query i and key j (after the scale and the soft-cap, before the softmax; the "
        "lse is of the biased scores; gpuattn::AttentionArgs::alibi_slopes). On CUDA the decode "
        "kernels (16-bit and 8-bit caches) and, on Hopper, the wgmma kernels add it "
        "(sm90_ws_128x128 at head dims 64 and 128); windowed and compensated calls run the sm_80 "
        "kernel, FP8 q is dequantized; the slopes' values are checked on a host copy unless "
        "check_indices=False. "
        "check_only=True validates the arguments as the call would (gpuattn::"
        "check_attention_args: the values of device index arrays, scales and slopes aside) and "
        "computes nothing. "
        "empty_shapes (a dict: parameter name -> shape tuple) marks arrays passed as a row of "
        "storage for an array of that shape of no elements (torch exports no storage for one; "
        "the library takes a varlen side of no rows through a pointer to a row). "
        "Raises ValueError (invalid input), NotImplementedError (not "
        "supported) or RuntimeError (a CUDA error, or CUDA tensors where no CUDA device is "
        "usable); out/lse are untouched on error.");

  m.def("append_kv", &append_kv, nb::arg("k_cache").noconvert(), nb::arg("v_cache").noconvert(),
        nb::arg("k_new").noconvert(), nb::arg("v_new").noconvert(),
        nb::arg("cache_seqlens").noconvert(),
        nb::arg("block_table").noconvert().none() = nb::none(), nb::arg("check_indices") = true,
        nb::arg("stream") = 0, nb::arg("backend") = "auto",
        nb::arg("k_scale").noconvert().none() = nb::none(),
        nb::arg("v_scale").noconvert().none() = nb::none(), nb::arg("kv_format") = "",
        nb::arg("empty_shapes").none() = nb::none(),
        nb::arg("rotary_cos").noconvert().none() = nb::none(),
        nb::arg("rotary_sin").noconvert().none() = nb::none(),
        nb::arg("rotary_interleaved") = false, nb::arg("q").noconvert().none() = nb::none(),
        nb::arg("q_out").noconvert().none() = nb::none(), nb::arg("q_same_position") = false,
        "Appends k_new/v_new [B, Snew, Hkv, D] to k_cache/v_cache in place at rows "
        "cache_seqlens[b].. (gpuattn::append_kv): a dense cache [B, Sk, Hkv, D], or with "
        "block_table a page pool [num_pages, page_size, Hkv, D]. cache_seqlens is not updated. "
        "With k_scale/v_scale the cache is int8 or float8_e4m3fn (uint8 bytes with "
        "kv_format='e4m3') and the new rows are quantized: x / scale, rounded and saturated. "
        "With rotary_cos/rotary_sin [S_ro, R / 2] the new keys are rotated first, row r of "
        "sequence b at position cache_seqlens[b] + r (apply_rotary's rotation, pairs per "
        "rotary_interleaved); with q and q_out, q_out = q rotated as well, query row i at "
        "cache_seqlens[b] + i (cache_seqlens[b] with q_same_position). empty_shapes as in "
        "attention_forward. "
        "Raises ValueError naming a bad input, with the caches untouched.");

  m.def("apply_rotary", &apply_rotary, nb::arg("x").noconvert(), nb::arg("out").noconvert(),
        nb::arg("cos").noconvert(), nb::arg("sin").noconvert(),
        nb::arg("seqlen_offsets").noconvert().none() = nb::none(), nb::arg("seqlen_offset") = 0,
        nb::arg("cu_seqlens").noconvert().none() = nb::none(), nb::arg("max_seqlen") = -1,
        nb::arg("interleaved") = false, nb::arg("same_position") = false,
        nb::arg("check_indices") = true, nb::arg("stream") = 0, nb::arg("backend") = "auto",
        "Rotary position embedding (gpuattn::apply_rotary, gpuattn/rotary.h): out [B, S, H, D] = "
        "x with its first R = 2 * cos.shape[1] features rotated by cos/sin [S_ro, R / 2] at each "
        "row's position (seqlen_offsets[b] or seqlen_offset, + the row unless same_position); "
        "pairs (2j, 2j + 1) when interleaved, else (j, j + R / 2). Varlen: with cu_seqlens "
        "(int32 [B + 1]) x and out are [total, H, D], sequence b rows cu_seqlens[b] .. "
        "cu_seqlens[b + 1] - 1, every length at most max_seqlen when it is >= 0. out may be x "
        "itself (in place). Raises ValueError naming a bad input, with out untouched.");

  m.def("choose_sparsity", &choose_sparsity, nb::arg("seqlen"), nb::arg("batch"), nb::arg("heads"),
        nb::arg("kv_heads"), nb::arg("head_dim"), nb::arg("dtype_bytes"),
        nb::arg("free_memory_bytes"), nb::arg("window_hint").none(), nb::arg("global_tokens"),
        nb::arg("causal"), nb::arg("max_dense_seqlen"), nb::arg("block_size"),
        "gpuattn::choose_sparsity (gpuattn/sparsity.h): the `auto` sparsity policy's choice for "
        "one self-attention call, as a dict of the SparsityChoice fields (mode as a string; "
        "dense/sliding_window/block_sparse as dicts of bytes, visible_pairs, fits). Host only. "
        "Raises ValueError naming a bad request value. Use gpu_attention.choose_sparsity.");

  bind_engine(m);
  bind_dist(m);

  m.def("cuda_available", &gpuattn::cuda_available,
        "True when this build has the CUDA backend and a CUDA device is visible.");
}
