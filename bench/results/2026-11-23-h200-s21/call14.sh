#!/usr/bin/env bash
# Device call 14: the timing half with the new sweep-turns step (the sweep's points up to S2048
# timed in turn with the anchors through compare_torch), sparse skipped; kernels as call 12.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
GPU_CHECK_TESTS=0 GPU_CHECK_SWEEP=1 GPU_CHECK_SPARSE=0 OUT=$OUT timeout 570 scripts/gpu-check.sh > $OUT/console.log 2>&1
ts "gpu-check rc=$?"
grep -E "^\| " $OUT/summary.md | head -12
grep -A24 "timed in turn" $OUT/summary.md
cd $OUT && tar czf /tmp/timing.tgz . ; mv /tmp/timing.tgz . ; find . -maxdepth 1 -type f ! -name timing.tgz -delete
