#!/usr/bin/env bash
# Session 50, call 1: the first half of the correctness check at 7287c84 (build, ctest, the
# fuzz step): the fp8deq. ctest copy and the D64/D256 FP8 cases added late in s49 run on a GPU first.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s50/call1.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=7287c84
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
tail -30 $OUT/summary.md 2>/dev/null
grep -E 'tests passed|tests failed|\*\*\*Failed|Failed +[0-9]' $OUT/ctest.log | head -20
grep -E 'PASSED|FAILED|Failure|seed' $OUT/fuzz.log | head -30
grep -E 'step|took|[0-9]+ s$' $OUT/console.log | tail -20
