#!/usr/bin/env bash
# Session 53, call 2: the second half of the correctness check at 677f724 (the compute-sanitizer
# steps and gpuattn verify), after call 1's ctest.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s53/call2.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=677f724
GPU_CHECK_BENCH=0 GPU_CHECK_CTEST=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
grep -E '^== ' $OUT/console.log
grep -E 'ERROR SUMMARY|exit' $OUT/console.log | sort | uniq -c | head -30
