#!/usr/bin/env bash
# Session 50, call 6: call 5's FP8 suite and sanitizers ran out of time beside the module's build
# (only KernelMatchesTheReference finished, passing; memcheck and racecheck had reached the forced
# 3-consumer pass of the D64 test with no error). The D64 kernel test and the random FP8 test on
# carry s50f alone, racecheck of the D64 test beside them.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s50/call6.sh   (run with carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
mkdir -p /tmp/s50f && tar xJf carry/s50f.tar.xz -C /tmp/s50f --strip-components 1 || { echo "no carry"; exit 1; }
T=/tmp/s50f/gpuattn_cuda_tests
SAN=$(ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
F=Fp8AttentionCuda.KernelMatchesTheReferenceAtHeadDim64
timeout 120 $SAN --tool racecheck --error-exitcode 9 $T --gtest_brief=1 --gtest_filter=$F > $OUT/racecheck.txt 2>&1 &
RPID=$!
timeout 100 $T --gtest_filter="$F:Fp8*Random*" > $OUT/fp8-d64.txt 2>&1
echo "fp8 D64 + random rc $? $(grep -E '^\[  (PASSED|FAILED) ' $OUT/fp8-d64.txt | tr '\n' ' ')"
grep -E '^\[ +(OK|FAILED) ' $OUT/fp8-d64.txt
grep -B2 -A12 "Failure" $OUT/fp8-d64.txt | head -30
wait $RPID; echo "racecheck rc $? $(grep -E 'RACECHECK SUMMARY' $OUT/racecheck.txt | tail -1)"
