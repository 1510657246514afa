#!/usr/bin/env bash
# s34 call 3. Three builds of the skinny kernel, same run, in turn:
#   b0  a2672f5 (wip/skinny-cluster as call 1-2 ran it)
#   v1  HEAD: + the layernorm's one-load form, + the PDL wait predicated on the first pass's weights
#   v2  v1 with chunks of one pass (max_passes 1: more splits, the workspace beyond 8)
# Expected: v1 > b0 at 124M B1 (the weights now really in flight before the wait); at 1.5B (all)
# v2 > v1 if the serial passes (~3.5 us each, bench/gemv_patterns.cu) were the loss.
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mk() { rm -rf $1 && mkdir $1 && git archive $2 | tar x -C $1; }
mk /tmp/b0 a2672f5; mk /tmp/v1 HEAD; mk /tmp/v2 HEAD
sed -i 's/return M <= 4 ? 4 : 2;/return 1;/' /tmp/v2/src/engine/cuda/skinny.cu
grep -c "^  return 1;" /tmp/v2/src/engine/cuda/skinny.cu
for d in b0 v1 v2; do
  t=gpuattn_cli; [ $d = v1 ] && t="gpuattn_cli gpuattn_cuda_tests"
  (cd /tmp/$d && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null &&
   cmake --build build -j16 --target $t > $OUT/build-$d.log 2>&1; echo "build $d rc $?") &
done; wait; ts "builds done"
timeout 150 /tmp/v1/build/tests/gpuattn_cuda_tests --gtest_filter='Gpt2EngineCuda.*' > $OUT/v1-engine-tests.log 2>&1; ts "v1 engine tests rc $?"
grep -E "^\[ +(OK|FAILED) |PASSED|FAILED" $OUT/v1-engine-tests.log; grep -A3 "Failure" $OUT/v1-engine-tests.log | head -12
run() {  # label build mode args...
  local label=$1 d=$2 sk=$3; shift 3
  GPUATTN_SKINNY_GEMM=$sk timeout 90 /tmp/$d/build/tools/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1
  echo "$label $d skinny=$sk: $(tail -1 $OUT/gen.tmp)"
}
for round in 1 2; do
  for d in b0 v1 v2; do
    run 124m-B1 $d 1 124m --batch 1 --prompt-len 16 --max-new 128
    run 124m-B1 $d all 124m --batch 1 --prompt-len 16 --max-new 128
    run 1558m-B1 $d all 1558m --batch 1 --prompt-len 16 --max-new 48
  done
  if [ $round = 1 ]; then
    run 124m-B1 v1 0 124m --batch 1 --prompt-len 16 --max-new 128
    run 1558m-B1 v1 0 1558m --batch 1 --prompt-len 16 --max-new 48
  fi
done 2>&1 | tee $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts "generate A/B done"
for d in v1 v2; do
  GPUATTN_SKINNY_GEMM=all timeout 100 ncu --clock-control none --graph-profiling node --metrics gpu__time_duration.sum \
    --launch-skip 3000 --launch-count 250 --print-summary per-kernel \
    /tmp/$d/build/tools/gpuattn generate --random 1558m --batch 1 --prompt-len 16 --max-new 20 > $OUT/ncu-$d.txt 2>&1
  ts "ncu $d rc $?"
  grep -A4 "skinny_kernel.*Invocations" $OUT/ncu-$d.txt | grep -E "skinny|duration" | sed 's/void engine::<unnamed>:://; s/(engine::<unnamed>::Params)//' | cut -c1-120
done
