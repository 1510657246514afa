#!/usr/bin/env bash
# Session 53, call 2: the second half of the correctness check (the compute-sanitizer steps and
# gpuattn verify) at 38a581a, and call 1's failing shards again (a0b6fdd's one-key far-stride FP8
# case on all three paths) with 38a581a's new one-row far-stride 16-bit cases, on both paths.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s53/call2.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
export GPUATTN_COMMIT=38a581a
GPU_CHECK_BENCH=0 GPU_CHECK_CTEST=0 scripts/gpu-check.sh > $OUT/console.log 2>&1
echo "gpu-check rc $?"
grep -E '^== ' $OUT/console.log
grep -E 'ERROR SUMMARY|exit' $OUT/console.log | sort | uniq -c | head -30
T=build-gpu/tests/gpuattn_cuda_tests
F='*far_units*:Fp8AttentionCuda.*'
{
  echo "== sm90 (the dispatch)"; $T --gtest_brief=1 --gtest_filter="$F"; echo "rc $?"
  echo "== sm80"; GPUATTN_KERNEL=sm80 $T --gtest_brief=1 --gtest_filter="$F"; echo "rc $?"
  echo "== fp8 dequantized"; GPUATTN_FP8_KERNEL=0 $T --gtest_brief=1 --gtest_filter='Fp8AttentionCuda.*'; echo "rc $?"
  echo "== memcheck far_units"; compute-sanitizer --tool memcheck --error-exitcode 1 $T --gtest_brief=1 --gtest_filter='*far_units*'; echo "rc $?"
} > $OUT/rerun.log 2>&1
grep -E '^== |^rc |PASSED|FAILED|ERROR SUMMARY' $OUT/rerun.log
