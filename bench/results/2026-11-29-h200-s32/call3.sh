#!/usr/bin/env bash
# s32 call 3: programmatic dependent launch (PDL) for the engine's kernels (embed, layernorm, k/v
# scatter, sampling) and the library's decode kernels (cuda/pdl.h; griddepcontrol.wait at each
# kernel's start). Build; the decode, counter, paged, 8-bit and engine GPU suites and the new
# DecodeCallsWaitForTheKernelAhead (with PDL and with GPUATTN_PDL=0); racecheck and memcheck on
# small decodes; GPT-2 generate tok/s with GPUATTN_PDL=0 (plain launches, as before) and on, in turn.
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null
cmake --build build-gpu -j16 --target gpuattn_cli gpuattn_cuda_tests > $OUT/build.log 2>&1; ts "build rc $?"
T=build-gpu/tests/gpuattn_cuda_tests
F='AttentionCudaTest.*:Decode/*:PagedKvCuda.*:QuantizedKvCuda.*:SeqUsedKCuda.*:Gpt2EngineCuda.*:ShortItems/*:AppendKv*'
timeout 150 $T --gtest_filter="$F" --gtest_brief=1 > $OUT/cuda-tests.log 2>&1; ts "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  |tests ran" $OUT/cuda-tests.log | tail -8
GPUATTN_PDL=0 timeout 40 $T --gtest_filter='AttentionCudaTest.DecodeCalls*:Gpt2EngineCuda.Batched*' --gtest_brief=1 > $OUT/nopdl-tests.log 2>&1; ts "PDL=0 tests rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  " $OUT/nopdl-tests.log | tail -3
timeout 90 compute-sanitizer --tool racecheck $T --gtest_filter='Decode/*B1*:Gpt2EngineCuda.Batched*' --gtest_brief=1 > $OUT/racecheck.log 2>&1; ts "racecheck rc $?"
grep -E "RACECHECK SUMMARY|PASSED|FAILED" $OUT/racecheck.log | tail -2
timeout 90 compute-sanitizer --tool memcheck $T --gtest_filter='AttentionCudaTest.DecodeCalls*:Gpt2EngineCuda.Batched*' --gtest_brief=1 > $OUT/memcheck.log 2>&1; ts "memcheck rc $?"
grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log | tail -2
G=build-gpu/tools/gpuattn
run() {  # label pdl args...
  local label=$1 pdl=$2; shift 2
  GPUATTN_PDL=$pdl timeout 90 $G generate --random "$@" > $OUT/gen.tmp 2>&1
  echo "$label pdl=$pdl: $(tail -1 $OUT/gen.tmp)"
}
for round in 1 2 3; do
  for pdl in 0 1; do
    run B1 $pdl 124m --batch 1 --prompt-len 16 --max-new 128
    run B32 $pdl 124m --batch 32 --prompt-len 512 --max-new 128
    [ $round -le 2 ] && run B128 $pdl 124m --batch 128 --prompt-len 512 --max-new 128
  done
done 2>&1 | tee $OUT/gen-ab.txt
ts "generate A/B done"
left=$((540 - $(date +%s) + t0))
if [ $left -gt 100 ]; then
  for pdl in 0 1; do run 1558m-B1 $pdl 1558m --batch 1 --prompt-len 16 --max-new 64; done 2>&1 | tee -a $OUT/gen-ab.txt
fi
ts "done"
rm -f $OUT/gen.tmp
