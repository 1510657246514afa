#!/usr/bin/env bash
# Device call 8: the timing half of the GPU check at main with Q in registers (bench, anchors,
# compare_torch, sparse against Flex, the FA3-style sweep).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
GPU_CHECK_TESTS=0 GPU_CHECK_SWEEP=1 OUT=$OUT scripts/gpu-check.sh > $OUT/console.log 2>&1; echo "gpu-check rc=$?"
tail -60 $OUT/console.log
