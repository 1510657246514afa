// The engine's cuBLASLt GEMMs (its only translation unit that talks to cuBLASLt). Row-major
// Y[rows, N] = X[rows, K] W[K, N] is column-major Y^T = W^T X^T: A = W (N x K, ld N), B = X
// (K x rows, ld K), D = Y (N x rows, ld N), so the bias (length N) is cuBLASLt's per-row bias
// vector. Plans (descriptors, layouts and the heuristic's algorithm) are cached per shape: a
// decode step calls the same few shapes every time.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

#include "engine/cuda/gemm.h"

namespace gpuattn::engine::cuda {
namespace {

// cuBLASLt's recommended workspace on Hopper.
constexpr std::size_t kWorkspace = std::size_t(32) << 20;

enum Kind { kBias = 0, kGeluBias = 1, kBiasResidual = 2, kLmHead = 3, kLmHeadT = 4 };

// The head reads wte [Vp, C] transposed up to this many rows (a GEMV: cuBLASLt's gemv2T kernel,
// 30 us at one row on an H200, against 53 us for its kernel over wte^T), and wte^T above (where
// the transposed form took an sm_75 WMMA kernel, 64 us at 32 rows). Measured with the vocabulary
// unpadded (V = 50257, 2026-11-22); not yet re-measured at Vp.
constexpr int kHeadTransposedRows = 8;

// Why the head runs over Vp = V padded with zero rows to a multiple of 64 (model_ops.h's
// padded_vocab), not over V: at GPT-2's odd V = 50257 (m = V, and wte^T's leading dimension V)
// cuBLASLt picked its old sm_75 "align1" kernels, 111 us at 128 rows and 54 us at 8 rows for the
// 124M model on an H200 (2026-11-29), where reading the weights alone takes about 16-20 us.
// Padded, m = Vp and wte^T's leading dimension are multiples of 64 (and so is the engine's logits
// pitch); at V = 50257 the pad is 47 zero rows more to read.

void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw Error(ErrorCode::cuda_error, std::string("gpuattn engine GEMM: ") + what +
                                           " failed: " + cublasLtGetStatusName(s) + " (" +
                                           cublasLtGetStatusString(s) + ")");
  }
}

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // reported here, not again by the next launch's check
    throw Error(ErrorCode::cuda_error,
                std::string("gpuattn engine GEMM: ") + what + " failed: " + cudaGetErrorString(e));
  }
}

}  // namespace

struct Gemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
  }
};

Gemm::Gemm(DType dtype, void* stream) : dtype_(dtype), stream_(stream) {
  cublasLtHandle_t h = nullptr;
  check_lt(cublasLtCreate(&h), "cublasLtCreate");
  handle_ = h;
  const cudaError_t e = cudaMalloc(&workspace_, kWorkspace);
  if (e != cudaSuccess) {  // the destructor does not run for a constructor that throws
    cublasLtDestroy(h);
    handle_ = nullptr;
    check_cuda(e, "cudaMalloc of the cuBLASLt workspace");
  }
}

Gemm::~Gemm() {
  plans_.clear();
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
}

