#!/usr/bin/env bash
# Session 43, call 2: the FP8 kernel's first run. The FP8 suite, then memcheck and racecheck of
# its kernel-path test.
set -u
cd "$(dirname "$0")/../../.." || exit 1
v=${V:-s43b}
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || exit 1
T=/tmp/$v/gpuattn_cuda_tests
timeout 200 $T --gtest_filter='Fp8*:QuantizedKvCuda.*' > $OUT/tests.txt 2>&1
echo "tests rc $?"; grep -E "fp8 |FAILED|Failure|PASSED|error" $OUT/tests.txt | head -60
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [ -n "$SAN" ]; then
  timeout 150 $SAN --tool memcheck --error-exitcode 9 $T --gtest_filter='Fp8AttentionCuda.KernelMatches*' > $OUT/memcheck.txt 2>&1
  echo "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt)"
  timeout 150 $SAN --tool racecheck --error-exitcode 9 $T --gtest_filter='Fp8AttentionCuda.KernelMatches*' > $OUT/racecheck.txt 2>&1
  echo "racecheck rc $? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $OUT/racecheck.txt)"
fi
