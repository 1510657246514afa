// The seed report 001 baseline: S = Q K^T (cuBLASLt), row softmax (our kernel), O = P V
// (cuBLASLt). Its own translation unit: the only file of the library that talks to cuBLASLt.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <array>
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "cuda/baseline.h"

namespace gpuattn {
namespace {

// cuBLASLt's recommended workspace on Hopper; Ampere needs less.
constexpr std::size_t kCublasWorkspace = std::size_t(32) << 20;
// Score rows padded to 8 floats so every row, and every P row written over it, is 32-byte
// aligned: cuBLASLt then keeps its vectorized kernels for any Sk.
constexpr std::int64_t kScoreRowAlign = 8;
constexpr int kMaxSoftmaxThreads = 512;
constexpr float kLog2e = 1.4426950408889634f;

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw Error(ErrorCode::cuda_error,
                std::string("gpuattn baseline: ") + what + " failed: " + cudaGetErrorString(e));
  }
}

void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw Error(ErrorCode::cuda_error, std::string("gpuattn baseline: ") + what +
                                           " failed: " + cublasLtGetStatusName(s) + " (" +
                                           cublasLtGetStatusString(s) + ")");
  }
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f32: return CUDA_R_32F;
    case DType::i32:
    case DType::u8:
    case DType::i8:
    case DType::e4m3: break;
  }
  throw Error(ErrorCode::not_supported,
              std::string("gpuattn baseline: no GEMM for dtype ") + to_string(t));
}

std::int64_t round_up(std::int64_t x, std::int64_t a) {
  return (x + a - 1) / a * a;
}

// One column-major GEMM, D[m x n] = alpha * op(A) B, batched with constant strides. A is stored
// k x m when trans_a (op = T), m x k otherwise; B is k x n; C/D is m x n. A and B share ab_type.
struct GemmShape {
  DType ab_type = DType::f16;
  DType c_type = DType::f32;
  bool trans_a = true;
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  int batch = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements
};

// Descriptors plus the algorithm cuBLASLt's heuristic picked: built once per shape and device.
struct GemmPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};

  void destroy() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (desc) cublasLtMatmulDescDestroy(desc);
    a = b = c = nullptr;
    desc = nullptr;
  }
};

cublasLtMatrixLayout_t make_layout(DType t, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                   int batch, std::int64_t stride) {
  // A single column is never stepped over, so its leading dimension is free: the rows count is
  // the one cuBLASLt accepts everywhere (a decode call's q and out rows are Hq x D apart, which
  // its heuristic refused with CUBLAS_STATUS_INVALID_VALUE at B32 Hq32 Hkv8 Sq1 Sk4096 D128).
  if (cols == 1) ld = rows;
  cublasLtMatrixLayout_t l = nullptr;
  check_lt(cublasLtMatrixLayoutCreate(&l, cuda_type(t), static_cast<std::uint64_t>(rows),
                                      static_cast<std::uint64_t>(cols), ld),
           "cublasLtMatrixLayoutCreate");
  const std::int32_t count = batch;
  cublasStatus_t s = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                      sizeof(count));
  if (s == CUBLAS_STATUS_SUCCESS) {
    s = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                         sizeof(stride));
  }
  if (s != CUBLAS_STATUS_SUCCESS) cublasLtMatrixLayoutDestroy(l);
  check_lt(s, "cublasLtMatrixLayoutSetAttribute");
  return l;
}

