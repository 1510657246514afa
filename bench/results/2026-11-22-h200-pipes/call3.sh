#!/usr/bin/env bash
# Device call 3: the timing half of the GPU check at main with the sweep (bench, the sm80 kernel,
# torch SDPA's anchors, compare_torch, sparse vs Flex, long context, the FA3-style sweep), then the
# trace build's first run with its finer stamps (SM90_TRACE_X) at the short D64 shapes.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
GPU_CHECK_TESTS=0 GPU_CHECK_SWEEP=1 OUT=$OUT timeout 420 scripts/gpu-check.sh > $OUT/console.log 2>&1
ts "gpu-check rc=$?"
sed -n '/^## /,$p' $OUT/summary.md | head -80
OUT=$OUT/trace timeout $((585 - $(date +%s) + t0)) scripts/sm90-trace.sh causal-d64-512 short-d64 > $OUT/trace.log 2>&1
ts "trace rc=$?"; tail -40 $OUT/trace.log
