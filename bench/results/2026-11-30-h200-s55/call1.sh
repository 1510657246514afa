#!/usr/bin/env bash
# Session 55, call 1: the first half of the correctness check at the working tree of f9c0b2e+ (build,
# ctest on the 16 shards, the fuzz step): one rows tensor-map builder for the 16-bit and FP8 maps
# (host code on every Hopper call), one spread_unit_dims test helper, and FP8 head dim 256's
# first K/V tile issued before the producer waits on the one Q slot.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s55/call1.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s55-call1}
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
tail -30 $OUT/summary.md 2>/dev/null
grep -E 'tests passed|tests failed|\*\*\*Failed|Failed +[0-9]' $OUT/ctest.log | head -20
grep -E 'PASSED|FAILED|Failure|seed' $OUT/fuzz.log | head -30
grep -E 'step|took|[0-9]+ s$' $OUT/console.log | tail -20
