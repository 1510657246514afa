// Helpers for the GPU tests: checked CUDA runtime calls, an owning device buffer, pinned host
// memory, a stream, a parallel loop for the host-side work (input generation, reference), and the
// elementwise bound on out that every case of both GPU suites checks.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/test_util.h"
#include "gpuattn/attention.h"
#include "gpuattn/reference.h"

namespace gpuattn::testing {

// A failed CUDA call in test setup is a std::runtime_error (not a gpuattn::Error), so that it can
// never be mistaken for an error the library reported.
inline void cuda_check(cudaError_t e, const char* expr, const char* file, int line) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string(expr) + " failed: " + cudaGetErrorName(e) + " (" +
                             cudaGetErrorString(e) + ") at " + file + ":" + std::to_string(line));
  }
}
#define TEST_CUDA_CHECK(expr) ::gpuattn::testing::cuda_check((expr), #expr, __FILE__, __LINE__)

// Captures `call` (which launches on `stream`) into a CUDA graph. A throw inside the capture ends
// the capture (none is left open for the tests after this one) and is a test failure naming
// `what`; the graph is then nullptr.
inline cudaGraph_t capture_graph(cudaStream_t stream, const std::function<void()>& call,
                                 const std::string& what) {
  cudaGraph_t graph = nullptr;
  TEST_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  try {
    call();
  } catch (const std::exception& e) {
    cudaStreamEndCapture(stream, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    ADD_FAILURE() << "captured " << what << ": " << e.what();
    return nullptr;
  }
  TEST_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  return graph;
}

// Captures `call` (capture_graph), replays it `replays` times and synchronizes the stream; the
// return says whether it ran.
inline bool run_captured(cudaStream_t stream, const std::function<void()>& call, int replays,
                         const std::string& what) {
  cudaGraph_t graph = capture_graph(stream, call, what);
  if (graph == nullptr) return false;
  cudaGraphExec_t exec = nullptr;
  TEST_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < replays; ++replay) TEST_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  TEST_CUDA_CHECK(cudaStreamSynchronize(stream));
  TEST_CUDA_CHECK(cudaGraphExecDestroy(exec));
  TEST_CUDA_CHECK(cudaGraphDestroy(graph));
  return true;
}

// How many kernels `call` (which launches on `stream`) launches: its kernel nodes captured into a
// CUDA graph, which is not run (memory and memset nodes are not counted); -1 after a throw.
inline int captured_kernels(cudaStream_t stream, const std::function<void()>& call,
                            const std::string& what) {
  cudaGraph_t graph = capture_graph(stream, call, what);
  if (graph == nullptr) return -1;
  std::size_t n = 0;
  TEST_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  TEST_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &n));
  int kernels = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    TEST_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    kernels += type == cudaGraphNodeTypeKernel ? 1 : 0;
  }
  TEST_CUDA_CHECK(cudaGraphDestroy(graph));
  return kernels;
}

// The kernels `fn` launches for an unchecked copy of `args` (AttentionArgs or AppendKvArgs: no
// host copies, so it can be captured) on a stream of its own (captured_kernels, not run).
template <class Args, class Fn>
int unchecked_kernels(const Args& args, Fn fn, const std::string& what) {
  cudaStream_t stream = nullptr;
  TEST_CUDA_CHECK(cudaStreamCreate(&stream));
  Args u = args;
  u.check_indices = false;
  u.stream = stream;
  const int kernels = captured_kernels(stream, [&] { fn(u); }, what);
  TEST_CUDA_CHECK(cudaStreamDestroy(stream));
  return kernels;
}

