#!/usr/bin/env bash
# Device call 11: the second timing half, same kernels as eeaf289 (this tree, docs since) (bench, anchors, compare_torch,
# sparse vs Flex, long context, the sweep with its plot); results in 2026-11-22-h200-<this commit>/.
set -u
export GPUATTN_COMMIT=$(cat .commit)
GPU_CHECK_TESTS=0 GPU_CHECK_SWEEP=1 OUT=$OUT timeout 595 scripts/gpu-check.sh > $OUT/console.log 2>&1; echo "gpu-check rc=$?"
tail -60 $OUT/summary.md 2>/dev/null || tail -30 $OUT/console.log
