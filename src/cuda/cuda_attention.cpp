// CUDA backend entry: device-side checks that need the runtime, then the one dispatch from runtime
// values (dtype, head dim) to the compiled kernels.
#include "cuda/cuda_attention.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/decode_split.h"
#include "core/env_switch.h"
#include "core/tile_config.h"
#include "cuda/cuda_check.h"
#include "cuda/fwd_decode.h"
#include "cuda/fwd_sm80.h"
#include "cuda/fwd_sm90.h"
#include "cuda/host_copies.h"
#include "cuda/paged_kv.h"
#include "cuda/rotary.h"

namespace gpuattn {
namespace {

// `fn`: the public entry point the error is reported from.
[[noreturn]] void invalid(const std::string& msg, const char* fn = "attention_forward") {
  throw Error(ErrorCode::invalid_argument, std::string("gpuattn::") + fn + ": " + msg);
}

// The pointer must be device (or managed) memory of `device`.
void check_device_pointer(const void* ptr, int device, const char* name,
                          const char* fn = "attention_forward") {
  cudaPointerAttributes attr{};
  const cudaError_t err = cudaPointerGetAttributes(&attr, ptr);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state of this query
    std::ostringstream s;
    s << name << " pointer " << ptr << " is not CUDA memory (" << cudaGetErrorString(err) << ")";
    invalid(s.str(), fn);
  }
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged) {
    std::ostringstream s;
    s << name << " pointer " << ptr << " is host memory but the tensor is marked cuda:" << device
      << " (host/device mix)";
    invalid(s.str(), fn);
  }
  if (attr.device != device) {
    std::ostringstream s;
    s << name << " pointer " << ptr << " lives on cuda:" << attr.device
      << " but the tensor is marked cuda:" << device;
    invalid(s.str(), fn);
  }
}

// Restores the caller's current device on scope exit.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    GPUATTN_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) GPUATTN_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

// The device index `what` ("tensors", "caches") are on must be a visible CUDA device.
void check_device_index(int index, const char* what, const char* fn = "attention_forward") {
  const int count = cuda_device_count();
  if (index < 0 || index >= count) {
    invalid(std::string(what) + " are on cuda:" + std::to_string(index) + " but " +
                std::to_string(count) + " CUDA device(s) are visible",
            fn);
  }
}

// Whether a tile configuration is one of the sm_90a kernel's: the table names them sm90_*.
bool is_sm90(FwdKernel kernel) {
  return std::string_view(tile_config(kernel).name).substr(0, 5) == "sm90_";
}

// The host copies QueuedScales::check took: one value, or one a head.
struct HostScales {
  std::vector<float> k, v, q;
};

// A quantized cache's scales (and an FP8 call's q_scale, when given: `hq` of them at `q_stride`)
// queued for a host copy on construction (one value when a stride is 0, else `n` or `hq` at the
// stride); check() after copies.wait(): positive and finite.
class QueuedScales {
 public:
  QueuedScales(HostCopies& copies, const float* k_scale, const float* v_scale, int stride, int n,
               const float* q_scale = nullptr, int q_stride = 0, int hq = 0)
      : count_(stride == 0 ? 1 : n), q_count_(q_stride == 0 ? 1 : hq) {
    k_ = queue(copies, k_scale, stride, count_, "k_scale");
    v_ = queue(copies, v_scale, stride, count_, "v_scale");
    if (q_scale != nullptr) q_ = queue(copies, q_scale, q_stride, q_count_, "q_scale");
  }
  // `fn`: the entry point, "attention_forward" or "append_kv".
  HostScales check(const char* fn) const {
    HostScales h;
    h.k.assign(k_, k_ + count_);
    h.v.assign(v_, v_ + count_);
    if (q_ != nullptr) h.q.assign(q_, q_ + q_count_);
    const std::string where = std::string("gpuattn::") + fn;
    check_kv_scales(h.k.data(), h.v.data(), count_, where.c_str());
    if (q_ != nullptr) check_q_scales(h.q.data(), q_count_, where.c_str());
    return h;
  }

 private:
  static const float* queue(HostCopies& copies, const float* scales, int stride, int count,
                            const char* what) {
    return copies.copy_rows(scales, 1, static_cast<std::size_t>(std::max(stride, 1)),
                            static_cast<std::size_t>(count), what);
  }
  int count_, q_count_;
  const float* k_ = nullptr;
  const float* v_ = nullptr;
  const float* q_ = nullptr;
};

