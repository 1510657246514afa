#!/usr/bin/env bash
# Device call 6: the correctness half of the GPU check at main with the D256 stage-staged O
# (ctest, compute-sanitizer memcheck and racecheck now also on two persistent D256 shapes, verify).
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
GPU_CHECK_BENCH=0 OUT=$OUT timeout 590 scripts/gpu-check.sh > $OUT/gpu-check.log 2>&1; echo "gpu-check rc=$?"
grep -E "racecheck|memcheck|tests passed|FAILED|Passed|Failed|ERROR SUMMARY|RACECHECK SUMMARY|==|took" $OUT/gpu-check.log | tail -40
