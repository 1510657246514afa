#!/usr/bin/env bash
# Session 49, calls 6-8 (run as inline commands; recorded here): the FP8 kernel at head dim 256,
# built from branch wip/fp8-d256 (b900695 before clang-format) and carried.
#   call 6 (carry s49e: gpuattn_cuda_tests):
#     timeout 120 gpuattn_cuda_tests --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReferenceAtHeadDim256:Fp8AttentionCuda.OtherCalls*:Fp8AttentionCuda.Random*'
#   call 7 (the same binary): compute-sanitizer --tool memcheck / racecheck --error-exitcode 9 on
#     --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReferenceAtHeadDim256'
#   call 8 (carry s49f: gpuattn_fp8_probe with --head-dim 256):
#     printf '#!/bin/sh\nGPUATTN_FP8_KERNEL=0 exec /tmp/f/gpuattn_fp8_probe "$@"\n' > /tmp/deq.sh
#     python3 bench/ab_probe.py --rounds 1 /tmp/deq.sh /tmp/f/gpuattn_fp8_probe -- 10 --head-dim 256
echo "a record of inline commands; see the comments" >&2
exit 2
