#!/usr/bin/env bash
# s33 call 3: the skinny kernel restructured after call 2 (which was slower than cuBLASLt at 4-8
# rows and for 1.5B: its prologue loads ran in dependent pairs, 4-8 round trips; __ldg weight loads
# were moved below the PDL wait; 288 CTAs at 8 rows made 2 waves). Build; the engine GPU tests;
# generate A/B (GPUATTN_SKINNY_GEMM=0 / on, in turn); ncu per-kernel durations of one 1.5B B1
# decode step both ways.
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null
cmake --build build-gpu -j16 --target gpuattn_cli gpuattn_cuda_tests > $OUT/build.log 2>&1; ts "build rc $?"
T=build-gpu/tests/gpuattn_cuda_tests
timeout 120 $T --gtest_filter='Gpt2EngineCuda.*' > $OUT/engine-tests.log 2>&1; ts "engine tests rc $?"
grep -E "^\[ +(OK|FAILED) " $OUT/engine-tests.log; grep -A2 "Failure" $OUT/engine-tests.log | head -12
G=build-gpu/tools/gpuattn
run() {  # label skinny args...
  local label=$1 sk=$2; shift 2
  GPUATTN_SKINNY_GEMM=$sk timeout 90 $G generate --random "$@" > $OUT/gen.tmp 2>&1
  echo "$label skinny=$sk: $(tail -1 $OUT/gen.tmp)"
}
for round in 1 2 3; do
  for sk in 0 1; do
    run B1 $sk 124m --batch 1 --prompt-len 16 --max-new 128
    run B4 $sk 124m --batch 4 --prompt-len 16 --max-new 128
    run B8 $sk 124m --batch 8 --prompt-len 16 --max-new 128
    run 1558m-B1 $sk 1558m --batch 1 --prompt-len 16 --max-new 64
  done
done 2>&1 | tee $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts "generate A/B done"
for sk in 0 1; do
  GPUATTN_SKINNY_GEMM=$sk timeout 150 ncu --clock-control none --graph-profiling node --metrics gpu__time_duration.sum \
    --launch-skip 3000 --launch-count 500 --print-summary per-kernel \
    $G generate --random 1558m --batch 1 --prompt-len 16 --max-new 24 > $OUT/ncu-$sk.txt 2>&1
  ts "ncu skinny=$sk rc $?"
  grep -E "^  [a-zA-Z_].*\(|gpu__time_duration.sum" $OUT/ncu-$sk.txt | paste - - | awk '{print}' | cut -c1-200 | head -30
done