// cudaMalloc'ed bytes, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) TEST_CUDA_CHECK(cudaMalloc(&ptr_, bytes_));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    DeviceBuffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }

  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

  // Copies `bytes()` bytes from host memory `src` (synchronous, or ordered on `stream`).
  void upload(const void* src, cudaStream_t stream = nullptr) {
    if (bytes_ == 0) return;
    if (stream) {
      TEST_CUDA_CHECK(cudaMemcpyAsync(ptr_, src, bytes_, cudaMemcpyHostToDevice, stream));
    } else {
      TEST_CUDA_CHECK(cudaMemcpy(ptr_, src, bytes_, cudaMemcpyHostToDevice));
    }
  }
  void download(void* dst) const {
    if (bytes_ > 0) TEST_CUDA_CHECK(cudaMemcpy(dst, ptr_, bytes_, cudaMemcpyDeviceToHost));
  }
  std::vector<unsigned char> snapshot() const {
    std::vector<unsigned char> h(bytes_);
    download(h.data());
    return h;
  }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
  }
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// A host tensor's device copy for one call: uploaded when made, freed with it. A default-made
// tensor (no storage: e.g. the page table of a contiguous cache) gets no device memory.
struct OnDevice {
  explicit OnDevice(const HostTensor& h) : host(&h), buf(h.storage.empty() ? 0 : h.bytes()) {
    buf.upload(h.data());
  }
  TensorView view() const { return host->view(Device::cuda, buf.get()); }
  const HostTensor* host;
  DeviceBuffer buf;
};

// The arguments of an attention call over an 8-bit cache on the device: Q, K and V (the cache),
// the cache's scales, O (an FP8 call adds q_scale).
inline AttentionArgs quantized_args(const OnDevice& q, const OnDevice& k, const OnDevice& v,
                                    const OnDevice& k_scale, const OnDevice& v_scale,
                                    const OnDevice& out) {
  AttentionArgs a;
  a.q = q.view();
  a.k = k.view();
  a.v = v.view();
  a.out = out.view();
  a.k_scale = k_scale.view();
  a.v_scale = v_scale.view();
  return a;
}

// After a varlen call with every sequence empty on one side (out and lse downloaded whole, NaN
// poison before the call): with no keys every out element is 0 and every lse -inf; with no query
// rows both still hold the poison everywhere (nothing written).
inline void expect_empty_side_outputs(const HostTensor& out, const HostTensor& lse, bool no_keys) {
  std::int64_t bad_out = 0, bad_lse = 0;
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    const float x = out.get(i);
    bad_out += no_keys ? x != 0.f : !std::isnan(x);
  }
  for (std::int64_t i = 0; i < lse.numel(); ++i) {
    const float x = lse.get(i);
    bad_lse += no_keys ? !(std::isinf(x) && x < 0) : !std::isnan(x);
  }
  EXPECT_EQ(bad_out, 0) << (no_keys ? "out elements not 0" : "out elements written");
  EXPECT_EQ(bad_lse, 0) << (no_keys ? "lse elements not -inf" : "lse elements written");
}

// Page-locked host memory, so that copies on a stream are truly asynchronous.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) TEST_CUDA_CHECK(cudaMallocHost(&ptr_, bytes_));
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (ptr_) cudaFreeHost(ptr_);
  }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