// A float16 call whose 8-bit operands run on a float16 copy dequantized element by element
// (x * scale rounded once: the cache where decode_takes(p) does not hold, q where the FP8 kernel
// does not take the call) needs every such element finite in float16: scale x 448 (E4M3) or
// x 127 (int8) at most 65504. The decode and FP8 kernels apply the scales to fp32 scores and
// outputs instead, and bfloat16 copies reach FLT_MAX: neither has this limit. Checked on the host
// copy of the scales (check_indices); an unchecked call past it reads infinities.
void check_f16_copy_range(const FwdParams& p, const HostScales& h, bool kv_copied, bool q_copied) {
  if (p.dtype != DType::f16) return;
  const float largest = p.kv_dtype == DType::i8 ? 127.f : 448.f;
  // `copy`: what was copied; `why`: why this call copies it; `also`: who else takes the scale.
  const auto check = [&](const std::vector<float>& scales, const char* name, float x_max,
                         const char* copy, const char* why, const char* also) {
    for (std::size_t i = 0; i < scales.size(); ++i) {
      if (static_cast<double>(scales[i]) * x_max <= 65504.0) continue;
      char msg[512];
      std::snprintf(msg, sizeof msg,
                    "%s[%zu] is %.9g, above %.6g (65504 / %g): this float16 call runs on a "
                    "float16 copy of its %s dequantized element by element (%s), where %g x %.9g "
                    "overflows float16; a bfloat16 call takes it%s",
                    name, i, static_cast<double>(scales[i]), 65504.0 / x_max,
                    static_cast<double>(x_max), copy, why, static_cast<double>(x_max),
                    static_cast<double>(scales[i]), also);
      throw Error(ErrorCode::invalid_argument, std::string("gpuattn::attention_forward: ") + msg);
    }
  };
  const char* const why = "not a decode call, which reads the cache in place";
  const char* const also = ", as does a decode call";
  if (kv_copied) {
    check(h.k, "k_scale", largest, "cache", why, also);
    check(h.v, "v_scale", largest, "cache", why, also);
  }
  if (q_copied) check(h.q, "q_scale", 448.f, "q", "the FP8 kernel does not take the call", "");
}

// Whether decode_16x64 (decode_q8_16x64 on a quantized cache) can run call p at all (DecodePlan's
// rows, standard precision, no mask beyond causal, its shared memory within the device's opt-in
// limit per block, as select_fwd_config requires), whatever the rule would pick. Both kernels take
// DecodePlan::smem_bytes (the 8-bit ring has twice the stages of half the bytes). Head dim 256
// (136 KB) does not fit the 99 KB of sm_86 / sm_89 / sm_120: there a paged, seqused_k or
// quantized decode call runs on the gathered or dequantized copy instead of failing its launch.
bool decode_takes(const FwdParams& p) {
  const int smem = sm80::max_smem_per_block();
  return p.precision == Precision::standard && p.dense_or_causal() &&
         DecodePlan::eligible(p.seqlen_q, p.hq / p.hkv) &&
         (smem <= 0 || DecodePlan::smem_bytes(p.head_dim) <= smem);
}

// select_fwd_config's pick for p on the current device, GPUATTN_KERNEL applied. A call with
// seqused_k or leftpad_k takes a kernel that reads them, whatever GPUATTN_KERNEL names: decode_16x64 where it can
// run the call, else the sm_80 kernel (on Hopper too: the wgmma kernel reads len_k only).
// A paged call (block_table) likewise takes decode_16x64 where it can run it; any other runs on a
// contiguous copy of its pages (paged_forward), picked here as that copy's call would be.
FwdKernel pick_forward_kernel(const FwdParams& p) {
  // A quantized cache: decode calls read it in place, whatever GPUATTN_KERNEL names
  // (quantized_forward, paged_forward); any other call runs on a dequantized copy, picked here
  // as that copy's call would be.
  if (p.kv_quantized() && decode_takes(p)) return FwdKernel::decode_q8_16x64;
  // ALiBi over an 8-bit cache, not a decode call: the call runs on its dequantized copy
  // (gathered_forward: a 16-bit call of contiguous rows, not paged) and is picked as that copy's
  // call is; the FP8 kernel, which an FP8 q would otherwise take, adds no bias.
  if (p.kv_quantized() && p.has_alibi()) {
    FwdParams dp = p;
    dp.block_table = nullptr;
    dp.k_scale = dp.v_scale = nullptr;
    dp.kv_dtype = p.dtype;
    dp.k_row_stride = dp.v_row_stride = static_cast<std::int64_t>(p.hkv) * p.head_dim;
    dp.k_head_stride = dp.v_head_stride = p.head_dim;
    return pick_forward_kernel(dp);
  }
  if ((p.has_key_range() || p.is_paged()) && decode_takes(p)) {
    return FwdKernel::decode_16x64;
  }
  const KernelChoice choice = kernel_choice_from_env();
  // Caps above FwdParams::kFastTanhMaxCap take the exact tanh, which the sm_90a kernels do not
  // compile (its second tile loop slowed every call: fwd_sm90.cuh).
  // The sm_90a kernels add ALiBi to dense and causal calls in standard precision, and at head
  // dim 128 to sliding windows alone (their dense loop, which runs those; select_fwd_config picks
  // an instantiation that compiles the bias); with global tokens, a block layout, a window at
  // head dims 64 and 256, or compensated precision it is the sm_80 kernel's (its masked
  // instantiations). Both decode kernels add it.
  const bool alibi_on_sm90 = p.precision == Precision::standard &&
                             (p.dense_or_causal() || (p.head_dim == 128 && p.banded()));
  const bool sm90_available =
      choice != KernelChoice::sm80 && !p.has_key_range() && !p.exact_tanh() &&
      !(p.has_alibi() && !alibi_on_sm90) &&
      strides_fit_tma(p) && sm90::usable(p.dtype, p.head_dim);
  FwdShape shape = fwd_shape(p, sm80::compute_capability_major(), sm90_available, sm80::num_sms(),
                             sm80::max_smem_per_block());
  apply_kernel_choice(shape, choice);
  shape.decode_allowed = shape.decode_allowed && !p.has_key_range();
  return select_fwd_config(shape).kernel;
}

