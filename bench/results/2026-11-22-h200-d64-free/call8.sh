#!/usr/bin/env bash
# Device call 8: the correctness half of the GPU check at eeaf289 (early first loads): ctest
# (every GPU test on both paths), compute-sanitizer memcheck / racecheck, gpuattn verify.
set -u
export GPUATTN_COMMIT=eeaf289
mkdir -p $OUT/tests
GPU_CHECK_BENCH=0 OUT=$OUT/tests timeout 590 scripts/gpu-check.sh > $OUT/tests/console.log 2>&1; echo "gpu-check rc=$?"
tail -30 $OUT/tests/console.log
