#!/usr/bin/env bash
# Session 56, call 5 (right after call 4, on its build): the second half of the correctness check
# at cb11963 (the compute-sanitizer steps, the new sm90_s4 ones among them, and gpuattn verify).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s56/call5.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=${GPUATTN_COMMIT:-s56-call5}
GPU_CHECK_SKIP_BUILD=1 GPU_CHECK_BENCH=0 GPU_CHECK_CTEST=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
grep -E "exit status|all passed|FAIL|verify" $OUT/console.log | tail -30
