#!/usr/bin/env bash
# Session 48, call 3: the random-case tests of the paged cache and the FP8 path
# (PagedKvCuda.RandomCallsMatchReference, Fp8AttentionCuda.RandomCallsMatchTheReference) with the
# call-2 ones again (their inputs' seeds now FuzzRun::case_seed). Binary built on the CPU machine
# for sm_90a and carried (carry/fz3.tar.xz). The default seed under the default dispatch and sm80,
# then fresh seeds (paged 120 cases, FP8 80) in turn until ~200 s have passed.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s48/call3.sh   (run with carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p /tmp/fz3 && tar xJf carry/fz3.tar.xz -C /tmp/fz3 --strip-components 1
T=/tmp/fz3/gpuattn_cuda_tests
summ() { grep -E '^\[  (PASSED|FAILED) |random case [0-9]+ \(replay' "$1" | sort -u | head -12 | tr '\n' ' '; }
for env in "" "GPUATTN_KERNEL=sm80"; do
  e=${env#GPUATTN_KERNEL=}; f=$OUT/default-${e:-auto}.txt
  env $env timeout 150 $T --gtest_filter='*Random*' > $f 2>&1
  ts "default seed ${env:-auto} rc $? $(summ $f)"
done
s=100
while [ $(($(date +%s)-t0)) -lt 200 ]; do
  for env in "" "GPUATTN_KERNEL=sm80"; do
    e=${env#GPUATTN_KERNEL=}; e=${e:-auto}; f=/tmp/seed$s-$e.txt
    GPUATTN_FUZZ_SEED=$s GPUATTN_FUZZ_CASES=120 env $env timeout 100 $T \
      --gtest_filter='PagedKvCuda.RandomCallsMatchReference' > $f 2>&1
    rc=$?
    GPUATTN_FUZZ_SEED=$s GPUATTN_FUZZ_CASES=80 env $env timeout 100 $T \
      --gtest_filter='Fp8AttentionCuda.RandomCallsMatchTheReference' >> $f 2>&1
    rc2=$?
    ts "seed $s ${env:-auto} rc $rc/$rc2 $(summ $f)"
    if [ $rc != 0 ] || [ $rc2 != 0 ]; then
      n=$(ls $OUT | wc -l); [ $n -lt 7 ] && grep -v -E '^\[ (checked|fp8 )' $f | head -300 > $OUT/fail-seed$s-$e.txt
    fi
  done
  s=$((s+1))
done
ts done
