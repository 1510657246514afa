#!/usr/bin/env bash
# Session 52, call 2: the first half of the correctness check at 9341aa6 (build, ctest, the fuzz
# step): s51's unit-stride TMA maps (6f74300, far_units views) and the FP8 transposer's immediates
# (9341aa6), and s51's out-map refactor (31868f0), none of them yet run through ctest.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s52/call2.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=9341aa6
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
tail -30 $OUT/summary.md 2>/dev/null
grep -E 'tests passed|tests failed|\*\*\*Failed|Failed +[0-9]' $OUT/ctest.log | head -20
grep -E 'PASSED|FAILED|Failure|seed' $OUT/fuzz.log | head -30
grep -E 'step|took|[0-9]+ s$' $OUT/console.log | tail -20
