#!/usr/bin/env bash
# Device call 2: the correctness half of the GPU check at main (ctest on every path, memcheck and
# racecheck, verify), for the record of the commit that closes the sm_90a issue's deliverables.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
GPU_CHECK_BENCH=0 OUT=$OUT timeout 590 scripts/gpu-check.sh > $OUT/gpu-check.log 2>&1; echo "gpu-check rc=$?"
grep -E "racecheck|memcheck|tests passed|FAILED|Passed|Failed|ERROR SUMMARY|RACECHECK SUMMARY|==|took" $OUT/gpu-check.log | tail -40
