#!/usr/bin/env bash
# s42 call 4: greedy rows sampled over 8 blocks (s42d) against one block a row (s42b, call 2's
# binary; the rest is the same code).
# Expected: the sampler's 8.2 us a B1 step (call 1 trace: one 1024-thread block reads 50,257
# logits) down to ~3 us: 124M B1 +2.5%, 1.5B B1 +0.5%; B8 / B128 at least even.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s42/call4.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in s42b s42d; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
T=/tmp/s42d/gpuattn_cuda_tests L=/tmp/s42d/libgpuattn_kernel_trace.so
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
  for v in s42b s42d; do
    gen 124m-B1-int4-int4head $v 124m --batch 1 --prompt-len 16 --max-new 256 --linear-weights int4 --head-weights int4
    gen 124m-B1-dense $v 124m --batch 1 --prompt-len 16 --max-new 256
    gen 124m-B8-int4-int4head $v 124m --batch 8 --prompt-len 16 --max-new 256 --linear-weights int4 --head-weights int4
    gen 124m-B128-p512 $v 124m --batch 128 --prompt-len 512 --max-new 128
  done
done
for v in s42b s42d s42b s42d; do
  gen 1558m-B1-int4-int4head $v 1558m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int4 --head-weights int4
done
} 2>&1 | tee $OUT/gen-ab.txt
CUDA_INJECTION64_PATH=$L GPUATTN_TRACE=/tmp/t.csv timeout 100 /tmp/s42d/gpuattn generate --random 124m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int4 --head-weights int4 > /dev/null 2>&1
python3 tools/trace_summary.py /tmp/t.csv --skip-replays 1 --top 8 > $OUT/trace-124m.txt 2>&1
rm -f $OUT/*.tmp; ts done
