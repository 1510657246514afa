#!/usr/bin/env bash
# Session 48, call 4: the FP8 random cases after call 3's two findings were mended in the test
# (varlen draws with no row on one side handed the library host pointers; the dequantized path's
# lse bound of 8e-3 / 1e-3 is 2.5e-2 / 3e-3, from fp8_dequant_lse_sim.py). Call 3's seeds 100-108
# again, then fresh ones, default dispatch and sm80, FP8 cases only, until ~150 s; then the whole
# random set at the default seed. Every failure's first lines go to failures.txt.
#   OUT=$OUT bash bench/results/2026-11-30-h200-s48/call4.sh   (run with carry ["carry"])
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
mkdir -p /tmp/fz4 && tar xJf carry/fz4.tar.xz -C /tmp/fz4 --strip-components 1
T=/tmp/fz4/gpuattn_cuda_tests
summ() { grep -E '^\[  (PASSED|FAILED) ' "$1" | sort -u | tr '\n' ' '; }
s=100
while [ $(($(date +%s)-t0)) -lt 150 ]; do
  for env in "" "GPUATTN_KERNEL=sm80"; do
    f=/tmp/s$s.txt
    GPUATTN_FUZZ_SEED=$s GPUATTN_FUZZ_CASES=80 env $env timeout 100 $T \
      --gtest_filter='Fp8AttentionCuda.RandomCallsMatchTheReference' > $f 2>&1
    rc=$?
    ts "seed $s ${env:-auto} rc $rc $(summ $f)"
    [ $rc != 0 ] && { echo "== seed $s ${env:-auto}"; grep -A7 -E 'Failure' $f | head -60; } >> $OUT/failures.txt
  done
  s=$((s+1))
done
for env in "" "GPUATTN_KERNEL=sm80"; do
  env $env timeout 100 $T --gtest_filter='*Random*' > /tmp/d.txt 2>&1
  rc=$?
  ts "default seed ${env:-auto} rc $rc $(summ /tmp/d.txt)"
  [ $rc != 0 ] && { echo "== default ${env:-auto}"; grep -A7 -E 'Failure' /tmp/d.txt | head -60; } >> $OUT/failures.txt
done
grep '^\[ fp8' /tmp/s100.txt | sort -k7 -g | tail -3
ts done
