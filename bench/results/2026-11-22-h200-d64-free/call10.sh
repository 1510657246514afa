#!/usr/bin/env bash
# Device call 10: the timing half of the GPU check at eeaf289 (bench, anchors, compare_torch,
# sparse vs Flex, long context, the sweep with its plot); results in 2026-11-22-h200-eeaf289/.
set -u
export GPUATTN_COMMIT=eeaf289
GPU_CHECK_TESTS=0 GPU_CHECK_SWEEP=1 OUT=$OUT timeout 595 scripts/gpu-check.sh > $OUT/console.log 2>&1; echo "gpu-check rc=$?"
tail -60 $OUT/summary.md 2>/dev/null || tail -30 $OUT/console.log
