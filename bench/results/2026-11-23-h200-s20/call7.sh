#!/usr/bin/env bash
# Device call 7: the quantized KV cache's untested GPU paths (nineteenth session's "missing"):
# the new torch test (int8 and float8_e4m3fn caches from torch on the GPU: decode in place, a
# prefill on the dequantized copy, the append against torch's own rounding) with the other Python
# kvcache tests; compute-sanitizer memcheck of every QuantizedKvCuda test and racecheck of the
# in-place decode cases.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null 2>&1
timeout 330 cmake --build build-gpu -j16 --target gpuattn_cuda_tests _C > $OUT/build.log 2>&1; ts "build rc=$?"
tail -2 $OUT/build.log
PYTHONPATH=build-gpu/python timeout 120 python3 -m pytest -q tests/python/test_flash_api.py -k "quantized or torch_cuda or kvcache" > $OUT/pytest.log 2>&1; ts "pytest rc=$?"
tail -4 $OUT/pytest.log
left=$((570 - $(date +%s) + t0))
timeout $((left * 2 / 3)) compute-sanitizer --tool memcheck --error-exitcode 3 build-gpu/tests/gpuattn_cuda_tests --gtest_filter='QuantizedKvCuda.*' > $OUT/memcheck.log 2>&1; ts "memcheck rc=$?"
grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log | tail -3
left=$((575 - $(date +%s) + t0))
timeout $left compute-sanitizer --tool racecheck --error-exitcode 3 build-gpu/tests/gpuattn_cuda_tests --gtest_filter='QuantizedKvCuda.DecodeReads*:QuantizedKvCuda.Unchecked*' > $OUT/racecheck.log 2>&1; ts "racecheck rc=$?"
grep -E "RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED" $OUT/racecheck.log | tail -3
