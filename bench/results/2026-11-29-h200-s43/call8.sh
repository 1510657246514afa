#!/usr/bin/env bash
# Session 43, call 8: the whole GPU suite at the FP8 commit's kernels (FwdParams grew: every
# kernel reads it), then memcheck and racecheck of the persistent FP8 kernel's test.
set -u
cd "$(dirname "$0")/../../.." || exit 1
v=${V:-s43h}
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || exit 1
T=/tmp/$v/gpuattn_cuda_tests
timeout 330 $T --gtest_brief=1 > $OUT/tests.txt 2>&1
echo "suite rc $? $(tail -3 $OUT/tests.txt | tr '\n' ' ')"
grep -B2 -A12 "Failure" $OUT/tests.txt | head -40
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck; do
  timeout 120 $SAN --tool $tool --error-exitcode 9 $T --gtest_filter='Fp8AttentionCuda.KernelMatches*' > $OUT/$tool.txt 2>&1
  echo "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1)"
done
