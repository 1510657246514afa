#!/usr/bin/env bash
# Session 55, call 6: the first half of the correctness check on wip/d64-solo (build,
# ctest on the 16 shards, the fuzz step): sm90_ws_64x128_2cta in the dispatch (two_ctas_pay),
# its GPU test variant sm90_2cta., the 2-stage variant on every D64 case, the decode kernels'
# shared softmax helpers.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s55/call6.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s55-call6}
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
tail -30 $OUT/summary.md 2>/dev/null
grep -E 'tests passed|tests failed|\*\*\*Failed|Failed +[0-9]' $OUT/ctest.log | head -20
grep -E 'PASSED|FAILED|Failure|seed' $OUT/fuzz.log | head -30
grep -E 'step|took|[0-9]+ s$' $OUT/console.log | tail -20
