#!/usr/bin/env bash
# Session 61, call 3: the GPU suites at the session's last code (build, ctest on the 16 shards with
# python.pytest, the fuzz step): the engine's capture abort and check_shapes, the scale bounds,
# the quantizer's scale ends and the CPU backend's run_parts.
#   OUT=$OUT bash bench/results/2026-12-01-h200-s61/call3.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s61-call3}
GPU_CHECK_BENCH=0 GPU_CHECK_SANITIZER=0 GPU_CHECK_VERIFY=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
tail -30 $OUT/summary.md 2>/dev/null
grep -E 'tests passed|tests failed|\*\*\*Failed|Failed +[0-9]|\(Failed\)' $OUT/ctest.log | head -30
grep -E 'PASSED|FAILED|Failure|seed' $OUT/fuzz.log | head -20
grep -E 'step|took|[0-9]+ s$' $OUT/console.log | tail -20
