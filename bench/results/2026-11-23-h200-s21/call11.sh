#!/usr/bin/env bash
# Device call 11: the timing half of the GPU check at main with the exp turns (45fda7a's
# kernels): bench, the sm80 kernel, torch SDPA's anchors, compare_torch, sparse vs Flex, long
# context, the FA3-style sweep; everything packed in one archive (the device returns 8 files).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
GPU_CHECK_TESTS=0 GPU_CHECK_SWEEP=1 OUT=$OUT timeout 570 scripts/gpu-check.sh > $OUT/console.log 2>&1
ts "gpu-check rc=$?"
grep -E "^\| " $OUT/summary.md | head -12
grep -E "^\| (64|128|256) \|" $OUT/summary.md | head -40
cd $OUT && tar czf timing.tgz --exclude=timing.tgz . && find . -maxdepth 1 -type f ! -name timing.tgz -delete
