// The distributed layer's own kernels: a strided copy of K/V blocks and the log-sum-exp merge of
// partial attention results.
#pragma once

#include <cuda_runtime.h>

#include "dist/rank_exec.h"

namespace gpuattn::dist {

// dst = src: 4-dimensional views of the same shape and dtype, any strides (16-byte units where
// the rows are contiguous and aligned, elements otherwise).
void launch_copy_view(const TensorView& src, const TensorView& dst, cudaStream_t stream);
// RankExec::merge and RankExec::finish on the device.
void launch_merge(const Accumulator& acc, int row0, const TensorView& part, const float* part_lse,
                  bool first, cudaStream_t stream);
void launch_finish(const Accumulator& acc, const TensorView& out, const TensorView& lse,
                   cudaStream_t stream);

}  // namespace gpuattn::dist
