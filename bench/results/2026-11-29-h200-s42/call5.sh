#!/usr/bin/env bash
# s42 call 5: the split greedy sampler limited to one block an SM (s42e: splits = min(8, SMs /
# rows)) against one block a row (s42b). Expected: B128 back to s42b's rate (1 split there; call 4
# lost 1.3% with 8), B1 keeps call 4's +2.6% (8 splits), B32 (4 splits) at least even.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s42/call5.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in s42b s42e; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
T=/tmp/s42e/gpuattn_cuda_tests
ts start
timeout 200 $T --gtest_filter='Gpt2EngineCuda.*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -2 $OUT/tests.txt | tr '\n' ' ')"
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool $T --gtest_filter='Gpt2EngineCuda.SamplingKernel*' --gtest_brief=1 > $OUT/$tool.txt 2>&1
  ts "$tool rc $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/$tool.txt | tail -1)"
done
gen() { local label=$1 v=$2; shift 2
  timeout 100 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v: rc $? $(tail -1 $OUT/gen.tmp)"; }
{
for round in 1 2; do
  for v in s42b s42e; do
    gen 124m-B1-int4-int4head $v 124m --batch 1 --prompt-len 16 --max-new 256 --linear-weights int4 --head-weights int4
    gen 124m-B32-p512 $v 124m --batch 32 --prompt-len 512 --max-new 128
    gen 124m-B128-p512 $v 124m --batch 128 --prompt-len 512 --max-new 128
  done
done
} 2>&1 | tee $OUT/gen-ab.txt
rm -f $OUT/*.tmp; ts done