// The kernel launch of a checked call: select_fwd_config's pick (pick_forward_kernel), then the
// compiled instantiation of its dtype and head dim.
void launch_forward(const FwdParams& p, cudaStream_t stream) {
  const FwdKernel kernel = pick_forward_kernel(p);
  if (p.kv_quantized() != (kernel == FwdKernel::decode_q8_16x64)) {
    throw Error(ErrorCode::not_supported,
                "gpuattn: internal error: an 8-bit cache reached a 16-bit kernel");
  }
  const bool decode = kernel == FwdKernel::decode_16x64 || kernel == FwdKernel::decode_q8_16x64;
  if (decode) return decode::fwd(p, stream);
  if (is_sm90(kernel)) {
    if (p.dtype == DType::f16) {
      if (p.head_dim == 64) return sm90::fwd_f16_hdim64(kernel, p, stream);
      if (p.head_dim == 128) return sm90::fwd_f16_hdim128(kernel, p, stream);
      if (p.head_dim == 256) return sm90::fwd_f16_hdim256(kernel, p, stream);
    } else if (p.dtype == DType::bf16) {
      if (p.head_dim == 64) return sm90::fwd_bf16_hdim64(kernel, p, stream);
      if (p.head_dim == 128) return sm90::fwd_bf16_hdim128(kernel, p, stream);
      if (p.head_dim == 256) return sm90::fwd_bf16_hdim256(kernel, p, stream);
    }
  } else if (p.dtype == DType::f16) {
    if (p.head_dim == 64) return sm80::fwd_f16_hdim64(kernel, p, stream);
    if (p.head_dim == 128) return sm80::fwd_f16_hdim128(kernel, p, stream);
    if (p.head_dim == 256) return sm80::fwd_f16_hdim256(kernel, p, stream);
  } else if (p.dtype == DType::bf16) {
    if (p.head_dim == 64) return sm80::fwd_bf16_hdim64(kernel, p, stream);
    if (p.head_dim == 128) return sm80::fwd_bf16_hdim128(kernel, p, stream);
    if (p.head_dim == 256) return sm80::fwd_bf16_hdim256(kernel, p, stream);
  }
  throw Error(ErrorCode::not_supported,
              std::string("gpuattn::attention_forward: no CUDA kernel for dtype ") +
                  to_string(p.dtype) + " head dim " + std::to_string(p.head_dim));
}

// p reading 16-bit K/V of p.dtype at k / v instead of its cache (quantized or paged): no table,
// no scales; the caller sets the strides.
FwdParams dequantized(const FwdParams& p, const void* k, const void* v) {
  FwdParams dp = p;
  dp.block_table = nullptr;
  dp.block_table_stride = 0;
  dp.page_size = 0;
  dp.num_pages = 0;
  dp.k_scale = dp.v_scale = nullptr;
  dp.kv_scale_stride = 0;
  dp.kv_dtype = p.dtype;
  dp.k = k;
  dp.v = v;
  dp.check_indices = false;  // checked before (or trusted, as the caller asked)
  return dp;
}

