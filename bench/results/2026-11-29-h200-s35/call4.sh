#!/usr/bin/env bash
# s35 call 4: the int8 kernel in 128-column slices (kColsQ8: 16 threads a 128-byte row segment,
# 256-row passes), from call 3's probe (q128 v8 l16 4.3-6.5 us against the engine's q64 v8 l16
# 4.7-7.2 on 1.5B's linears). a = b0322b5 (64 columns; its skinny.cu as a-skinny.cu, untracked),
# b = the working tree. Expect 1.5B B1 int8 ~+7% over a's ~500 tok/s; 124M about unchanged.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s35/call4.sh
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for d in a b; do rm -rf /tmp/$d && mkdir /tmp/$d && tar c --exclude='./build*' --exclude=./.git . | tar x -C /tmp/$d; done
cp bench/results/2026-11-29-h200-s35/a-skinny.cu /tmp/a/src/engine/cuda/skinny.cu
for d in a b; do
  t=gpuattn_cli; [ $d = b ] && t="gpuattn_cli gpuattn_cuda_tests"
  (cd /tmp/$d && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null &&
   cmake --build build -j16 --target $t > $OUT/build-$d.log 2>&1; echo "build $d rc $?") &
done; wait; ts "builds done"
T=/tmp/b/build/tests/gpuattn_cuda_tests
timeout 120 $T --gtest_filter='Gpt2EngineCuda.*' > $OUT/engine-tests.log 2>&1; ts "b engine tests rc $?"
grep -E "^\[ +(OK|FAILED) |PASSED|FAILED" $OUT/engine-tests.log; grep -A3 "Failure" $OUT/engine-tests.log | head -16
timeout 120 compute-sanitizer --tool racecheck $T --gtest_filter='Gpt2EngineCuda.SkinnyLinearsChained*' > $OUT/racecheck.log 2>&1
ts "racecheck rc $?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $OUT/racecheck.log | tail -2
run() {  # label build weights args...
  local label=$1 d=$2 lw=$3; shift 3
  timeout 120 /tmp/$d/build/tools/gpuattn generate --random "$@" --linear-weights $lw > $OUT/gen.tmp 2>&1
  echo "$label $d $lw: rc $? $(tail -1 $OUT/gen.tmp)"
}
for round in 1 2; do
  for d in a b; do
    run 124m-B1 $d int8 124m --batch 1 --prompt-len 16 --max-new 128
    run 124m-B4 $d int8 124m --batch 4 --prompt-len 16 --max-new 128
    run 1558m-B1 $d int8 1558m --batch 1 --prompt-len 16 --max-new 32
  done
done 2>&1 | tee $OUT/gen-ab.txt
run 1558m-B1 b dense 1558m --batch 1 --prompt-len 16 --max-new 32 | tee -a $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts "generate A/B done"
timeout 100 ncu --clock-control none --graph-profiling node --metrics gpu__time_duration.sum \
  --launch-skip 3000 --launch-count 250 --print-summary per-kernel \
  /tmp/b/build/tools/gpuattn generate --random 1558m --batch 1 --prompt-len 16 --max-new 20 --linear-weights int8 > $OUT/ncu-int8.txt 2>&1
ts "ncu rc $?"; grep -A4 "Invocations" $OUT/ncu-int8.txt | grep -E "Invocations|duration" | cut -c1-140 | head -30
