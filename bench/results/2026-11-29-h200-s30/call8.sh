#!/usr/bin/env bash
# s30 call 8: the decode suites at HEAD, with the new case of 47 splits (between 32 and 64: the
# merge's lanes take a second split where one exists), on both dispatches (auto and forced sm80),
# and the determinism test (its decode case).
set -u
cd "$(dirname "$0")/../../.."
W=$OUT/work; mkdir -p $W
t0=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON \
  -DGPUATTN_BUILD_TOOLS=OFF > /dev/null && cmake --build build-gpu -j16 --target gpuattn_cuda_tests > $W/build.log 2>&1
echo "build rc $? in $(( $(date +%s) - t0 )) s"
F='Decode/*:PagedKvCuda.*:QuantizedKvCuda.*:SeqUsedKCuda.*:AttentionCudaTest.SameInputsGiveBitwiseIdenticalOutputs'
build-gpu/tests/gpuattn_cuda_tests --gtest_filter="$F" > $W/cuda_tests.log 2>&1
echo "auto rc $?"; grep -E "^\[  (PASSED|FAILED) |12000" $W/cuda_tests.log | tail -4
GPUATTN_KERNEL=sm80 build-gpu/tests/gpuattn_cuda_tests --gtest_filter='Decode/*' > $W/cuda_tests_sm80.log 2>&1
echo "sm80 rc $?"; grep -E "^\[  (PASSED|FAILED) " $W/cuda_tests_sm80.log | tail -2
timeout 60 compute-sanitizer --tool racecheck build-gpu/tests/gpuattn_cuda_tests --gtest_filter='Decode/*12000*' > $W/racecheck.log 2>&1
echo "racecheck rc $?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/racecheck.log | tail -2
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