// Host copies of a call's seqused_k and leftpad_k (those it has), made when p.check_indices:
// queued on construction into `copies`, checked by check() after copies.wait(). Readable while
// `copies` lives.
class HostKeyRange {
 public:
  HostKeyRange(const FwdParams& p, HostCopies& copies) : batch_(p.batch) {
    if (p.seqused_k != nullptr) check_device_pointer(p.seqused_k, p.device_index, "seqused_k");
    if (p.leftpad_k != nullptr) check_device_pointer(p.leftpad_k, p.device_index, "leftpad_k");
    if (!p.check_indices) return;
    const auto n = static_cast<std::size_t>(p.batch);
    if (p.seqused_k != nullptr) used_ = copies.copy(p.seqused_k, n, "seqused_k");
    if (p.leftpad_k != nullptr) start_ = copies.copy(p.leftpad_k, n, "leftpad_k");
  }
  bool copied() const { return used_ != nullptr || start_ != nullptr; }
  const std::int32_t* used() const { return used_; }
  const std::int32_t* start() const { return start_; }
  void check(const FwdParams& p) const {
    if (used_ != nullptr) check_seqused_k(used_, p.batch, p.seqlen_k);
    if (start_ != nullptr) check_leftpad_k(start_, used_, p.batch, p.seqlen_k);
  }
  // The largest key end (the gathered copy's rows): seqused_k's largest, or the cache's Sk
  // without it or unchecked.
  int longest_end(const FwdParams& p) const {
    return used_ == nullptr || batch_ == 0 ? p.seqlen_k : *std::max_element(used_, used_ + batch_);
  }
  // The most keys a sequence attends to (a decode plan's split length, as the call's seqlen_k):
  // seqused_k[b] - leftpad_k[b] at its largest; the cache's Sk without seqused_k (keys_end is
  // then seqlen_k itself, which must stay) or unchecked.
  int longest_attended(const FwdParams& p) const {
    if (used_ == nullptr) return p.seqlen_k;
    int most = 1;  // a plan of at least one key (sequences of none still leave out = 0)
    for (int b = 0; b < batch_; ++b) {
      most = std::max(most, used_[b] - (start_ == nullptr ? 0 : start_[b]));
    }
    return most;
  }

 private:
  int batch_;
  const std::int32_t* used_ = nullptr;
  const std::int32_t* start_ = nullptr;
};

// A dense call (paged, or a quantized cache, or both) that no kernel reads in place: the keys
// [leftpad_k[b], keys_end(b)) of every sequence, at their rows, `rows` >= each end, gathered (and
// dequantized) into a contiguous 16-bit copy from the library's pool, freed on `stream` after the
// call that runs on it.
void gathered_forward(const FwdParams& p, int longest, cudaStream_t stream) {
  const int rows = std::max(longest, 1);
  const std::size_t elems = static_cast<std::size_t>(p.batch) * rows * p.hkv * p.head_dim;
  const std::size_t bytes = elems * element_size(p.dtype);
  sm80::LaunchBuffer buffer(stream, 2 * bytes, 0);
  char* const k = buffer.as<char>();
  char* const v = k + bytes;
  paged::gather(p, k, v, rows, stream);
  FwdParams dp = dequantized(p, k, v);
  dp.k_row_stride = dp.v_row_stride = static_cast<std::int64_t>(p.hkv) * p.head_dim;
  dp.k_head_stride = dp.v_head_stride = p.head_dim;
  dp.k_batch_stride = dp.v_batch_stride = static_cast<std::int64_t>(rows) * p.hkv * p.head_dim;
  dp.seqlen_k = rows;
  dp.total_k = static_cast<std::int64_t>(p.batch) * rows;
  launch_forward(dp, stream);
}

// block_table's rows [batch, max_pages] copied to the host, packed. Rows of a stride below
// max_pages overlap (0: one row shared by every sequence; a batch of one may have any stride), a
// pitch cudaMemcpy2D refuses ("invalid pitch argument" for a valid call): their whole span is
// copied and packed on the host, after the stream's synchronize (packed()).
class HostBlockTable {
 public:
  HostBlockTable(const std::int32_t* table, std::int64_t stride, int batch, std::int64_t max_pages,
                 HostCopies& copies)
      : batch_(batch), max_pages_(max_pages), stride_(stride) {
    const auto width = static_cast<std::size_t>(max_pages);
    // Rows at their pitch; a batch of one is a single row, whatever its stride.
    if (batch == 1 || stride >= max_pages) {
      copied_ = copies.copy_rows(table, width, static_cast<std::size_t>(stride),
                                 static_cast<std::size_t>(batch), "block_table");
    } else {
      span_ = true;
      copied_ = copies.copy(table, static_cast<std::size_t>((batch - 1) * stride + max_pages),
                            "block_table");
    }
  }
  const std::int32_t* packed() {
    if (!span_) return copied_;
    if (packed_.empty()) {
      packed_.resize(static_cast<std::size_t>(batch_ * max_pages_));
      for (int b = 0; b < batch_; ++b) {
        std::copy_n(copied_ + b * stride_, max_pages_, packed_.begin() + b * max_pages_);
      }
    }
    return packed_.data();
  }

