#!/usr/bin/env bash
# s35 call 1 (written at the end of s34): int8 linears on CUDA (branch wip/q8-cuda, as
# q8-cuda.patch, `git diff main wip/q8-cuda -- . ":!bench/results"`). Never on a GPU: tests before timing.
#  1. the engine's GPU tests, the two new ones included (Int8LinearsMatchTheFp64Reference: the
#     int8 kernel at 1-4 rows over one chunk / cluster / workspace, the dequantize-then-cuBLASLt
#     path at 5 and 9 rows; Int8LinearsMatchTheFp64ReferenceOfTheModelTheyRun: the engine);
#  2. generate, dense against int8, in turn: 124M B1 / B4 / B8, 1.5B B1;
#  3. ncu per-kernel durations of one 1.5B B1 int8 step.
# Expected: the int8 kernel reads half the bytes; 1.5B's linears from 6.4-13 us (cuBLASLt) to
# ~4-6 us if the one-pass kernel gets near the plain-read figures of tools/gemv_probe.cu for
# half-size matrices; 1.5B B1 from ~465 toward 650-750 tok/s. B5-B8 run the kernel twice a
# linear (the second read from L2 where W fits); above 8 rows W is dequantized for cuBLASLt.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s34/next-call-q8.sh
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
rm -rf /tmp/q8 && mkdir /tmp/q8 && tar c --exclude='./build*' --exclude=./.git . | tar x -C /tmp/q8
(cd /tmp/q8 && patch -p1 -s < bench/results/2026-11-29-h200-s34/q8-cuda.patch); ts "patch rc $?"
cd /tmp/q8
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null
cmake --build build -j16 --target gpuattn_cli gpuattn_cuda_tests > $OUT/build.log 2>&1; ts "build rc $?"
timeout 180 build/tests/gpuattn_cuda_tests --gtest_filter='Gpt2EngineCuda.*' > $OUT/engine-tests.log 2>&1; ts "engine tests rc $?"
grep -E "^\[ +(OK|FAILED) |PASSED|FAILED" $OUT/engine-tests.log; grep -A3 "Failure" $OUT/engine-tests.log | head -16
timeout 240 compute-sanitizer --tool racecheck build/tests/gpuattn_cuda_tests --gtest_filter='Gpt2EngineCuda.SkinnyLinearsChained*' > $OUT/racecheck.log 2>&1
ts "racecheck rc $?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $OUT/racecheck.log | tail -2
run() {  # label weights args...
  local label=$1 lw=$2; shift 2
  timeout 120 build/tools/gpuattn generate --random "$@" --linear-weights $lw > $OUT/gen.tmp 2>&1
  echo "$label $lw: rc $? $(tail -1 $OUT/gen.tmp)"
}
for round in 1 2; do
  for lw in dense int8; do
    run 124m-B1 $lw 124m --batch 1 --prompt-len 16 --max-new 128
    run 124m-B4 $lw 124m --batch 4 --prompt-len 16 --max-new 128
    run 124m-B8 $lw 124m --batch 8 --prompt-len 16 --max-new 128
  done
done 2>&1 | tee $OUT/gen-ab.txt
for lw in dense int8; do run 1558m-B1 $lw 1558m --batch 1 --prompt-len 16 --max-new 32; done 2>&1 | tee -a $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts "generate A/B done"
timeout 150 ncu --clock-control none --graph-profiling node --metrics gpu__time_duration.sum \
  --launch-skip 3000 --launch-count 250 --print-summary per-kernel \
  build/tools/gpuattn generate --random 1558m --batch 1 --prompt-len 16 --max-new 20 --linear-weights int8 > $OUT/ncu-int8.txt 2>&1
ts "ncu rc $?"; grep -A4 "Invocations" $OUT/ncu-int8.txt | grep -E "Invocations|duration" | cut -c1-140 | head -30
