#!/usr/bin/env bash
# Device call 4: the timing half of the GPU check at main (kernels unchanged since the sixteenth
# session; FwdParams grew by the quantized cache's fields): bench, the sm80 kernel, torch SDPA's
# anchors, compare_torch, sparse vs Flex, long context, the FA3-style sweep.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
GPU_CHECK_TESTS=0 GPU_CHECK_SWEEP=1 OUT=$OUT timeout 560 scripts/gpu-check.sh > $OUT/console.log 2>&1
ts "gpu-check rc=$?"
grep -E "^\| " $OUT/summary.md | head -60