 private:
  int batch_;
  std::int64_t max_pages_, stride_;
  bool span_ = false;
  const std::int32_t* copied_ = nullptr;  // in the HostCopies' staging
  std::vector<std::int32_t> packed_;
};

// A paged call (p.block_table; the table checked by cuda_attention_forward): decode calls read
// the pages in place (decode_16x64) and every other call runs on a contiguous copy of the keys
// each sequence uses, gathered into a pool buffer that is freed on `stream` after it.
void paged_forward(const FwdParams& p, const HostKeyRange& range, cudaStream_t stream) {
  // A decode call's split length: the most keys a sequence attends to (past its leftpad_k); the
  // gathered copy's rows: the longest key end (both the cache's Sk when unchecked).
  if (decode_takes(p)) {
    FwdParams dp = p;
    dp.seqlen_k = range.longest_attended(p);
    return decode::fwd(dp, stream);
  }
  gathered_forward(p, range.longest_end(p), stream);
}

// A quantized cache that is not paged: decode calls read it in place (the decode kernel over 8-bit
// K/V), every other call runs on a dequantized copy (gathered_forward).
void quantized_forward(const FwdParams& p, const HostKeyRange& range, cudaStream_t stream) {
  if (decode_takes(p)) {
    FwdParams dp = p;
    dp.seqlen_k = range.longest_attended(p);
    return decode::fwd(dp, stream);
  }
  if (!p.is_varlen()) return gathered_forward(p, range.longest_end(p), stream);
  // Varlen: the packed rows dequantized as they are (one sequence of total_k rows), then the
  // call on them with its cu_seqlens.
  FwdParams packed = p;
  packed.batch = 1;
  packed.cu_seqlens_q = packed.cu_seqlens_k = nullptr;
  packed.seqlen_k = static_cast<int>(p.total_k);
  const std::size_t bytes =
      static_cast<std::size_t>(p.total_k) * p.hkv * p.head_dim * element_size(p.dtype);
  sm80::LaunchBuffer buffer(stream, 2 * bytes, 0);
  char* const k = buffer.as<char>();
  char* const v = k + bytes;
  paged::gather(packed, k, v, static_cast<int>(p.total_k), stream);
  FwdParams dp = dequantized(p, k, v);
  dp.k_row_stride = dp.v_row_stride = static_cast<std::int64_t>(p.hkv) * p.head_dim;
  dp.k_head_stride = dp.v_head_stride = p.head_dim;
  dp.k_batch_stride = dp.v_batch_stride = 0;
  launch_forward(dp, stream);
}

}  // namespace

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

