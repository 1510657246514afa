#!/usr/bin/env bash
# Device call 7: the timing half at HEAD (dead warpgroups, the rotation, the causal tail order): named shapes against the
# anchors, the sweep, and every sweep point timed in turn with cuDNN and FA2.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
GPU_CHECK_TESTS=0 GPU_CHECK_SWEEP=1 GPU_CHECK_SPARSE=0 OUT=$OUT timeout 585 scripts/gpu-check.sh > $OUT/console.log 2>&1
ts "gpu-check rc=$?"
grep -E "^\| " $OUT/summary.md | head -12
grep -A42 "timed in turn" $OUT/summary.md
cd $OUT && tar czf /tmp/timing.tgz . ; mv /tmp/timing.tgz . ; find . -maxdepth 1 -type f ! -name timing.tgz -delete