GemmPlan make_plan(cublasLtHandle_t handle, const GemmShape& g) {
  GemmPlan p;
  cublasLtMatmulPreference_t pref = nullptr;
  try {
    check_lt(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
             "cublasLtMatmulDescCreate");
    const cublasOperation_t op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = CUBLAS_OP_N;
    check_lt(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)),
        "cublasLtMatmulDescSetAttribute(TRANSA)");
    check_lt(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)),
        "cublasLtMatmulDescSetAttribute(TRANSB)");
    p.a = g.trans_a ? make_layout(g.ab_type, g.k, g.m, g.lda, g.batch, g.stride_a)
                    : make_layout(g.ab_type, g.m, g.k, g.lda, g.batch, g.stride_a);
    p.b = make_layout(g.ab_type, g.k, g.n, g.ldb, g.batch, g.stride_b);
    p.c = make_layout(g.c_type, g.m, g.n, g.ldc, g.batch, g.stride_c);

    check_lt(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    const std::uint64_t ws = kCublasWorkspace;
    check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws, sizeof(ws)),
             "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
    // Every pointer we pass is 16-byte aligned (the public API requires it of q/k/v/out and their
    // strides; the score rows are padded), but not 256-byte aligned as the default assumes.
    const std::uint32_t align = 16;
    for (auto attr :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
      check_lt(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align)),
               "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)");
    }
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    check_lt(cublasLtMatmulAlgoGetHeuristic(handle, p.desc, p.a, p.b, p.c, p.c, pref, 1, &heuristic,
                                            &found),
             "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) {
      throw Error(ErrorCode::not_supported, "gpuattn baseline: cuBLASLt has no algorithm for a " +
                                                std::to_string(g.m) + "x" + std::to_string(g.n) +
                                                "x" + std::to_string(g.k) + " GEMM (batch " +
                                                std::to_string(g.batch) + ")");
    }
    p.algo = heuristic.algo;
    cublasLtMatmulPreferenceDestroy(pref);
  } catch (...) {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    p.destroy();
    throw;
  }
  return p;
}

// The process-wide cuBLASLt handle and plan cache. Leaked on purpose: destroying cuBLASLt objects
// from a static destructor can run after the CUDA runtime has shut down.
class LtContext {
 public:
  static LtContext& instance() {
    static LtContext* ctx = new LtContext();
    return *ctx;
  }

  void matmul(const GemmShape& g, float alpha, const void* a, const void* b, void* c,
              void* workspace, cudaStream_t stream) {
    const GemmPlan& p = plan(g);
    const float beta = 0.f;
    check_lt(cublasLtMatmul(handle_, p.desc, &alpha, a, p.a, b, p.b, &beta, c, p.c, c, p.c, &p.algo,
                            workspace, kCublasWorkspace, stream),
             "cublasLtMatmul");
  }

 private:
  using Key = std::array<std::int64_t, 16>;

  LtContext() { check_lt(cublasLtCreate(&handle_), "cublasLtCreate"); }

  const GemmPlan& plan(const GemmShape& g) {
    int device = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    const Key key{device,
                  static_cast<std::int64_t>(g.ab_type),
                  static_cast<std::int64_t>(g.c_type),
                  g.trans_a,
                  g.m,
                  g.n,
                  g.k,
                  g.lda,
                  g.ldb,
                  g.ldc,
                  g.batch,
                  g.stride_a,
                  g.stride_b,
                  g.stride_c,
                  0,
                  0};
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(key);
    if (it == plans_.end()) it = plans_.emplace(key, make_plan(handle_, g)).first;
    return it->second;
  }

