#!/usr/bin/env bash
# Device call 3: the timing half of wip/d128-short-stages (bench, anchors, compare_torch, the sweep
# and its points timed in turn; no sparse steps).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
GPU_CHECK_TESTS=0 GPU_CHECK_SWEEP=1 GPU_CHECK_SPARSE=0 timeout 580 scripts/gpu-check.sh > $OUT/console.log 2>&1; echo "gpu-check rc=$?"
tail -60 $OUT/summary.md
