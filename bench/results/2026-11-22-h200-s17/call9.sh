#!/usr/bin/env bash
# Device call 9: gpu-check's correctness half, ctest part (every suite, the engine's included).
set -u
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 timeout 580 scripts/gpu-check.sh > $OUT/gpu-check.log 2>&1
tail -25 $OUT/gpu-check.log
