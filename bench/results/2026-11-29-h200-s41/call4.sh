#!/usr/bin/env bash
# s41 call 4: s41d (q4_kernel's one-row layernorm statistics by the whole CTA, as q8_narrow_kernel)
# and s41e (s41d + unroll2.patch: the group loop unrolled by 2, two groups' HMMA chains
# interleavable) against int8, alternated.
# Expected: d: the two layernorm-fused int4 linears a layer back to int8's time (ncu, call 3:
# 6.83-6.87 against 6.55-6.58 us), 1.5B B1 int4 +1-3% over call 3's 967. e: +0-3% more at 1.5B
# (mlp proj's 12.5 groups a warp are four dependent HMMAs each); s39's int8 form of it lost 8%.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s41/call4.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in s41d s41e; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
ts start
for v in s41d s41e; do
  timeout 120 /tmp/$v/gpuattn_cuda_tests --gtest_filter='Gpt2EngineCuda.*Int4*:Gpt2EngineCuda.Quantized*:Gpt2EngineCuda.AttnInput*' --gtest_brief=1 > $OUT/tests-$v.txt 2>&1
  ts "tests $v rc $? $(tail -2 $OUT/tests-$v.txt | tr '\n' ' ')"
done
gen() { local label=$1 v=$2; shift 2
  timeout 150 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  gen 124m-B1-int8 s41d 124m --batch 1 --prompt-len 16 --max-new 256 --linear-weights int8
  for v in s41d s41e; do
    gen 124m-B1-int4 $v 124m --batch 1 --prompt-len 16 --max-new 256 --linear-weights int4
    gen 124m-B8-int4 $v 124m --batch 8 --prompt-len 16 --max-new 128 --linear-weights int4
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-ab.txt
for round in 1 2; do
  for v in s41d s41e; do
    gen 1558m-B1-int4 $v 1558m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int4
  done
done 2>&1 | tee -a $OUT/gen-ab.txt
gen 1558m-B1-int8 s41d 1558m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int8 | tee -a $OUT/gen-ab.txt
rm -f $OUT/gen.tmp; ts done
