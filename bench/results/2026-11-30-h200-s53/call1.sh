#!/usr/bin/env bash
# Session 53, call 1: the first half of the correctness check at 677f724 (build, ctest, the fuzz
# step): s52's 3-consumer FP8 D128 (f54d471, 62a6f67), the one-key far-stride varlen FP8 case (a0b6fdd),
# the map_stride mend (677f724) and the ctest COST order, none of them yet run through the whole ctest.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s53/call1.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=677f724
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
tail -30 $OUT/summary.md 2>/dev/null
grep -E 'tests passed|tests failed|\*\*\*Failed|Failed +[0-9]' $OUT/ctest.log | head -20
grep -E 'PASSED|FAILED|Failure|seed' $OUT/fuzz.log | head -30
grep -E 'step|took|[0-9]+ s$' $OUT/console.log | tail -20