namespace {

// The checked call after its pointers, lengths and scales: paged, quantized or plain.
void forward_checked(const FwdParams& p, const HostKeyRange& range, cudaStream_t stream);

// Whether the FP8 kernel (sm90::fwd_fp8) runs FP8 call p: head dim 64, 128 or 256, out f16 or bf16,
// dense or causal in standard precision, varlen or not, no seqused_k or block table, strides its
// tensor maps can describe (strides_fit_tma: no broadcast heads or batches), not a decode call
// (those read the 8-bit cache in place in the split-KV decode kernel), on a device that runs its
// sm_90a code, unless GPUATTN_KERNEL=sm80 asks for the portable path or GPUATTN_FP8_KERNEL=0 for
// the dequantized one.
bool fp8_kernel_takes(const FwdParams& p) {
  // GPUATTN_FP8_KERNEL=0: every FP8 call on the dequantized q (16-bit accuracy: P is not rounded
  // to E4M3; and A/Bs of the two paths). Read once; a bad value is named on every call.
  static const bool allowed = env_flag("GPUATTN_FP8_KERNEL", true);
  return allowed && p.q_quantized() && p.kv_dtype == DType::e4m3 &&
         (p.head_dim == 64 || p.head_dim == 128 || p.head_dim == 256) &&
         (p.dtype == DType::f16 || p.dtype == DType::bf16) && !p.is_paged() &&
         !p.has_key_range() && !p.has_alibi() && p.precision == Precision::standard &&
         p.dense_or_causal() && strides_fit_tma(p) && !decode_takes(p) && kernel_choice_from_env() != KernelChoice::sm80 &&
         sm80::compute_capability_major() == 9 && sm90::fp8_usable();
}

// The FP8 kernel's instantiation for a call it takes: at head dims 64 and 128 on 3 consumer
// warpgroups where the 16-bit kernel's rule (three_consumers_pay) takes them (at head dim 128 not
// for varlen calls, where 3 measured 0.98x: 2026-11-30-h200-s52 call 6), or where GPUATTN_KERNEL
// names sm90_ws_192x128 (sm90_ws_128x128: never); at head dim 256 with the overlap from
// kFp8D256OverlapMinKeys keys (GPUATTN_KERNEL=sm90_fp8_128x128_d256: always, sm90_ws_128x128:
// never); see the table entries.
FwdKernel fp8_kernel_of(const FwdParams& p) {
  const KernelChoice choice = kernel_choice_from_env();
  if (p.head_dim == 256) {
    const bool overlap =
        choice == KernelChoice::sm90_fp8_128x128_d256 ||
        (choice != KernelChoice::sm90_ws_128x128 && p.seqlen_k >= kFp8D256OverlapMinKeys);
    return overlap ? FwdKernel::sm90_fp8_128x128_d256 : FwdKernel::sm90_fp8_128x128;
  }
  if (p.head_dim != 64 && p.head_dim != 128) return FwdKernel::sm90_fp8_128x128;
  const FwdShape shape = fwd_shape(p, 9, true, sm80::num_sms(), 0);
  const bool rule = three_consumers_pay(shape) && (p.head_dim == 64 || !p.is_varlen());
  const bool three =
      choice == KernelChoice::sm90_ws_192x128 || (choice != KernelChoice::sm90_ws_128x128 && rule);
  return three ? FwdKernel::sm90_fp8_192x128 : FwdKernel::sm90_fp8_128x128;
}

// An FP8 call (p.q_quantized()): the FP8 kernel where it takes the call, else q dequantized into a
// pool buffer of out's dtype ([total_q, Hq, D]) and the call run as an 8-bit cache's.
// Its scales were checked with the cache's (cuda_attention_forward).
void fp8_forward(const FwdParams& p, const HostKeyRange& range, cudaStream_t stream) {
  if (fp8_kernel_takes(p)) return sm90::fwd_fp8(fp8_kernel_of(p), p, stream);
  const std::int64_t row = static_cast<std::int64_t>(p.hq) * p.head_dim;
  sm80::LaunchBuffer buffer(stream,
                            static_cast<std::size_t>(p.total_q * row) * element_size(p.dtype), 0);
  paged::dequantize_q(p, buffer.as<void>(), stream);
  FwdParams dp = p;
  dp.q = buffer.as<void>();
  dp.q_scale = nullptr;
  dp.q_scale_stride = 0;
  dp.q_row_stride = row;
  dp.q_head_stride = p.head_dim;
  dp.q_batch_stride = p.is_varlen() ? 0 : p.seqlen_q * row;
  forward_checked(dp, range, stream);
}

}  // namespace

FwdKernel cuda_forward_kernel(const FwdParams& p) {
  check_device_index(p.device_index, "tensors");
  DeviceGuard guard(p.device_index);
  const KernelChoiceScope choice;  // GPUATTN_KERNEL read once for the whole pick
  if (p.q_quantized() && fp8_kernel_takes(p)) return fp8_kernel_of(p);
  return pick_forward_kernel(p);
}

bool cuda_fp8_kernel_takes(const FwdParams& p) {
  check_device_index(p.device_index, "tensors");
  DeviceGuard guard(p.device_index);
  const KernelChoiceScope choice;
  return fp8_kernel_takes(p);
}

