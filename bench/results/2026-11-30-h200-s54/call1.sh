#!/usr/bin/env bash
# Session 54, call 1: s53's prepared check of the FP8 3-consumer rule's short-call exclusions, a
# case a process (next-call-3c-short-cases.sh, main's probe from carry/ab10.tar.xz), then a build at
# 5af1e67 and the tests its host-only mend of make_fwd_params and fwd_fp8 touches, on every path:
# the far_units cases, the FP8 suite (sm_90a, sm80, dequantized), the validation tests.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s54/call1.sh      carry ["carry/ab10.tar.xz"]
set -u
cd "$(dirname "$0")/../../.." || exit 1
S53=bench/results/2026-11-30-h200-s53
OUT=$OUT bash $S53/next-call-3c-short-cases.sh > $OUT/ab-console.txt 2>&1
grep -E '^==|ratio|B/A|geo' $OUT/ab-console.txt | head -40
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DGPUATTN_CUDA=ON > $OUT/build.log 2>&1 && cmake --build build-gpu -j16 >> $OUT/build.log 2>&1
echo "build rc $?"; tail -3 $OUT/build.log
T=build-gpu/tests/gpuattn_cuda_tests
F='*far_units*:Fp8AttentionCuda.*'
{
  echo "== sm90 (the dispatch)"; $T --gtest_brief=1 --gtest_filter="$F"; echo "rc $?"
  echo "== sm80"; GPUATTN_KERNEL=sm80 $T --gtest_brief=1 --gtest_filter="$F"; echo "rc $?"
  echo "== fp8 dequantized"; GPUATTN_FP8_KERNEL=0 $T --gtest_brief=1 --gtest_filter='Fp8AttentionCuda.*'; echo "rc $?"
  echo "== cpu validation"; build-gpu/tests/gpuattn_tests --gtest_brief=1 --gtest_filter='Validation.*'; echo "rc $?"
} > $OUT/tests.log 2>&1
grep -E '^== |^rc |PASSED|FAILED' $OUT/tests.log
