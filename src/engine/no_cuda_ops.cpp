// make_cuda_ops in a build without the CUDA backend.
#include "engine/model_ops.h"

#if !defined(GPUATTN_WITH_CUDA)
namespace gpuattn::engine {

std::unique_ptr<ModelOps> make_cuda_ops(DType, int) {
  throw Error(ErrorCode::not_supported,
              "gpuattn::Gpt2Engine: the CUDA backend was asked for, but this build has no CUDA");
}

}  // namespace gpuattn::engine
#endif
