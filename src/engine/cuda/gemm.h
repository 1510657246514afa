// The engine's GEMMs through cuBLASLt, with bias, GELU and the residual add in the epilogue.
// Row-major operands; device memory; one instance per stream (it caches plans per shape).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <tuple>

#include "gpuattn/types.h"

namespace gpuattn::engine::cuda {

// invalid_argument for a linear with both gelu and a residual (ModelOps::linear's contract; the
// cuBLASLt epilogue would add the residual before the GELU).
void check_linear_epilogue(bool gelu, const void* residual);

class Gemm {
 public:
  Gemm(DType dtype, void* stream);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // out[rows, N] = act(x[rows, K] W[K, N] + bias[N]) (+ residual[rows, N]); act = GELU (tanh)
  // when gelu. residual may alias out; gelu with a residual is an invalid_argument (the epilogue
  // would add the residual before the GELU).
  void linear(const void* x, const void* W, const void* bias, const void* residual, void* out,
              int rows, int K, int N, bool gelu);
  // logits fp32 [rows, Vp] (row pitch ld >= Vp, else invalid_argument) = x[rows, C] E[Vp, C]^T,
  // with E and Et = E^T [C, Vp] both given (a few rows read E, more read Et: cuBLASLt's best
  // kernels differ). Vp is the vocabulary padded with zero rows to a multiple of 64 (gemm.cu).
  void lm_head(const void* x, const void* E, const void* Et, float* logits, int rows, int C, int Vp,
               int ld);

  struct Plan;

 private:
  Plan& plan(int kind, int m, int n, int k, int ldd);

  DType dtype_;
  void* stream_;
  void* handle_ = nullptr;     // cublasLtHandle_t
  void* workspace_ = nullptr;  // device
  std::map<std::tuple<int, int, int, int, int>, std::unique_ptr<Plan>> plans_;
};

}  // namespace gpuattn::engine::cuda
