#!/usr/bin/env bash
# Written at the end of s34 for the next session's first device call (not run yet).
#   a  main as it is (the skinny kernel with clusters, chunks of up to 4 passes)
#   p1 main with chunks of one pass (max_passes 1: more splits, the workspace beyond 8). In s34
#      call 4 the same one-line change on 67f8cd9's kernel (wip/skinny-lnvec) read 124M B1 at
#      2,844-2,845 tok/s against 2,734-2,800 without it, same run; never tested.
# 1. p1's engine GPU tests; racecheck on the chained test (call 1's racecheck of the whole skinny
#    suite did not finish inside the call: the cluster code has not been through racecheck);
# 2. generate in turn, a / p1 / cuBLASLt: 124M B1 (policy), 1.5B B1 with the kernel everywhere.
# Builds copy the working tree: on the device `git archive HEAD` is not this checkout's HEAD
# (s34 call 3 measured main twice). 1.5B random-weights runs need a timeout >= 90 s.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s34/next-call.sh
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for d in a p1; do rm -rf /tmp/$d && mkdir /tmp/$d && tar c --exclude='./build*' --exclude=./.git . | tar x -C /tmp/$d; done
sed -i 's/return M <= 4 ? 4 : 2;/return 1;/' /tmp/p1/src/engine/cuda/skinny.cu
echo "p1 edits: $(grep -c '^  return 1;' /tmp/p1/src/engine/cuda/skinny.cu) (want 1)"
for d in a p1; do
  t=gpuattn_cli; [ $d = p1 ] && t="gpuattn_cli gpuattn_cuda_tests"
  (cd /tmp/$d && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null &&
   cmake --build build -j16 --target $t > $OUT/build-$d.log 2>&1; echo "build $d rc $?") &
done; wait; ts "builds done"
T=/tmp/p1/build/tests/gpuattn_cuda_tests
timeout 100 $T --gtest_filter='Gpt2EngineCuda.*' > $OUT/p1-engine-tests.log 2>&1; ts "p1 engine tests rc $?"
grep -E "^\[ +(OK|FAILED) |PASSED|FAILED" $OUT/p1-engine-tests.log; grep -A3 "Failure" $OUT/p1-engine-tests.log | head -12
timeout 150 compute-sanitizer --tool racecheck $T --gtest_filter='Gpt2EngineCuda.SkinnyLinearsChained*' > $OUT/racecheck.log 2>&1
ts "racecheck rc $?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $OUT/racecheck.log | tail -2
run() {  # label build mode args...
  local label=$1 d=$2 sk=$3; shift 3
  GPUATTN_SKINNY_GEMM=$sk timeout 120 /tmp/$d/build/tools/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1
  echo "$label $d skinny=$sk: rc $? $(tail -1 $OUT/gen.tmp)"
}
for round in 1 2; do
  for d in a p1; do run 124m-B1 $d 1 124m --batch 1 --prompt-len 16 --max-new 128; done
  run 124m-B1 a 0 124m --batch 1 --prompt-len 16 --max-new 128
done 2>&1 | tee $OUT/gen-ab.txt
for d in a p1; do run 1558m-B1 $d all 1558m --batch 1 --prompt-len 16 --max-new 32; done 2>&1 | tee -a $OUT/gen-ab.txt
run 1558m-B1 a 0 1558m --batch 1 --prompt-len 16 --max-new 32 | tee -a $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts "generate A/B done"
