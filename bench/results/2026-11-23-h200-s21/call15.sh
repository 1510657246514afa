#!/usr/bin/env bash
# Device call 15: the QuantizedKvCuda suite after its arguments moved into one helper.
set -u
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON -DGPUATTN_PYTHON=OFF > /dev/null 2>&1
timeout 150 cmake --build build-gpu --target gpuattn_cuda_tests -j16 > $OUT/build.log 2>&1; ts "build rc=$?"
timeout 40 build-gpu/tests/gpuattn_cuda_tests --gtest_filter='*QuantizedKvCuda*' --gtest_brief=1 > $OUT/test.log 2>&1; ts "test rc=$?"
tail -4 $OUT/test.log
