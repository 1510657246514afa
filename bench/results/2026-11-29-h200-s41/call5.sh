#!/usr/bin/env bash
# s41 call 5: s41f (s41d + int4 calls of 9-32 rows as the int4 kernel once per 8 rows, instead
# of dequantizing W for cuBLASLt) with GPUATTN_SKINNY_Q4_CHUNKS=1 (default) against =0.
# Expected: 1.5B B1 int4 +1-2% (its 16-row prefill dequantized all 1.5 B weights, ~3 GB written
# and read back, ~2 ms of a ~130 ms run); 124M B16 int4 +20-60% (every decode step was the
# dequantized path); B32: unknown (4 launches a linear, 2.2 bytes a weight, against 4.6).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s41/call5.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
v=s41f
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
ts start
timeout 200 /tmp/$v/gpuattn_cuda_tests --gtest_filter='Gpt2EngineCuda.*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -2 $OUT/tests.txt | tr '\n' ' ')"
gen() { local label=$1 c=$2; shift 2
  GPUATTN_SKINNY_Q4_CHUNKS=$c timeout 150 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label chunks=$c: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for c in 0 1; do
    gen 124m-B16-int4 $c 124m --batch 16 --prompt-len 16 --max-new 128 --linear-weights int4
    gen 124m-B32-int4 $c 124m --batch 32 --prompt-len 16 --max-new 128 --linear-weights int4
    gen 124m-B1-int4 $c 124m --batch 1 --prompt-len 16 --max-new 256 --linear-weights int4
  done
  gen 124m-B16-int8 1 124m --batch 16 --prompt-len 16 --max-new 128 --linear-weights int8
  gen 124m-B16-dense 1 124m --batch 16 --prompt-len 16 --max-new 128
  ts "round $round"
done 2>&1 | tee $OUT/gen-ab.txt
for c in 0 1 0 1; do
  gen 1558m-B1-int4 $c 1558m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int4
done 2>&1 | tee -a $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts done
