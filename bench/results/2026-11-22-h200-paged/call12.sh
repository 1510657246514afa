#!/usr/bin/env bash
# Device call 12: gpuattn::append_kv (flash_attn_with_kvcache(k=, v=)): its CUDA suite against the
# CPU append (dense and paged, checked and captured unchecked), the paged suites, the Python suite;
# memcheck and racecheck of the append suite.
set -u
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build $B -j16 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
timeout 200 ctest --test-dir $B -R 'AppendKv|PagedKv|python.pytest|SeqUsedK' -j 8 --output-on-failure > $OUT/ctest.log 2>&1
grep -E "tests passed|tests failed|\(Failed\)|Timeout" $OUT/ctest.log | head -20
for tool in memcheck racecheck; do timeout 100 compute-sanitizer --tool $tool --error-exitcode 1 $B/tests/gpuattn_cuda_tests --gtest_filter="AppendKvCuda.*" --gtest_brief=1 > $OUT/$tool.log 2>&1; echo "$tool rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/$tool.log; done
