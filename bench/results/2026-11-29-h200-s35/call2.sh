#!/usr/bin/env bash
# s35 call 2: wip/q8-cuda + the cluster-fit fix in skinny_plan (clusters of a slice's splits are
# sized so that all of them fit at once, cudaOccupancyMaxActiveClusters).
# Hypothesis from call 1's ncu: 1.5B int8 c_attn (75 clusters of 7) and c_fc (100 of 5) at
# 15-16 us ran a second wave (a cluster lives in one GPC). Expect both to drop toward ~8 us, the
# 1.5B B1 int8 step from 408 tok/s to ~520+; 124M unchanged (its clusters fit).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s35/call2.sh
set -u
cd "$(dirname "$0")/../../.."
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
rm -rf /tmp/b && mkdir /tmp/b && tar c --exclude='./build*' --exclude=./.git . | tar x -C /tmp/b
cd /tmp/b
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null
cmake --build build -j16 --target gpuattn_cli gpuattn_cuda_tests > $OUT/build.log 2>&1; ts "build rc $?"
timeout 120 build/tests/gpuattn_cuda_tests --gtest_filter='Gpt2EngineCuda.*' > $OUT/engine-tests.log 2>&1; ts "engine tests rc $?"
grep -E "^\[ +(OK|FAILED) |PASSED|FAILED" $OUT/engine-tests.log; grep -A3 "Failure" $OUT/engine-tests.log | head -16
run() {  # label skinny weights args...
  local label=$1 sk=$2 lw=$3; shift 3
  GPUATTN_SKINNY_GEMM=$sk timeout 120 build/tools/gpuattn generate --random "$@" --linear-weights $lw > $OUT/gen.tmp 2>&1
  echo "$label skinny=$sk $lw: rc $? $(tail -1 $OUT/gen.tmp)"
}
for round in 1 2; do
  run 124m-B1 1 dense 124m --batch 1 --prompt-len 16 --max-new 128
  run 124m-B1 1 int8 124m --batch 1 --prompt-len 16 --max-new 128
  run 124m-B4 1 int8 124m --batch 4 --prompt-len 16 --max-new 128
done 2>&1 | tee $OUT/gen-ab.txt
for a in "1 dense" "1 int8" "all dense"; do run 1558m-B1 $a 1558m --batch 1 --prompt-len 16 --max-new 32; done 2>&1 | tee -a $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts "generate A/B done"
timeout 100 ncu --clock-control none --graph-profiling node --metrics gpu__time_duration.sum \
  --launch-skip 3000 --launch-count 250 --print-summary per-kernel \
  build/tools/gpuattn generate --random 1558m --batch 1 --prompt-len 16 --max-new 20 --linear-weights int8 > $OUT/ncu-int8.txt 2>&1
ts "ncu rc $?"; grep -A4 "Invocations" $OUT/ncu-int8.txt | grep -E "Invocations|duration" | cut -c1-140 | head -30
timeout 120 ncu --clock-control none --graph-profiling node -k regex:skinny --launch-skip 400 --launch-count 4 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats \
  build/tools/gpuattn generate --random 1558m --batch 1 --prompt-len 16 --max-new 8 --linear-weights int8 > $OUT/ncu-detail.txt 2>&1
ts "ncu detail rc $?"; grep -E "skinny_kernel|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Waves Per SM|Registers Per|Cluster" $OUT/ncu-detail.txt | cut -c1-120 | head -60
