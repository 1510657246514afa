#!/usr/bin/env bash
# Session 52, call 9: the FP8 suite at 62a6f67 (the D128 test's varlen grid that stays on 2
# consumers; the register static_assert, no kernel change).
# carry/k5.tar.xz: k5/gpuattn_cuda_tests of 62a6f67 (built locally).
#   OUT=$OUT bash bench/results/2026-11-30-h200-s52/call9.sh
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/k5 && tar xJf carry/k5.tar.xz -C /tmp/k5 --strip-components 1 || { echo "no carry"; exit 1; }
timeout 200 /tmp/k5/gpuattn_cuda_tests --gtest_filter='Fp8*' > $OUT/fp8-suite.txt 2>&1
echo "fp8 suite rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-suite.txt | tr '\n' ' ')"
grep -E 'Failure|FAILED' -A8 $OUT/fp8-suite.txt | head -40
grep -E 'H64kv8_Sq300_Sk300_D(64|128)_varlen' $OUT/fp8-suite.txt | head
