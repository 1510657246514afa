#!/usr/bin/env bash
# Device call 5: AttentionArgs::counters (caller-owned counters: no memset node in a captured
# call; the engine passes them), the growth path keeping old arrays, and the traps on a counter
# that was not zero. Build; the counter and decode suites, the engine's CUDA suite, the counters
# test under GPUATTN_KERNEL=sm80 (no counters taken); racecheck on small decodes; GPT-2 124M B1
# generate (engine graphs now without memset nodes) against HF.
set -u
export GPUATTN_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
W=$OUT/work; mkdir -p $W
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null
cmake --build build-gpu -j16 > $W/build.log 2>&1; ts "build rc $?"
T=build-gpu/tests/gpuattn_cuda_tests
F='AttentionCudaTest.*:Decode/*:PagedKvCuda.*:QuantizedKvCuda.*:SeqUsedKCuda.*:Gpt2EngineCuda.*:ShortItems/*'
timeout 120 $T --gtest_filter="$F" --gtest_brief=1 > $W/cuda_tests.log 2>&1; ts "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED) |tests ran|FAILED  |note " $W/cuda_tests.log | tail -8
GPUATTN_KERNEL=sm80 timeout 40 $T --gtest_filter='AttentionCudaTest.Caller*:AttentionCudaTest.Calls*' --gtest_brief=1 > $W/sm80.log 2>&1; ts "sm80 counters tests rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  " $W/sm80.log | tail -3
timeout 60 compute-sanitizer --tool racecheck $T --gtest_filter='Decode/*B1*:AttentionCudaTest.CallsLeave*' --gtest_brief=1 > $W/racecheck.log 2>&1; ts "racecheck rc $?"
grep -E "RACECHECK SUMMARY|PASSED|FAILED" $W/racecheck.log | tail -2
left=$((250 - $(date +%s) + t0))
[ $left -gt 30 ] && timeout $left python3 bench/gpt2_generate.py --gpuattn build-gpu/tools/gpuattn --cases "generate B1" --json $W/gpt2.json > $W/gpt2.log 2>&1; ts "gpt2 rc $?"
tail -6 $W/gpt2.log
tar -C $OUT -czf $OUT/logs.tar.gz work && rm -rf $W