class Stream {
 public:
  Stream() { TEST_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

inline unsigned host_threads() {
  return std::max(1u, std::thread::hardware_concurrency());
}

// Runs fn(i) for i in [0, n) on all host cores; the first exception is rethrown after the join.
template <class Fn>
void parallel_for(std::int64_t n, Fn&& fn) {
  const auto workers = static_cast<std::int64_t>(std::min<std::int64_t>(host_threads(), n));
  if (workers <= 1) {
    for (std::int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<std::int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(workers));
  for (std::int64_t t = 0; t < workers; ++t) {
    pool.emplace_back([&] {
      try {
        for (std::int64_t i = next++; i < n; i = next++) fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next = n;
      }
    });
  }
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

// Runs `call`, which must throw gpuattn::Error; returns its message ("" after recording a failure).
template <class Fn>
std::string error_of(Fn&& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected a gpuattn::Error, got another exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected a gpuattn::Error, nothing was thrown";
  return "";
}

// A float for a test name: "%g" with '.' as 'p' and '-' as 'm' (2.5 -> 2p5), so that fractional
// values of one integer part name different tests.
inline std::string number_name(float x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(x));
  std::string s(buf);
  for (char& ch : s) {
    if (ch == '.') ch = 'p';
    if (ch == '-') ch = 'm';
    if (ch == '+') ch = 'P';
  }
  return s;
}

// Stable seed of a test name (FNV-1a): the same inputs on every run and platform.
inline std::uint64_t seed_of(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

// What every test case of both GPU suites carries, and its builders (each returns a modified copy
// of the derived case): the shape (B, Hq, Hkv, Sq, Sk, D, dtype; varlen when lens_q is not empty,
// then B = lens_q.size() and Sq, Sk are the max lengths), causal, the position mask (window,
// global tokens), precision, the scale of q and whether lse is requested.
template <class Derived>
struct CaseBase {
  int B = 1, Hq = 1, Hkv = 1, Sq = 1, Sk = 1, D = 128;
  DType dtype = DType::f16;
  bool is_causal = false;
  std::vector<int> lens_q, lens_k;
  MaskSpec mask;  // window and global tokens (a block layout is the block suite's own)
  Precision precision = Precision::standard;
  float q_scale = 1.f;  // q ~ N(0, q_scale^2): 30 gives logits with a standard deviation of 30
  bool with_lse = true;
  float softcap = 0.f;  // AttentionArgs::softcap
  int alibi_rows = 0;   // AttentionArgs::alibi_slopes: 0 none, 1 [Hq], else [B, Hq]

  bool varlen() const { return !lens_q.empty(); }

  Derived causal() const {
    return with([](Derived& c) { c.is_causal = true; });
  }
  Derived window(int left, int right) const {  // -1: unbounded on that side
    return with([&](Derived& c) {
      c.mask.window_left = left;
      c.mask.window_right = right;
    });
  }
  Derived globals(int tokens, int stride = 0) const {
    return with([&](Derived& c) {
      c.mask.global_tokens = tokens;
      c.mask.global_stride = stride;
    });
  }
  Derived compensated() const {
    return with([](Derived& c) { c.precision = Precision::compensated; });
  }
  Derived q_times(float s) const {
    return with([&](Derived& c) { c.q_scale = s; });
  }
  Derived no_lse() const {
    return with([](Derived& c) { c.with_lse = false; });
  }
  Derived capped(float cap) const {
    return with([&](Derived& c) { c.softcap = cap; });
  }
  // ALiBi slopes a head ([Hq]), or a sequence and head ([B, Hq]) with per_sequence.
  Derived alibi(bool per_sequence = false) const {
    return with([&](Derived& c) { c.alibi_rows = per_sequence ? 2 : 1; });
  }

  // Name parts: the shape (f16_B2_H8kv2_Sq100_Sk1000_D128, f16_varlen_q1_17_k2_3_H8_D64) and the
  // mask and numerics (_causal_w256_0_g16_stride300_compensated_qx30_nolse).
  std::string shape_name() const {
    auto join = [](const std::vector<int>& v) {
      std::string s;
      for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "_" : "") + std::to_string(v[i]);
      return s;
    };
    std::string s = dtype == DType::bf16 ? "bf16" : "f16";
    if (varlen()) {
      s += "_varlen_q" + join(lens_q);
      if (lens_k != lens_q) s += "_k" + join(lens_k);
    } else {
      s += "_B" + std::to_string(B);
    }
    s += "_H" + std::to_string(Hq);
    if (Hkv != Hq) s += "kv" + std::to_string(Hkv);
    if (!varlen()) {
      s += Sq == Sk ? "_S" + std::to_string(Sq)
                    : "_Sq" + std::to_string(Sq) + "_Sk" + std::to_string(Sk);
    }
    return s + "_D" + std::to_string(D);
  }
  std::string mask_name() const {
    std::string s;
    if (is_causal) s += "_causal";
    auto side = [](int w) { return w < 0 ? std::string("inf") : std::to_string(w); };
    if (mask.window_left >= 0 || mask.window_right >= 0) {
      s += "_w" + side(mask.window_left) + "_" + side(mask.window_right);
    }
    if (mask.global_tokens > 0) s += "_g" + std::to_string(mask.global_tokens);
    if (mask.global_stride > 0) s += "_stride" + std::to_string(mask.global_stride);
    if (precision == Precision::compensated) s += "_compensated";
    if (q_scale != 1.f) s += "_qx" + std::to_string(static_cast<int>(q_scale));
    if (!with_lse) s += "_nolse";
    if (softcap != 0.f) s += "_cap" + number_name(softcap);
    if (alibi_rows > 0) s += alibi_rows == 1 ? "_alibi" : "_alibiB";
    return s;
  }

 protected:
  template <class Fn>
  Derived with(Fn&& fn) const {
    Derived c = static_cast<const Derived&>(*this);
    fn(c);
    return c;
  }
};

// ALiBi slopes for `rows` x `hq` (rows 1: a slope a head): the paper's geometric ones,
// 2^(-8 (h + 1) / hq), each row b > 0 scaled by a factor in [0.5, 2) from `seed`, so that a
// kernel reading another head's or sequence's slope is caught.
inline HostTensor alibi_slopes_for(int rows, int hq, std::uint64_t seed) {
  HostTensor t(DType::f32, rows == 1 ? std::vector<std::int64_t>{hq}
                                     : std::vector<std::int64_t>{rows, hq});
  auto* s = static_cast<float*>(t.data());
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int b = 0; b < rows; ++b) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const float f = b == 0 ? 1.f : 0.5f + 1.5f * static_cast<float>((x >> 40) & 0xffff) / 65536.f;
    for (int h = 0; h < hq; ++h) {
      s[b * hq + h] = f * std::exp2(-8.f * static_cast<float>(h + 1) / static_cast<float>(hq));
    }
  }
  return t;
}

// A dense batch, and a packed variable-length batch (`lk` empty: the same lengths as `lq`).
template <class C>
C dense_case(int B, int Hq, int Hkv, int Sq, int Sk, int D, DType t) {
  C c;
  c.B = B;
  c.Hq = Hq;
  c.Hkv = Hkv;
  c.Sq = Sq;
  c.Sk = Sk;
  c.D = D;
  c.dtype = t;
  return c;
}
template <class C>
C varlen_case(int Hq, int Hkv, int D, DType t, std::vector<int> lq, std::vector<int> lk) {
  C c;
  c.lens_k = lk.empty() ? lq : std::move(lk);
  c.lens_q = std::move(lq);
  c.B = static_cast<int>(c.lens_q.size());
  c.Hq = Hq;
  c.Hkv = Hkv;
  c.Sq = *std::max_element(c.lens_q.begin(), c.lens_q.end());
  c.Sk = *std::max_element(c.lens_k.begin(), c.lens_k.end());
  c.D = D;
  c.dtype = t;
  return c;
}

// reference_attention over the rows, dealt round-robin to all host cores (causal rows differ in
// cost, so neighbours go to different threads); rows must not be empty.
inline ReferenceResult parallel_reference(const AttentionArgs& host,
                                          const std::vector<std::int64_t>& rows) {
  const std::size_t n = std::min<std::size_t>(host_threads(), rows.size());
  std::vector<std::vector<std::int64_t>> parts(n);
  for (std::size_t i = 0; i < rows.size(); ++i) parts[i % n].push_back(rows[i]);
  std::vector<ReferenceResult> results(n);
  // Never pass an empty list: reference_attention reads that as "all rows".
  parallel_for(static_cast<std::int64_t>(n), [&](std::int64_t t) {
    const auto i = static_cast<std::size_t>(t);
    results[i] = reference_attention(host, parts[i]);
  });
  ReferenceResult all;
  for (const ReferenceResult& r : results) {
    all.rows.insert(all.rows.end(), r.rows.begin(), r.rows.end());
    all.out.insert(all.out.end(), r.out.begin(), r.out.end());
    all.lse.insert(all.lse.end(), r.lse.begin(), r.lse.end());
  }
  return all;
}

// ---- the elementwise bound on out ---------------------------------------------------------------

// |out - ref| <= tol * max(1, |ref|) for every element of the checked rows. The global relative
// error (||out - ref|| / ||ref||) dilutes a few wrong elements among millions; this does not.
// Why these numbers (u = 2^-11 for fp16, 2^-8 for bf16: half an ulp, relative): out is rounded to
// 16 bits once (u |ref|), and P is rounded to 16 bits before P V, which moves out by up to
// u p_j |v_j - out| / l per key j; both grow with |ref| above 1, hence max(1, |ref|). Rows with a
// few keys of comparable weight are the worst. An emulation of these roundings (64- and 128-key
// tiles, the kernels' stale running max with P up to 2^8, fp32 accumulation; 16 seeds of S1500
// causal, windows of 1-5 keys, logits x30) peaks at 1.1e-3 (fp16) and 8.2e-3 (bf16) times
// max(1, |ref|); the H200 verify run's largest errors (2.4e-3 fp16, 1.5e-2 bf16, logits x30) are
// half an ulp of an out of magnitude 4-8. The bounds leave ~4.5x and ~2.4x over that: fp16 5e-3
// (its relative-error tolerance), bf16 2e-2 (twice its own). The compensated mode rounds P and out
// the same way (its Kahan terms fix the accumulation over keys, which does not limit one
// element), so it gets the same bound.
constexpr double kMaxAbsTolF16 = 5e-3;
constexpr double kMaxAbsTolBF16 = 2e-2;

inline double max_abs_tol(DType t) {
  return t == DType::bf16 ? kMaxAbsTolBF16 : kMaxAbsTolF16;
}

// Sequence entry and row within it of packed query row `row`: dense batches are Sq rows apiece;
// varlen batches (`cu_q` the host cu_seqlens_q, batch + 1 entries) skip empty sequences.
struct SeqRow {
  int b = -1;
  std::int64_t i = -1;
};
inline SeqRow seq_row(std::int64_t row, int batch, int seqlen_q, const std::int32_t* cu_q) {
  if (cu_q == nullptr) return {static_cast<int>(row / seqlen_q), row % seqlen_q};
  const int b = static_cast<int>(std::upper_bound(cu_q, cu_q + batch + 1, row) - cu_q) - 1;
  return {b, row - cu_q[b]};
}

// The element of out furthest outside |out - ref| <= tol * max(1, |ref|), relative to its bound.
struct WorstElement {
  double max_abs = 0;  // max |out - ref| over the finite elements of the checked rows
  double ratio = 0;    // max over elements of |out - ref| / (tol * max(1, |ref|)): > 1 fails
  double got = 0, want = 0;
  std::int64_t row = -1;  // packed query row of the largest ratio
  int head = -1, col = -1;
};

// Scans `out` (packed rows [total_q, Hq, D], any api layout flattened row-major, as `compare`
// reads it) against the reference rows and records a failure naming the worst element: value,
// reference, bound and (batch, row, head, col). Non-finite elements are counted elsewhere.
inline WorstElement expect_out_within_max_abs(const ReferenceResult& ref, const HostTensor& out,
                                              int hq, int d, double tol, int batch, int seqlen_q,
                                              const std::int32_t* cu_q) {
  WorstElement w;
  for (std::size_t ri = 0; ri < ref.rows.size(); ++ri) {
    const std::int64_t row = ref.rows[ri];
    for (int h = 0; h < hq; ++h) {
      for (int k = 0; k < d; ++k) {
        const double o = out.get((row * hq + h) * d + k);
        const double r = ref.out[(ri * hq + h) * d + k];
        if (!std::isfinite(o)) continue;
        const double err = std::fabs(o - r);
        w.max_abs = std::max(w.max_abs, err);
        const double ratio = err / (tol * std::max(1.0, std::fabs(r)));
        if (ratio > w.ratio) {
          w.ratio = ratio;
          w.got = o;
          w.want = r;
          w.row = row;
          w.head = h;
          w.col = k;
        }
      }
    }
  }
  if (w.ratio > 1.0) {
    const SeqRow at = seq_row(w.row, batch, seqlen_q, cu_q);
    std::ostringstream msg;
    msg.precision(6);
    msg << "out at (batch " << at.b << ", row " << at.i << ", head " << w.head << ", col " << w.col
        << ") [packed row " << w.row << "] is " << w.got << ", reference " << w.want << ": |error| "
        << std::fabs(w.got - w.want) << " > " << tol
        << " * max(1, |reference|) = " << tol * std::max(1.0, std::fabs(w.want))
        << " (max |error| over the checked rows " << w.max_abs << ")";
    ADD_FAILURE() << msg.str();
  }
  return w;
}

}  // namespace gpuattn::testing