Gemm::Plan& Gemm::plan(int kind, int m, int n, int k, int ldd) {
  auto& slot = plans_[{kind, m, n, k, ldd}];
  if (slot) return *slot;
  auto p = std::make_unique<Plan>();
  const bool head = kind == kLmHead || kind == kLmHeadT;
  const cudaDataType_t ab = dtype_ == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const cudaDataType_t cd = head ? CUDA_R_32F : ab;
  check_lt(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate");
  const cublasOperation_t ta = kind == kLmHeadT ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = CUBLAS_OP_N;
  check_lt(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)),
           "set TRANSA");
  check_lt(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)),
           "set TRANSB");
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (kind == kBias || kind == kBiasResidual) epi = CUBLASLT_EPILOGUE_BIAS;
  if (kind == kGeluBias) epi = CUBLASLT_EPILOGUE_GELU_BIAS;
  check_lt(
      cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)),
      "set EPILOGUE");
  // A: m x k (ld m), or k x m stored (op T, ld k); B: k x n (ld k); C/D: m x n (ld ldd >= m).
  if (kind == kLmHeadT) {
    check_lt(cublasLtMatrixLayoutCreate(&p->a, ab, k, m, k), "layout A");
  } else {
    check_lt(cublasLtMatrixLayoutCreate(&p->a, ab, m, k, m), "layout A");
  }
  check_lt(cublasLtMatrixLayoutCreate(&p->b, ab, k, n, k), "layout B");
  check_lt(cublasLtMatrixLayoutCreate(&p->c, cd, m, n, ldd), "layout C");
  cublasLtMatmulPreference_t pref = nullptr;
  check_lt(cublasLtMatmulPreferenceCreate(&pref), "PreferenceCreate");
  const std::size_t ws = kWorkspace;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                       sizeof(ws));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s =
      cublasLtMatmulAlgoGetHeuristic(static_cast<cublasLtHandle_t>(handle_), p->desc, p->a, p->b,
                                     p->c, p->c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  check_lt(s, "AlgoGetHeuristic");
  if (found == 0) {
    throw Error(ErrorCode::not_supported, "gpuattn engine GEMM: cuBLASLt has no algorithm for " +
                                              std::to_string(m) + " x " + std::to_string(n) +
                                              " x " + std::to_string(k) + " (kind " +
                                              std::to_string(kind) + ")");
  }
  p->algo = result.algo;
  slot = std::move(p);
  return *slot;
}

void check_linear_epilogue(bool gelu, const void* residual) {
  if (gelu && residual != nullptr) {  // cuBLASLt's epilogue would give gelu(x W + bias + residual)
    throw Error(ErrorCode::invalid_argument,
                "gpuattn engine GEMM: linear takes gelu or a residual, not both (the epilogue "
                "would apply GELU after the residual add)");
  }
}

void Gemm::linear(const void* x, const void* W, const void* bias, const void* residual, void* out,
                  int rows, int K, int N, bool gelu) {
  check_linear_epilogue(gelu, residual);
  if (rows == 0) return;
  const int kind = gelu ? kGeluBias : residual ? kBiasResidual : kBias;
  const float alpha = 1.0f, beta = residual ? 1.0f : 0.0f;
  Plan& p = plan(kind, N, rows, K, N);
  check_lt(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                          sizeof(bias)),
           "set BIAS_POINTER");
  check_lt(cublasLtMatmul(static_cast<cublasLtHandle_t>(handle_), p.desc, &alpha, W, p.a, x, p.b,
                          &beta, residual ? residual : out, p.c, out, p.c, &p.algo, workspace_,
                          kWorkspace, static_cast<cudaStream_t>(stream_)),
           "cublasLtMatmul (linear)");
}

void Gemm::lm_head(const void* x, const void* E, const void* Et, float* logits, int rows, int C,
                   int Vp, int ld) {
  if (ld < Vp) {
    throw Error(ErrorCode::invalid_argument,
                "gpuattn engine GEMM: lm_head writes Vp = " + std::to_string(Vp) +
                    " logits columns (the vocabulary padded to a multiple of 64), but the logits "
                    "row pitch ld is " +
                    std::to_string(ld) + "; ld must be at least Vp");
  }
  if (rows == 0) return;
  const float alpha = 1.0f, beta = 0.0f;
  const bool transposed = rows <= kHeadTransposedRows;
  const void* A = transposed ? E : Et;
  Plan& p = plan(transposed ? kLmHeadT : kLmHead, Vp, rows, C, ld);
  check_lt(cublasLtMatmul(static_cast<cublasLtHandle_t>(handle_), p.desc, &alpha, A, p.a, x, p.b,
                          &beta, logits, p.c, logits, p.c, &p.algo, workspace_, kWorkspace,
                          static_cast<cudaStream_t>(stream_)),
           "cublasLtMatmul (lm_head)");
}

}  // namespace gpuattn::engine::cuda