void cuda_attention_forward(const FwdParams& p, void* stream_ptr) {
  check_device_index(p.device_index, "tensors");
  DeviceGuard guard(p.device_index);
  const KernelChoiceScope choice;  // GPUATTN_KERNEL read once: every pick of the call agrees
  const auto stream = static_cast<cudaStream_t>(stream_ptr);
  check_device_pointer(p.q, p.device_index, "q");
  check_device_pointer(p.k, p.device_index, "k");
  check_device_pointer(p.v, p.device_index, "v");
  check_device_pointer(p.o, p.device_index, "out");
  if (p.lse) check_device_pointer(p.lse, p.device_index, "lse");
  // The kernels read the layout in device memory; its shape was checked by make_fwd_params.
  if (p.has_block_layout()) {
    check_device_pointer(p.block_layout, p.device_index, "mask.block_sparse.layout");
  }
  if (p.is_varlen()) {
    check_device_pointer(p.cu_seqlens_q, p.device_index, "cu_seqlens_q");
    check_device_pointer(p.cu_seqlens_k, p.device_index, "cu_seqlens_k");
  }
  if (p.is_paged()) check_device_pointer(p.block_table, p.device_index, "block_table");
  if (p.kv_quantized()) {
    check_device_pointer(p.k_scale, p.device_index, "k_scale");
    check_device_pointer(p.v_scale, p.device_index, "v_scale");
    if (p.q_quantized()) check_device_pointer(p.q_scale, p.device_index, "q_scale");
  }
  if (p.has_alibi()) check_device_pointer(p.alibi_slopes, p.device_index, "alibi_slopes");
  // Every index array and scale the call reads, copied to the host together (p.check_indices)
  // and checked after one synchronization, before any kernel runs: the lengths and the table
  // decide which memory the kernels touch; bad scales would fill out with non-finite values.
  HostCopies copies(stream, "attention_forward");
  const std::int32_t* cu_q = nullptr;
  const std::int32_t* cu_k = nullptr;
  if (p.is_varlen() && p.check_indices) {
    const auto n = static_cast<std::size_t>(p.batch) + 1;
    cu_q = copies.copy(p.cu_seqlens_q, n, "cu_seqlens_q");
    cu_k = copies.copy(p.cu_seqlens_k, n, "cu_seqlens_k");
  }
  std::optional<QueuedScales> scales;
  if (p.kv_quantized() && p.check_indices) {
    // An FP8 call's q_scale (always beside an 8-bit cache) with them.
    scales.emplace(copies, p.k_scale, p.v_scale, p.kv_scale_stride, p.hkv, p.q_scale,
                   p.q_scale_stride, p.hq);
  }
  // ALiBi's slopes: a row of Hq (one for every sequence, batch stride 0) or one a sequence.
  const int alibi_rows = p.alibi_rows();
  const float* alibi = p.has_alibi() && p.check_indices
                           ? copies.copy_rows(p.alibi_slopes, static_cast<std::size_t>(p.hq),
                                              static_cast<std::size_t>(p.alibi_batch_stride),
                                              static_cast<std::size_t>(alibi_rows), "alibi_slopes")
                           : nullptr;
  const HostKeyRange range(p, copies);
  const std::int64_t max_pages = p.is_paged() ? p.seqlen_k / p.page_size : 0;
  std::optional<HostBlockTable> table;
  if (p.is_paged() && p.check_indices) {
    table.emplace(p.block_table, p.block_table_stride, p.batch, max_pages, copies);
  }
  copies.wait();
  if (cu_q != nullptr) {
    check_cu_seqlens(cu_q, p.batch, p.total_q, p.seqlen_q, "cu_seqlens_q");
    check_cu_seqlens(cu_k, p.batch, p.total_k, p.seqlen_k, "cu_seqlens_k");
  }
  if (scales) {
    const HostScales h = scales->check("attention_forward");
    const bool fp8_kernel = p.q_quantized() && fp8_kernel_takes(p);
    check_f16_copy_range(p, h, !fp8_kernel && !decode_takes(p), p.q_quantized() && !fp8_kernel);
  }
  if (alibi != nullptr) {
    check_alibi_slopes(alibi, alibi_rows, p.hq, p.alibi_raw, p.has_softcap(),
                       "gpuattn::attention_forward");
  }
  range.check(p);
  if (table) {
    FwdParams host = p;  // the host copy's table, packed
    host.block_table_stride = max_pages;
    check_block_table(host, table->packed(), range.used(), range.start());
  }
  if (p.q_quantized()) return fp8_forward(p, range, stream);
  forward_checked(p, range, stream);
}

namespace {

void forward_checked(const FwdParams& p, const HostKeyRange& range, cudaStream_t stream) {
  if (p.is_paged()) return paged_forward(p, range, stream);
  if (p.kv_quantized()) return quantized_forward(p, range, stream);

  // The one runtime-to-kernel dispatch: select_fwd_config (core/tile_config.h) picks the kernel
  // and tiles; decode calls (few query rows per KV head) take the split-KV kernel on any GPU;
  // Hopper takes the wgmma kernel (its sm90_* configurations, every mask, compensated
  // at head dims 64/128), the sm_80 kernel serves other GPUs, compensated at head dim 256 and
  // GPUATTN_KERNEL=sm80. The device's opt-in shared memory per block keeps the sm_80 tiles to
  // those that fit (sm80_64x64 at head dim 128 on sm_86/sm_89). A call with seqused_k has had
  // its lengths checked on a host copy (leftpad_k too, cuda_attention_forward); a decode call
  // then runs with the most keys a sequence attends to as its seqlen_k (the split plan's), any
  // other on the sm_80 kernel (pick_forward_kernel).
  if (range.copied()) {
    const FwdKernel kernel = pick_forward_kernel(p);
    if (kernel == FwdKernel::decode_16x64 && range.used() != nullptr) {
      // The decode plan splits the most keys a sequence attends to, not the cache's Sk (with
      // seqused_k the kernel reads only keys_used(b) keys, and nothing else of seqlen_k).
      FwdParams used_p = p;
      used_p.seqlen_k = range.longest_attended(p);
      return decode::fwd(used_p, stream);
    }
  }
  launch_forward(p, stream);
}

}  // namespace

