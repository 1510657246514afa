#!/usr/bin/env bash
# Device call 11: the landed paged kernels with a CUDA case of K and V laid out differently (the 64-bit path at D64/D128); paged KV (block_table). Build; the paged, seqused_k and decode CUDA suites
# (default dispatch and the sm80 copies); memcheck and racecheck of the paged suite; bench/paged_decode.py.
set -u
B=build-gpu
cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
cmake --build $B -j16 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
timeout 200 ctest --test-dir $B -R 'PagedKv|Decode' -j 8 --output-on-failure > $OUT/ctest.log 2>&1
grep -E "tests passed|tests failed|\(Failed\)|Timeout" $OUT/ctest.log | head -20
for tool in memcheck racecheck; do timeout 100 compute-sanitizer --tool $tool --error-exitcode 1 $B/tests/gpuattn_cuda_tests --gtest_filter="PagedKvCuda.*" --gtest_brief=1 > $OUT/$tool.log 2>&1; echo "$tool rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $OUT/$tool.log; done
PYTHONPATH=$B/python timeout 200 python3 bench/paged_decode.py --json $OUT/paged_decode.json 2>&1 | tee $OUT/paged_decode.log
