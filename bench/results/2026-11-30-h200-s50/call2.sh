#!/usr/bin/env bash
# Session 50, call 2: the second half of the correctness check at 7287c84 (the compute-sanitizer
# steps, memcheck-fp8 and racecheck-fp8 new, and gpuattn verify).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s50/call2.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=7287f09
GPU_CHECK_BENCH=0 GPU_CHECK_CTEST=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
grep -E '^== ' $OUT/console.log
grep -E 'ERROR SUMMARY|exit' $OUT/console.log | sort | uniq -c | head -30
# Call 1 failed one test in the sm80. copy (KernelMatchesTheReferenceAtHeadDim64 took its path under
# GPUATTN_KERNEL=sm80, then ran the rule's cases with it unset); the mended test under both envs:
for k in sm80 auto; do
  GPUATTN_KERNEL=$k build-gpu/tests/gpuattn_cuda_tests \
    --gtest_filter='Fp8AttentionCuda.KernelMatchesTheReferenceAtHeadDim*' > $OUT/fp8-env-$k.log 2>&1
  echo "GPUATTN_KERNEL='$k' rc $?"; grep -E '^\[  (PASSED|FAILED)|Failure' $OUT/fp8-env-$k.log | head
done
