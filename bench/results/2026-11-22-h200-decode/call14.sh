#!/usr/bin/env bash
# Device call 14: seqused_k (cache_seqlens) on the decode path: its CUDA tests, the decode suite,
# the Python suite (flash_attn_with_kvcache), on the default dispatch and under sm80; memcheck and
# racecheck of the seqused_k tests.
set -u
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build $B -j16 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
timeout 300 ctest --test-dir $B -R 'SeqUsedK|Decode|python.pytest|CapturedInACudaGraph|SameInputs|AwkwardLengths|SeqlenMismatch|Varlen/AttentionCuda' -j 8 --output-on-failure > $OUT/ctest.log 2>&1
grep -E "tests passed|tests failed|\(Failed\)|Timeout" $OUT/ctest.log | head -20
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 1 $B/tests/gpuattn_cuda_tests --gtest_filter='SeqUsedKCuda.*' --gtest_brief=1 > $OUT/$tool.log 2>&1; echo "$tool rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/$tool.log
done
