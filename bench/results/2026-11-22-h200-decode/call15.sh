#!/usr/bin/env bash
# Device call 15: seqused_k on the sm_80 kernel (every call the decode kernel does not take): the
# seqused_k CUDA tests on both dispatches, the Python suite, the sm_80 kernel's own suites
# (whose SASS changed: keys_used), memcheck and racecheck of the seqused_k tests.
set -u
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build $B -j16 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
timeout 330 ctest --test-dir $B -R 'SeqUsedK|python.pytest|^sm80\.(AwkwardLengths|SeqlenMismatch|Varlen|GroupedHeads|SlidingWindow|HeadDim256|LargeLogits|Decode|StridedViews)' -j 8 --output-on-failure > $OUT/ctest.log 2>&1
grep -E "tests passed|tests failed|\(Failed\)|Timeout" $OUT/ctest.log | head -20
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 1 $B/tests/gpuattn_cuda_tests --gtest_filter='SeqUsedKCuda.*' --gtest_brief=1 > $OUT/$tool.log 2>&1; echo "$tool rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/$tool.log
done
