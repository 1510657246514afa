// The kernels' math helpers of cuda/ptx.cuh that are more than one instruction, on the GPU against
// the C library in double: ptx::tanh_of_log2 (soft-capped scores; the reciprocal on MUFU.RCP or
// on the FMA pipe) over the whole float line.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.h"
#include "cuda/ptx.cuh"

namespace gpuattn::testing {
namespace {

// y[i] = tanh(x[i] * pre) as the kernels take it: tanh_of_log2(x * tanh_log2_factor(pre)), or
// tanh_of_log2_exact (the caps above FwdParams::kFastTanhMaxCap).
template <bool kFma>
__global__ void tanh_kernel(const float* x, float* y, int n, float pre, bool exact) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float v = x[i] * ptx::tanh_log2_factor(pre);
    y[i] = exact ? ptx::tanh_of_log2_exact<kFma>(v) : ptx::tanh_of_log2<kFma>(v);
  }
}

std::vector<float> tanh_on_gpu(const std::vector<float>& x, float pre, bool fma,
                               bool exact = false) {
  const int n = static_cast<int>(x.size());
  DeviceBuffer dx(x.size() * sizeof(float)), dy(x.size() * sizeof(float));
  dx.upload(x.data());
  std::vector<float> y(x.size(), 12345.f);  // poisoned
  dy.upload(y.data());
  const auto* in = static_cast<const float*>(dx.get());
  auto* out = static_cast<float*>(dy.get());
  if (fma) {
    tanh_kernel<true><<<(n + 255) / 256, 256>>>(in, out, n, pre, exact);
  } else {
    tanh_kernel<false><<<(n + 255) / 256, 256>>>(in, out, n, pre, exact);
  }
  TEST_CUDA_CHECK(cudaGetLastError());
  TEST_CUDA_CHECK(cudaDeviceSynchronize());
  dy.download(y.data());
  return y;
}

class PtxMath : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  }
};

// A dense grid over [-20, 20], magnitudes from 1e-30 to 1e30 of both signs, zeros, subnormals,
// the float extremes.
std::vector<float> tanh_inputs() {
  std::vector<float> x;
  for (int i = -200000; i <= 200000; ++i) x.push_back(static_cast<float>(i) * 1e-4f);
  for (int e = -300; e <= 300; ++e) {
    const float m = std::pow(10.f, static_cast<float>(e) / 10.f);
    x.push_back(m);
    x.push_back(-m);
  }
  for (float v : {0.f, -0.f, 1e-45f, -1e-45f, FLT_MIN, -FLT_MIN, FLT_MAX, -FLT_MAX}) x.push_back(v);
  return x;
}

// Within 4e-7 of tanh everywhere (its bound: 2.5e-7 measured, the exp2's own error included);
// +-inf give +-1 and NaN stays NaN.
TEST_P(PtxMath, TanhOfLog2IsWithinItsBound) {
  const std::vector<float> x = tanh_inputs();
  const std::vector<float> y = tanh_on_gpu(x, 1.f, GetParam());
  double worst = 0.0;
  float worst_x = 0.f;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double err = std::fabs(static_cast<double>(y[i]) - std::tanh(static_cast<double>(x[i])));
    if (!(err <= worst)) {
      worst = err;
      worst_x = x[i];
    }
  }
  EXPECT_LE(worst, 4e-7) << "at x = " << worst_x;
  const std::vector<float> odd =
      tanh_on_gpu({INFINITY, -INFINITY, NAN, 9.5f, -9.5f, 100.f}, 1.f, GetParam());
  EXPECT_EQ(odd[0], 1.f);
  EXPECT_EQ(odd[1], -1.f);
  EXPECT_TRUE(std::isnan(odd[2]));
  EXPECT_EQ(odd[3], 1.f);
  EXPECT_EQ(odd[4], -1.f);
  EXPECT_EQ(odd[5], 1.f);
}

// The exact variant: within 2e-6 of tanh relative to it everywhere but where tanh is a subnormal
// float (absolute 1e-44 there), which the plain one is not at small |x| (above 1e-5 relative
// below x = 2e-3: the soft-capped logits of a cap of 1e7 moved by up to 2.5); specials as above.
TEST_P(PtxMath, TanhOfLog2ExactIsWithinItsRelativeBound) {
  const std::vector<float> x = tanh_inputs();
  const std::vector<float> y = tanh_on_gpu(x, 1.f, GetParam(), true);
  double worst = 0.0;
  float worst_x = 0.f;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double want = std::tanh(static_cast<double>(x[i]));
    const double diff = std::fabs(static_cast<double>(y[i]) - want);
    const double err =
        std::fabs(want) < 1.2e-38 ? (diff > 1e-44 ? 1.0 : 0.0) : diff / std::fabs(want);
    if (!(err <= worst)) {
      worst = err;
      worst_x = x[i];
    }
  }
  EXPECT_LE(worst, 2e-6) << "at x = " << worst_x;
  const std::vector<float> small = {1e-4f, 2e-4f, 3e-4f, 5e-4f, 7e-4f, 1e-3f, 1.3e-3f, 1.7e-3f};
  const std::vector<float> plain = tanh_on_gpu(small, 1.f, GetParam());
  double plain_worst = 0.0;
  for (std::size_t i = 0; i < small.size(); ++i) {
    const double want = std::tanh(static_cast<double>(small[i]));
    plain_worst = std::fmax(plain_worst, std::fabs(plain[i] - want) / want);
  }
  EXPECT_GT(plain_worst, 1e-5)
      << "the plain variant is as exact at small x: the test of the exact one proves nothing";
  const std::vector<float> odd =
      tanh_on_gpu({INFINITY, -INFINITY, NAN, 9.5f, -9.5f}, 1.f, GetParam(), true);
  EXPECT_EQ(odd[0], 1.f);
  EXPECT_EQ(odd[1], -1.f);
  EXPECT_TRUE(std::isnan(odd[2]));
  EXPECT_EQ(odd[3], 1.f);
  EXPECT_EQ(odd[4], -1.f);
}

// The factor stays finite for the largest pre (scale / softcap) the library takes: a score of 0
// gives about 0 (0 * inf would be NaN), any other score +-1.
TEST_P(PtxMath, TanhFactorOfTheLargestPreIsFinite) {
  const std::vector<float> y = tanh_on_gpu({0.f, 1e-30f, -1e-30f, 0.5f}, 3.0e38f, GetParam());
  EXPECT_LE(std::fabs(y[0]), 4e-7f);
  EXPECT_EQ(y[1], 1.f);
  EXPECT_EQ(y[2], -1.f);
  EXPECT_EQ(y[3], 1.f);
}

INSTANTIATE_TEST_SUITE_P(Reciprocal, PtxMath, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "Fma" : "Mufu");
                         });

}  // namespace
}  // namespace gpuattn::testing
