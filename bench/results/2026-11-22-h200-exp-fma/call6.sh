#!/usr/bin/env bash
# Device call 6: the correctness half of the GPU check with Q in registers on main: ctest (both
# kernels, pytest), compute-sanitizer memcheck and racecheck, gpuattn verify.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
GPU_CHECK_BENCH=0 OUT=$OUT scripts/gpu-check.sh > $OUT/gpu-check.log 2>&1; echo "gpu-check rc=$?"
tail -30 $OUT/gpu-check.log
