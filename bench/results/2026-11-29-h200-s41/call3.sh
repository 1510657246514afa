#!/usr/bin/env bash
# s41 call 3: s41c (q4_kernel with one LOP3 a register and one shift a word at f16: 36
# conversion instructions a 64-row group, was 60 in s41a / s41b) against int8 in the same binary:
# the int4 tests, ncu's per-kernel summary of B1 decode steps, 124M B1 / B8 and 1.5B B1 rates.
# Expected: 124M B1 int4 within 2% of int8 (s41b: -4 to -6%); 1.5B B1 int4 +8-15% over int8.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s41/call3.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
v=s41c
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
ts start
timeout 150 /tmp/$v/gpuattn_cuda_tests --gtest_filter='Gpt2EngineCuda.*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -2 $OUT/tests.txt | tr '\n' ' ')"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
for w in int4 int8; do
  timeout 100 $NCU --print-summary per-kernel --launch-skip 400 --launch-count 60 -k regex:'q4_kernel|q8_narrow' \
    /tmp/$v/gpuattn generate --random 124m --batch 1 --prompt-len 16 --max-new 24 --warmup 0 \
    --linear-weights $w > $OUT/ncu-$w.txt 2>&1
  ts "ncu $w rc $?"
done
gen() { local label=$1; shift
  timeout 150 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for w in int8 int4; do
    gen "124m-B1-$w" 124m --batch 1 --prompt-len 16 --max-new 256 --linear-weights $w
    gen "124m-B8-$w" 124m --batch 8 --prompt-len 16 --max-new 128 --linear-weights $w
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-ab.txt
for w in int8 int4 int8 int4; do
  gen "1558m-B1-$w" 1558m --batch 1 --prompt-len 16 --max-new 128 --linear-weights $w
done 2>&1 | tee -a $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts done
