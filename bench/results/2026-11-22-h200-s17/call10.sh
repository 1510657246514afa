#!/usr/bin/env bash
# Device call 10: gpu-check's correctness half, sanitizer part (the engine's memcheck/racecheck
# included) and verify.
set -u
GPU_CHECK_BENCH=0 GPU_CHECK_CTEST=0 timeout 580 scripts/gpu-check.sh > $OUT/gpu-check.log 2>&1
tail -25 $OUT/gpu-check.log
