// Which (dtype, head dim) the running device can take through the sm_90a kernel.
#include <array>
#include <atomic>

#include "cuda/cuda_check.h"
#include "cuda/fwd_sm90.h"
#include "cuda/relaxed_capture.h"

namespace gpuattn::sm90 {

bool usable_f16_hdim64();
bool usable_f16_hdim128();
bool usable_f16_hdim256();
bool usable_bf16_hdim64();
bool usable_bf16_hdim128();
bool usable_bf16_hdim256();

bool usable(DType dtype, int head_dim) {
  // Per device ordinal: 0 unknown, 1 no, 2 yes (the answer is the same for every kernel of one
  // build, so one probe per device suffices).
  static std::array<std::atomic<int>, 64> cache{};
  int device = 0;
  GPUATTN_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= static_cast<int>(cache.size())) return false;
  int state = cache[device].load(std::memory_order_relaxed);
  if (state == 0) {
    int major = 0;
    GPUATTN_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    // The probe (cudaFuncGetAttributes, which may load the module) in relaxed capture mode: a
    // process's first call may be inside a capture, and a refused probe would be cached as "no".
    const RelaxedCapture relaxed;
    state = (major == 9 && usable_f16_hdim128()) ? 2 : 1;
    cache[device].store(state, std::memory_order_relaxed);
  }
  if (state != 2) return false;
  return (dtype == DType::f16 || dtype == DType::bf16) &&
         (head_dim == 64 || head_dim == 128 || head_dim == 256);
}

}  // namespace gpuattn::sm90