  cublasLtHandle_t handle_ = nullptr;
  std::mutex mu_;
  std::map<Key, GemmPlan> plans_;
};

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    check_cuda(cudaGetDevice(&prev_), "cudaGetDevice");
    if (prev_ != device) check_cuda(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceGuard() {
    int cur = prev_;
    if (cudaGetDevice(&cur) == cudaSuccess && cur != prev_) cudaSetDevice(prev_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = 0;
};

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Online-softmax combine of two (max, sum of exp2(x - max)) pairs, in log2 units.
__device__ __forceinline__ void merge(float& m, float& l, float m2, float l2) {
  const float mn = fmaxf(m, m2);
  if (mn == -INFINITY) return;  // both empty
  l = l * exp2f(m - mn) + l2 * exp2f(m2 - mn);
  m = mn;
}

// One block per score row r = (b * Hq + h) * Sq + i. Reads the fp32 scaled scores of the visible
// keys, writes P = softmax in T over the same row in place (P[j] occupies the bytes of score j/2),
// with zeros for masked keys (bottom-right aligned causal mask) and for rows that see no key.
template <class T>
__global__ void __launch_bounds__(kMaxSoftmaxThreads)
    softmax_rows_kernel(float* scores, std::int64_t ld, int sq, int sk, bool causal) {
  const std::int64_t r = blockIdx.x;
  const int i = static_cast<int>(r % sq);
  float* srow = scores + r * ld;
  T* prow = reinterpret_cast<T*>(srow);
  int nvis = sk;
  if (causal) {
    const int n = i + (sk - sq) + 1;
    nvis = n < 0 ? 0 : (n > sk ? sk : n);
  }

  float m = -INFINITY, l = 0.f;
  for (int j = threadIdx.x; j < nvis; j += blockDim.x) {
    const float x = srow[j] * kLog2e;
    if (x > m) {
      l = l * exp2f(m - x) + 1.f;
      m = x;
    } else {
      l += exp2f(x - m);
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, offset);
    const float l2 = __shfl_xor_sync(0xffffffffu, l, offset);
    merge(m, l, m2, l2);
  }
  __shared__ float warp_m[kMaxSoftmaxThreads / 32], warp_l[kMaxSoftmaxThreads / 32];
  const int warp = static_cast<int>(threadIdx.x) / 32;
  if (threadIdx.x % 32 == 0) {
    warp_m[warp] = m;
    warp_l[warp] = l;
  }
  __syncthreads();  // also orders every read above before the in-place writes below
  m = -INFINITY;
  l = 0.f;
  for (int w = 0; w < static_cast<int>(blockDim.x) / 32; ++w) merge(m, l, warp_m[w], warp_l[w]);
  const float inv = l > 0.f ? 1.f / l : 0.f;

  for (int c = 0; c < sk; c += blockDim.x) {
    const int j = c + static_cast<int>(threadIdx.x);
    float p = 0.f;
    if (j < nvis) p = exp2f(srow[j] * kLog2e - m) * inv;
    // The writes of this chunk land on scores [c/2, (c + blockDim)/2), read in this chunk or
    // earlier: all reads of the chunk must be done first.
    __syncthreads();
    if (j < sk) prow[j] = from_float<T>(p);
  }
}

}  // namespace

std::size_t baseline_workspace_bytes(const FwdParams& p) {
  const std::int64_t ld = round_up(p.seqlen_k > 0 ? p.seqlen_k : 1, kScoreRowAlign);
  return kCublasWorkspace + static_cast<std::size_t>(p.batch) * static_cast<std::size_t>(p.hq) *
                                static_cast<std::size_t>(p.seqlen_q) *
                                static_cast<std::size_t>(ld) * sizeof(float);
}

void baseline_attention_forward(const FwdParams& p, void* workspace, std::size_t workspace_bytes,
                                void* stream_ptr) {
  if (p.is_varlen()) {
    throw Error(ErrorCode::not_supported, "gpuattn baseline: varlen is not supported");
  }
  if (p.has_softcap()) {
    throw Error(ErrorCode::not_supported, "gpuattn baseline: softcap is not supported");
  }
  if (p.has_alibi()) {
    throw Error(ErrorCode::not_supported, "gpuattn baseline: alibi_slopes is not supported");
  }
  // What the three kernels do not compute is refused, not ignored: a mask beyond causal, the
  // per-sequence key ranges, a paged or quantized cache.
  if (!p.dense_or_causal()) {
    throw Error(ErrorCode::not_supported,
                "gpuattn baseline: masks other than causal (window, global tokens, block-sparse "
                "layout) are not supported");
  }
  if (p.seqused_k != nullptr || p.leftpad_k != nullptr) {
    throw Error(ErrorCode::not_supported,
                std::string("gpuattn baseline: ") +
                    (p.seqused_k != nullptr ? "seqused_k" : "leftpad_k") + " is not supported");
  }
  if (p.block_table != nullptr) {
    throw Error(ErrorCode::not_supported, "gpuattn baseline: a paged cache (block_table) is not "
                                          "supported");
  }
  if (p.kv_quantized() || p.q_quantized()) {
    throw Error(ErrorCode::not_supported,
                std::string("gpuattn baseline: quantized ") + (p.kv_quantized() ? "k/v" : "q") +
                    " (" + (p.kv_quantized() ? "k_scale" : "q_scale") + ") is not supported");
  }
  if (p.dtype != DType::f16 && p.dtype != DType::bf16) {
    throw Error(ErrorCode::not_supported,
                std::string("gpuattn baseline: dtype ") + to_string(p.dtype) + " not supported");
  }
  if (p.device != Device::cuda) {
    throw Error(ErrorCode::invalid_argument, "gpuattn baseline: tensors must be on cuda");
  }
  if (p.batch == 0 || p.hq == 0 || p.seqlen_q == 0) return;
  if (p.seqlen_k <= 0) {
    throw Error(ErrorCode::not_supported, "gpuattn baseline: seqlen_k 0 is not supported");
  }
  const std::size_t need = baseline_workspace_bytes(p);
  if (workspace == nullptr || workspace_bytes < need) {
    throw Error(ErrorCode::invalid_argument, "gpuattn baseline: workspace of " +
                                                 std::to_string(workspace_bytes) +
                                                 " bytes, needs " + std::to_string(need));
  }
  if (reinterpret_cast<std::uintptr_t>(workspace) % 256 != 0) {
    throw Error(ErrorCode::invalid_argument, "gpuattn baseline: workspace not 256-byte aligned");
  }
  const std::int64_t rows = static_cast<std::int64_t>(p.batch) * p.hq * p.seqlen_q;
  if (rows > INT_MAX) {
    throw Error(ErrorCode::not_supported,
                "gpuattn baseline: " + std::to_string(rows) + " score rows exceed the grid limit");
  }

  DeviceGuard guard(p.device_index);
  auto stream = static_cast<cudaStream_t>(stream_ptr);
  LtContext& lt = LtContext::instance();
  void* lt_workspace = workspace;
  float* scores = reinterpret_cast<float*>(static_cast<char*>(workspace) + kCublasWorkspace);
  const std::int64_t ld = round_up(p.seqlen_k, kScoreRowAlign);  // floats per score row
  const std::int64_t head_scores = static_cast<std::int64_t>(p.seqlen_q) * ld;

  // Loop over B with the heads batched (one stride per tensor) when Hq == Hkv; otherwise loop
  // over query heads with B batched, so that each query head reads its own kv head (GQA/MQA).
  const bool loop_batch = p.hq == p.hkv && p.batch <= p.hq;
  const int loops = loop_batch ? p.batch : p.hq;
  const int batch = loop_batch ? p.hq : p.batch;

  // S^T[Sk x Sq] = K[Sk x D] Q^T (column-major view of the row-major S = Q K^T), scaled.
  GemmShape qk;
  qk.ab_type = p.dtype;
  qk.c_type = DType::f32;
  qk.trans_a = true;
  qk.m = p.seqlen_k;
  qk.n = p.seqlen_q;
  qk.k = p.head_dim;
  qk.lda = p.k_row_stride;
  qk.ldb = p.q_row_stride;
  qk.ldc = ld;
  qk.batch = batch;
  qk.stride_a = loop_batch ? p.k_head_stride : p.k_batch_stride;
  qk.stride_b = loop_batch ? p.q_head_stride : p.q_batch_stride;
  qk.stride_c = loop_batch ? head_scores : p.hq * head_scores;

  // O^T[D x Sq] = V^T[D x Sk] P^T[Sk x Sq]; P rows (in T) sit over the score rows: ld 2 * ld.
  GemmShape pv;
  pv.ab_type = p.dtype;
  pv.c_type = p.dtype;
  pv.trans_a = false;
  pv.m = p.head_dim;
  pv.n = p.seqlen_q;
  pv.k = p.seqlen_k;
  pv.lda = p.v_row_stride;
  pv.ldb = 2 * ld;
  pv.ldc = p.o_row_stride;
  pv.batch = batch;
  pv.stride_a = loop_batch ? p.v_head_stride : p.v_batch_stride;
  pv.stride_b = 2 * qk.stride_c;
  pv.stride_c = loop_batch ? p.o_head_stride : p.o_batch_stride;

  constexpr std::int64_t kElem = 2;  // bytes of f16/bf16
  const char* q = static_cast<const char*>(p.q);
  const char* k = static_cast<const char*>(p.k);
  const char* v = static_cast<const char*>(p.v);
  char* o = static_cast<char*>(p.o);
  auto scores_at = [&](int i) {
    return scores + (loop_batch ? static_cast<std::int64_t>(i) * p.hq : i) * head_scores;
  };

  for (int i = 0; i < loops; ++i) {
    const std::int64_t q_off = loop_batch ? i * p.q_batch_stride : i * p.q_head_stride;
    const std::int64_t k_off = loop_batch ? i * p.k_batch_stride : p.kv_head(i) * p.k_head_stride;
    lt.matmul(qk, p.scale, k + k_off * kElem, q + q_off * kElem, scores_at(i), lt_workspace,
              stream);
  }

  const int threads = static_cast<int>(
      round_up(p.seqlen_k < kMaxSoftmaxThreads ? p.seqlen_k : kMaxSoftmaxThreads, 32));
  if (p.dtype == DType::f16) {
    softmax_rows_kernel<__half><<<static_cast<unsigned>(rows), threads, 0, stream>>>(
        scores, ld, p.seqlen_q, p.seqlen_k, p.causal);
  } else {
    softmax_rows_kernel<__nv_bfloat16><<<static_cast<unsigned>(rows), threads, 0, stream>>>(
        scores, ld, p.seqlen_q, p.seqlen_k, p.causal);
  }
  check_cuda(cudaGetLastError(), "softmax_rows_kernel launch");

  for (int i = 0; i < loops; ++i) {
    const std::int64_t v_off = loop_batch ? i * p.v_batch_stride : p.kv_head(i) * p.v_head_stride;
    const std::int64_t o_off = loop_batch ? i * p.o_batch_stride : i * p.o_head_stride;
    lt.matmul(pv, 1.f, v + v_off * kElem, scores_at(i), o + o_off * kElem, lt_workspace, stream);
  }
}

void baseline_gemm_tn(DType dtype, int m, int n, int k, const void* a, const void* b, void* c,
                      void* workspace, std::size_t workspace_bytes, void* stream) {
  if (dtype != DType::f16 && dtype != DType::bf16) {
    throw Error(ErrorCode::not_supported,
                std::string("gpuattn baseline GEMM: dtype ") + to_string(dtype) + " not supported");
  }
  if (workspace == nullptr || workspace_bytes < kCublasWorkspace) {
    throw Error(ErrorCode::invalid_argument,
                "gpuattn baseline GEMM: workspace of " + std::to_string(workspace_bytes) +
                    " bytes, needs " + std::to_string(kCublasWorkspace));
  }
  GemmShape g;
  g.ab_type = dtype;
  g.c_type = dtype;
  g.trans_a = true;
  g.m = m;
  g.n = n;
  g.k = k;
  g.lda = k;
  g.ldb = k;
  g.ldc = m;
  LtContext::instance().matmul(g, 1.f, a, b, c, workspace, static_cast<cudaStream_t>(stream));
}

}  // namespace gpuattn
