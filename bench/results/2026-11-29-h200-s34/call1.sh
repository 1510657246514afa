#!/usr/bin/env bash
# Written at the end of s33 for the next session's first device call (not run yet). The branch
# wip/skinny-cluster (d14363f, never on a GPU): the skinny kernel's chunks of up to 4 passes (the
# grid within one wave) and split-K partners reduced in a thread-block cluster through distributed
# shared memory. Built from `git archive` into /tmp/br:
#  1. its engine GPU tests (the kernel forced at 1-8 rows: one chunk, cluster and workspace
#     paths) and racecheck / memcheck on the kernel test;
#  2. generate in turn: main's policy (=1), the branch's kernel everywhere (=all), cuBLASLt (=0);
#     124M B1 / B4 / B8 and 1.5B B1;
#  3. ncu per-kernel durations of one 1.5B B1 step with the branch's kernel everywhere (call 3's
#     cuBLASLt figures are in call3/ncu-cublaslt-1558m-B1.txt).
# Expected: 1.5B B1 from ~465 toward 600+ if the waves and the global split-K tail were the loss
# (c_attn / fc / mlp proj at >= 3 TB/s: 5-7 us against cuBLASLt's 8.5-13 us).
#   git rev-parse --short=12 HEAD > .commit; run with carry [".commit"]:
#   OUT=$OUT bash bench/results/2026-11-29-h200-s33/next-call.sh
set -u
cd "$(dirname "$0")/../../.."
export GPUATTN_COMMIT=$(cat .commit)
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
# The branch as a patch on main (skinny-cluster.patch = git diff f57d4af wip/skinny-cluster), so
# the call does not depend on the branch's ref travelling with the checkout.
rm -rf /tmp/br && mkdir /tmp/br && git archive HEAD | tar x -C /tmp/br
cd /tmp/br && patch -p1 -s < bench/results/2026-11-29-h200-s33/skinny-cluster.patch; ts "patch rc $?"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DGPUATTN_CUDA=ON > /dev/null
cmake --build build -j16 --target gpuattn_cli gpuattn_cuda_tests > $OUT/build.log 2>&1; ts "build rc $?"
T=build/tests/gpuattn_cuda_tests
timeout 100 $T --gtest_filter='Gpt2EngineCuda.*' > $OUT/engine-tests.log 2>&1; ts "engine tests rc $?"
grep -E "^\[ +(OK|FAILED) " $OUT/engine-tests.log; grep -A2 "Failure" $OUT/engine-tests.log | head -12
G=build/tools/gpuattn
run() {  # label mode args...
  local label=$1 sk=$2; shift 2
  GPUATTN_SKINNY_GEMM=$sk timeout 90 $G generate --random "$@" > $OUT/gen.tmp 2>&1
  echo "$label skinny=$sk: $(tail -1 $OUT/gen.tmp)"
}
for round in 1 2; do
  for sk in 1 all 0; do
    run B1 $sk 124m --batch 1 --prompt-len 16 --max-new 128
    run B4 $sk 124m --batch 4 --prompt-len 16 --max-new 128
    run B8 $sk 124m --batch 8 --prompt-len 16 --max-new 128
    run 1558m-B1 $sk 1558m --batch 1 --prompt-len 16 --max-new 64
  done
done 2>&1 | tee $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts "generate A/B done"
GPUATTN_SKINNY_GEMM=all timeout 150 ncu --clock-control none --graph-profiling node --metrics gpu__time_duration.sum \
  --launch-skip 3000 --launch-count 500 --print-summary per-kernel \
  $G generate --random 1558m --batch 1 --prompt-len 16 --max-new 24 > $OUT/ncu-all.txt 2>&1
ts "ncu rc $?"; grep -A3 "skinny" $OUT/ncu-all.txt | grep -E "skinny|duration" | cut -c1-160 | head -12
timeout 120 compute-sanitizer --tool racecheck $T --gtest_filter='Gpt2EngineCuda.Skinny*' --gtest_brief=1 > $OUT/racecheck.log 2>&1; ts "racecheck rc $?"
grep -E "RACECHECK SUMMARY|PASSED|FAILED" $OUT/racecheck.log | tail -2
