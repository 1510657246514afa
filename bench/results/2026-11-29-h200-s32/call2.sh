#!/usr/bin/env bash
# s32 call 2: engine GEMMs tuned per shape (gemm.cu: up to 128 rows, the heuristic's first 12 timed
# on the call's operands with L2 flushed, the fastest kept). Engine CUDA tests; generate tok/s with
# GPUATTN_GEMM_TUNE=0 (the heuristic's first, as before) and on, in turn; the tuning log at B1;
# each kernel's duration at B1 with tuning (ncu).
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null
cmake --build build-gpu -j16 --target gpuattn_cli gpuattn_cuda_tests > $OUT/build.log 2>&1; ts "build rc $?"
T=build-gpu/tests/gpuattn_cuda_tests
timeout 120 $T --gtest_filter='Gpt2EngineCuda.*' --gtest_brief=1 > $OUT/engine-tests.log 2>&1; ts "engine tests rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  " $OUT/engine-tests.log | tail -5
G=build-gpu/tools/gpuattn
GPUATTN_GEMM_TUNE=log timeout 60 $G generate --random 124m --batch 1 --prompt-len 16 --max-new 32 > $OUT/tune-log-b1.txt 2>&1
ts "tune log rc $?"; grep "candidate .* of" $OUT/tune-log-b1.txt
run() {  # label tune args...
  local label=$1 tune=$2; shift 2
  GPUATTN_GEMM_TUNE=$tune timeout 90 $G generate --random "$@" > $OUT/gen.tmp 2>&1
  echo "$label tune=$tune: $(tail -1 $OUT/gen.tmp)"
}
for round in 1 2; do
  for tune in 0 1; do
    run B1 $tune 124m --batch 1 --prompt-len 16 --max-new 128
    run B32 $tune 124m --batch 32 --prompt-len 512 --max-new 128
    run B128 $tune 124m --batch 128 --prompt-len 512 --max-new 128
    run 1558m-B1 $tune 1558m --batch 1 --prompt-len 16 --max-new 64
  done
done 2>&1 | tee $OUT/gen-ab.txt
ts "generate A/B done"
left=$((560 - $(date +%s) + t0))
[ $left -gt 30 ] && timeout $left ncu --metrics gpu__time_duration.sum --csv --print-units base \
  $G generate --random 124m --batch 1 --prompt-len 16 --max-new 4 --warmup 0 > $OUT/ncu-b1-tuned.csv 2> $OUT/ncu.err
ts "ncu rc $?"
rm -f $OUT/gen.tmp
