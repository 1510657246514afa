#!/usr/bin/env bash
# s41 call 7: q8_narrow_kernel and q4_kernel sharing stage_tile (s41h; the narrow kernel's SASS
# moved: 1,616 -> 1,600 instructions, registers 47 -> 48, no stack) against main before it (s41m):
# the engine's CUDA suite, and 124M B1 int8 / 1.5B B1 int8 and int4, alternated.
# Expected: within noise (same behaviour by construction).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s41/call7.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in s41m s41h; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
ts start
timeout 100 /tmp/s41h/gpuattn_cuda_tests --gtest_filter='Gpt2EngineCuda.*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "s41h engine tests rc $? $(tail -2 $OUT/tests.txt | tr '\n' ' ')"
gen() { local label=$1 v=$2; shift 2
  timeout 150 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for v in s41m s41h; do
    gen 124m-B1-int8 $v 124m --batch 1 --prompt-len 16 --max-new 256 --linear-weights int8
  done
done 2>&1 | tee $OUT/gen-ab.txt
for v in s41m s41h; do
  gen 1558m-B1-int8 $v 1558m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int8
  gen 1558m-B1-int4 $v 1558m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int4
done 2>&1 | tee -a $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts done
