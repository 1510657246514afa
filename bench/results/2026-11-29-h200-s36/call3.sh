#!/usr/bin/env bash
# s36 call 3: branch wip/q8-tc rebased on main (with wip/fuse-kv) and its dequant_q8 rewritten (a 32 x 128 unit through shared memory), the int8 skinny kernel on the tensor
# cores, against main's CUDA-core int8 kernel, same run. Run from a checkout of wip/q8-tc after
# putting main's versions of the files the branch changes in an untracked a-src/ here:
#   d=bench/results/2026-11-29-h200-s36/a-src
#   for f in src/engine/cuda/skinny.cu src/engine/cuda/skinny.h src/engine/cuda/cuda_ops.cpp \
#            src/cuda/ptx.cuh src/engine/q8_weights.h src/engine/q8_weights.cpp; do
#     mkdir -p $d/$(dirname $f); git show main:$f > $d/$f; done
#   OUT=$OUT bash bench/results/2026-11-29-h200-s36/call3.sh
# 1. b's engine GPU tests (the int8 ones: every row count 1-9, f16 and bf16, one chunk / cluster /
#    workspace, N 200 and 72 ending inside a tile) and racecheck of the chained test;
# 2. generate in turn, a / b int8: 1.5B B1, 124M B1 / B4 / B8; dense 1.5B B1 as the anchor.
# Expect: call 1's gains again (1.5B B1 int8 +3-5%, 124M B8 int8 +17%) and 124M B16 int8 back to
# a's rate or better (call 1: 27,017 a / 22,159 b with the 2-byte scatter): the new dequant writes
# what the old one did, 16 bytes at a time.
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
A=bench/results/2026-11-29-h200-s36/a-src
[ -f $A/src/engine/cuda/skinny.cu ] || { echo "no $A: see the header"; exit 1; }
for d in a b; do rm -rf /tmp/$d && mkdir /tmp/$d && tar c --exclude='./build*' --exclude=./.git . | tar x -C /tmp/$d; done
cp -r $A/src /tmp/a/ && rm -rf /tmp/a/$A
echo "a differs from b in: $(cd /tmp && diff -rq a/src b/src | wc -l) files (want 6)"
for d in a b; do
  t=gpuattn_cli; [ $d = b ] && t="gpuattn_cli gpuattn_cuda_tests"
  (cd /tmp/$d && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null &&
   cmake --build build -j16 --target $t > $OUT/build-$d.log 2>&1; echo "build $d rc $?") &
done; wait; ts "builds done"
T=/tmp/b/build/tests/gpuattn_cuda_tests
timeout 150 $T --gtest_filter='Gpt2EngineCuda.*' > $OUT/engine-tests.log 2>&1; ts "b engine tests rc $?"
grep -E "^\[ +(OK|FAILED) |PASSED|FAILED" $OUT/engine-tests.log; grep -A3 "Failure" $OUT/engine-tests.log | head -16
timeout 90 compute-sanitizer --tool racecheck $T --gtest_filter='Gpt2EngineCuda.SkinnyLinearsChained*' > $OUT/racecheck.log 2>&1
ts "racecheck rc $?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $OUT/racecheck.log | tail -2
timeout 90 compute-sanitizer --tool memcheck $T --gtest_filter='Gpt2EngineCuda.Int8LinearsMatchTheFp64Reference:Gpt2EngineCuda.AttnInputScattersAsTheUnfusedOps' > $OUT/memcheck.log 2>&1
ts "memcheck rc $?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log | tail -2
run() {  # label build weights args...
  local label=$1 d=$2 lw=$3; shift 3
  timeout 120 /tmp/$d/build/tools/gpuattn generate --random "$@" --linear-weights $lw > $OUT/gen.tmp 2>&1
  echo "$label $d $lw: rc $? $(tail -1 $OUT/gen.tmp)"
}
for round in 1 2; do
  for d in a b; do
    run 1558m-B1 $d int8 1558m --batch 1 --prompt-len 16 --max-new 32
    run 124m-B1 $d int8 124m --batch 1 --prompt-len 16 --max-new 128
    run 124m-B8 $d int8 124m --batch 8 --prompt-len 16 --max-new 128
  done
done 2>&1 | tee $OUT/gen-ab.txt
run 124m-B4 b int8 124m --batch 4 --prompt-len 16 --max-new 128 | tee -a $OUT/gen-ab.txt
# 16 rows: every decode linear dequantizes W for cuBLASLt; b's dequant_q8 scatters 2-byte stores
# from the fragment order (a's wrote 16-byte rows): the cost of the new order above 8 rows.
for r in 1 2; do for d in a b; do run 124m-B16 $d int8 124m --batch 16 --prompt-len 16 --max-new 128; done; done | tee -a $OUT/gen-ab.txt
run 1558m-B1 b dense 1558m --batch 1 --prompt-len 16 --max-new 32 | tee -a $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts "generate A/B done"
