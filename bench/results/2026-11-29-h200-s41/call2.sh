#!/usr/bin/env bash
# s41 call 2: why 124M B1 int4 ran at 3,120 tok/s against int8's 4,470 (call 1). ncu's per-kernel
# summary of a few int4 decode steps (s41a) shows which kernels a step launches and their times;
# then s41b (q4_kernel with its rows' loops rolled: 1,750 instructions, was 7,000) against int8.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s41/call2.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in s41a s41b; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
ts "start ncu=$NCU"
for w in int4 int8; do
  timeout 150 $NCU --print-summary per-kernel --launch-skip 400 --launch-count 120 \
    /tmp/s41a/gpuattn generate --random 124m --batch 1 --prompt-len 16 --max-new 24 --warmup 0 \
    --linear-weights $w > $OUT/ncu-$w.txt 2>&1
  ts "ncu $w rc $?"
done
gen() { local label=$1 v=$2; shift 2
  timeout 150 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for w in int8 int4; do
    gen "124m-B1-$w" s41b 124m --batch 1 --prompt-len 16 --max-new 256 --linear-weights $w
  done
done 2>&1 | tee $OUT/gen-ab.txt
timeout 100 /tmp/s41b/gpuattn_cuda_tests --gtest_filter='Gpt2EngineCuda.*Int4*:Gpt2EngineCuda.Quantized*:Gpt2EngineCuda.AttnInput*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -2 $OUT/tests.txt | tr '\n' ' ')"
rm -f $OUT/gen.tmp; ts done
