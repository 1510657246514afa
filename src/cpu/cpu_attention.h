// CPU backend: tiled, threaded fp32 attention forward with online softmax (memory O(N)).
#pragma once

#include "core/fwd_params.h"

namespace gpuattn {

// `p` was validated by make_fwd_params; all pointers are host pointers.
void cpu_attention_forward(const FwdParams& p);

}  // namespace gpuattn
