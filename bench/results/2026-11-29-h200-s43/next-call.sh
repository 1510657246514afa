#!/usr/bin/env bash
# For the next session's first device call (s43's device time was spent before these ran): the
# review mends at s43's HEAD, compiled here only. The FP8 suite (its 3 new cases of more items
# than SMs and the broadcast K/V test, which also runs the 16-bit path with expanded K/V heads and
# batches through strides_fit_tma), then the whole GPU suite, then memcheck of the FP8 kernel
# cases (the kernel's maps now come before its transpose launch). Build here first:
#   CARRY_BUILD_DIR=build-s38 scripts/carry-build.sh s44a gpuattn_cuda_tests
# then run with carry ["carry"]:
#   OUT=$OUT bash bench/results/2026-11-29-h200-s43/next-call.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
v=${V:-s44a}
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
T=/tmp/$v/gpuattn_cuda_tests
timeout 200 $T --gtest_filter='Fp8*' > $OUT/fp8.txt 2>&1
echo "fp8 rc $? $(grep -E '^\[  (PASSED|FAILED)' $OUT/fp8.txt | tr '\n' ' ')"
grep -E "fp8 |Failure" -A3 $OUT/fp8.txt | head -60
timeout 330 $T --gtest_brief=1 > $OUT/suite.txt 2>&1
echo "suite rc $? $(tail -2 $OUT/suite.txt | tr '\n' ' ')"
grep -B2 -A10 "Failure" $OUT/suite.txt | head -40
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
timeout 200 $SAN --tool memcheck --error-exitcode 9 $T --gtest_filter='Fp8AttentionCuda.KernelMatches*' > $OUT/memcheck.txt 2>&1
echo "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt)"
