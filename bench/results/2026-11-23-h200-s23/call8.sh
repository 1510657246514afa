#!/usr/bin/env bash
# Device call 8: the rest of the correctness half at b2f6a1f (dead warpgroups, rotation, causal tail order): compute-sanitizer
# (memcheck, racecheck; both kernels, the 3-consumer one, paged, GPT-2, distributed) and verify.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
GPU_CHECK_BENCH=0 GPU_CHECK_CTEST=0 timeout 590 scripts/gpu-check.sh > $OUT/gpu-check.log 2>&1; echo "gpu-check rc=$?"
grep -E "PASS|FAIL|ERROR|rc=|passed|memcheck|racecheck" $OUT/gpu-check.log | tail -40
