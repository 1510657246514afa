#!/usr/bin/env bash
# s35 call 5: the int8 kernel at 8 rows (skinny_kernel<T, 8, true>: each weight scaled as it is
# converted, 127 registers, no spills) in one launch at 5-8 rows, against two launches of the
# 4-row kernel (a = dae85d6's skinny.cu / skinny.h / cuda_ops.cpp, copied in a-src/, untracked);
# and upload_weights on the engine's stream. b = the working tree.
# Expect 124M B8 int8 well above call 1's 9,966-9,991 (one read of W instead of two, the 8-row
# FMAs), still below dense's 18,097-18,133; B1/B4 and 1.5B B1 unchanged.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s35/call5.sh
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for d in a b; do rm -rf /tmp/$d && mkdir /tmp/$d && tar c --exclude='./build*' --exclude=./.git . | tar x -C /tmp/$d; done
A=bench/results/2026-11-29-h200-s35/a-src
cp $A/skinny.cu $A/skinny.h $A/cuda_ops.cpp /tmp/a/src/engine/cuda/
for d in a b; do
  t=gpuattn_cli; [ $d = b ] && t="gpuattn_cli gpuattn_cuda_tests"
  (cd /tmp/$d && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null &&
   cmake --build build -j16 --target $t > $OUT/build-$d.log 2>&1; echo "build $d rc $?") &
done; wait; ts "builds done"
T=/tmp/b/build/tests/gpuattn_cuda_tests
timeout 120 $T --gtest_filter='Gpt2EngineCuda.*' > $OUT/engine-tests.log 2>&1; ts "b engine tests rc $?"
grep -E "^\[ +(OK|FAILED) |PASSED|FAILED" $OUT/engine-tests.log; grep -A3 "Failure" $OUT/engine-tests.log | head -16
timeout 90 compute-sanitizer --tool racecheck $T --gtest_filter='Gpt2EngineCuda.SkinnyLinearsChained*' > $OUT/racecheck.log 2>&1
ts "racecheck rc $?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $OUT/racecheck.log | tail -2
run() {  # label build weights args...
  local label=$1 d=$2 lw=$3; shift 3
  timeout 120 /tmp/$d/build/tools/gpuattn generate --random "$@" --linear-weights $lw > $OUT/gen.tmp 2>&1
  echo "$label $d $lw: rc $? $(tail -1 $OUT/gen.tmp)"
}
for round in 1 2; do
  for d in a b; do
    run 124m-B8 $d int8 124m --batch 8 --prompt-len 16 --max-new 128
    run 124m-B6 $d int8 124m --batch 6 --prompt-len 16 --max-new 128
  done
done 2>&1 | tee $OUT/gen-ab.txt
run 124m-B8 b dense 124m --batch 8 --prompt-len 16 --max-new 128 | tee -a $OUT/gen-ab.txt
run 124m-B1 b int8 124m --batch 1 --prompt-len 16 --max-new 128 | tee -a $OUT/gen-ab.txt
run 1558m-B1 b int8 1558m --batch 1 --prompt-len 16 --max-new 32 | tee -a $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts "generate A/B done"