void cuda_append_kv(const AppendParams& p, void* stream_ptr) {
  const char* const fn = "append_kv";
  check_device_index(p.device_index, "caches", fn);
  DeviceGuard guard(p.device_index);
  const auto stream = static_cast<cudaStream_t>(stream_ptr);
  check_device_pointer(p.k_cache, p.device_index, "k_cache", fn);
  check_device_pointer(p.v_cache, p.device_index, "v_cache", fn);
  check_device_pointer(p.k_new, p.device_index, "k_new", fn);
  check_device_pointer(p.v_new, p.device_index, "v_new", fn);
  check_device_pointer(p.cache_seqlens, p.device_index, "cache_seqlens", fn);
  if (p.block_table != nullptr) {
    check_device_pointer(p.block_table, p.device_index, "block_table", fn);
  }
  if (p.rotary_half > 0) {
    check_device_pointer(p.rotary_cos, p.device_index, "rotary_cos", fn);
    check_device_pointer(p.rotary_sin, p.device_index, "rotary_sin", fn);
  }
  if (p.k_scale != nullptr) {
    check_device_pointer(p.k_scale, p.device_index, "k_scale", fn);
    check_device_pointer(p.v_scale, p.device_index, "v_scale", fn);
  }
  if (p.check_indices) {
    // The lengths, the table and the scales, behind one synchronization.
    HostCopies copies(stream, fn);
    const std::int32_t* used =
        copies.copy(p.cache_seqlens, static_cast<std::size_t>(p.batch), "cache_seqlens");
    std::optional<HostBlockTable> table;
    if (p.block_table != nullptr) {
      table.emplace(p.block_table, p.block_table_stride, p.batch, p.seqlen_k / p.page_size, copies);
    }
    std::optional<QueuedScales> scales;
    if (p.k_scale != nullptr) scales.emplace(copies, p.k_scale, p.v_scale, p.scale_stride, p.hkv);
    copies.wait();
    check_append_indices(p, used, table ? table->packed() : nullptr);
    if (scales) scales->check(fn);
  }
  if (p.rotates_q) {
    check_device_pointer(p.q_rotary.x, p.device_index, "q", fn);
    check_device_pointer(p.q_rotary.out, p.device_index, "q_out", fn);
  }
  // q's rotation too (its positions were checked with the append's): in the append's launch, or
  // first in its own where q may lie in a cache the append writes.
  paged::append(p, stream);
}

void cuda_apply_rotary(const RotaryParams& p, void* stream_ptr) {
  const char* const fn = "apply_rotary";
  check_device_index(p.device_index, "x and out", fn);
  DeviceGuard guard(p.device_index);
  const auto stream = static_cast<cudaStream_t>(stream_ptr);
  check_device_pointer(p.x, p.device_index, "x", fn);
  check_device_pointer(p.out, p.device_index, "out", fn);
  check_device_pointer(p.cos, p.device_index, "cos", fn);
  check_device_pointer(p.sin, p.device_index, "sin", fn);
  if (p.seqlen_offsets != nullptr) {
    check_device_pointer(p.seqlen_offsets, p.device_index, "seqlen_offsets", fn);
  }
  if (p.cu_seqlens != nullptr) {
    check_device_pointer(p.cu_seqlens, p.device_index, "cu_seqlens", fn);
  }
  if (p.check_indices && (p.seqlen_offsets != nullptr || p.cu_seqlens != nullptr)) {
    // Both arrays come back on one synchronization.
    HostCopies copies(stream, fn);
    const auto n = static_cast<std::size_t>(p.batch);
    const std::int32_t* offsets =
        p.seqlen_offsets != nullptr ? copies.copy(p.seqlen_offsets, n, "seqlen_offsets") : nullptr;
    const std::int32_t* cu =
        p.cu_seqlens != nullptr ? copies.copy(p.cu_seqlens, n + 1, "cu_seqlens") : nullptr;
    copies.wait();
    check_rotary_indices(p, offsets, cu);
  }
  rotary::apply(p, stream);
}

}  // namespace gpuattn
