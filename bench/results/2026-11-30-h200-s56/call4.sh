#!/usr/bin/env bash
# Session 56, call 4: the first half of the correctness check at cb11963 (build,
# ctest on the 16 shards, the fuzz step): half last tiles on the 3-consumer and 4-stage causal
# D64 kernels, one tile loop on the 4-stage one, its new GPU test variant sm90_s4. and the
# HalfLastTile cases.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s56/call4.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s56-call4}
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
tail -30 $OUT/summary.md 2>/dev/null
grep -E 'tests passed|tests failed|\*\*\*Failed|Failed +[0-9]' $OUT/ctest.log | head -20
grep -E 'PASSED|FAILED|Failure|seed' $OUT/fuzz.log | head -30
grep -E 'step|took|[0-9]+ s$' $OUT/console.log | tail -20
