#!/usr/bin/env bash
# s42 call 6: the head's tile loop in its own q4_kernel instantiation (s42f: q4_kernel<T, true>
# for fp32 logits, 4 tiles a CTA by default; the linears keep q4_kernel<T, false>, 48 registers,
# 2,008 instructions as before), against main (s42e, 3bbfff9).
# Expected: call 3's head gain without its cost to the linears: 124M B1 int4 + int4 head ~+1.2%
# (head 13.3 -> ~9 us), 1.5B +0.5-1%; dense-head runs even.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s42/call6.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in s42e s42f; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
T=/tmp/s42f/gpuattn_cuda_tests L=/tmp/s42f/libgpuattn_kernel_trace.so
ts start
timeout 200 $T --gtest_filter='Gpt2EngineCuda.*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -2 $OUT/tests.txt | tr '\n' ' ')"
for t in 8 2 1; do
  GPUATTN_SKINNY_HEAD_TILES=$t timeout 100 $T --gtest_filter='Gpt2EngineCuda.QuantizedLmHead*:Gpt2EngineCuda.QuantizedHead*' --gtest_brief=1 > $OUT/t.tmp 2>&1
  ts "head tiles $t: rc $? $(tail -1 $OUT/t.tmp)"
done
timeout 150 compute-sanitizer --tool memcheck $T --gtest_filter='Gpt2EngineCuda.QuantizedLmHead*' --gtest_brief=1 > $OUT/memcheck.txt 2>&1
ts "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | tail -1)"
gen() { local label=$1 v=$2; shift 2
  timeout 100 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v: rc $? $(tail -1 $OUT/gen.tmp)"; }
{
for round in 1 2; do
  for v in s42e s42f; do
    gen 124m-B1-int4-int4head $v 124m --batch 1 --prompt-len 16 --max-new 256 --linear-weights int4 --head-weights int4
    gen 124m-B1-int4-densehead $v 124m --batch 1 --prompt-len 16 --max-new 256 --linear-weights int4
  done
done
for v in s42e s42f s42e s42f s42e s42f; do
  gen 1558m-B1-int4-int4head $v 1558m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int4 --head-weights int4
done
} 2>&1 | tee $OUT/gen-ab.txt
CUDA_INJECTION64_PATH=$L GPUATTN_TRACE=/tmp/t.csv timeout 100 /tmp/s42f/gpuattn generate --random 124m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int4 --head-weights int4 > /dev/null 2>&1
python3 tools/trace_summary.py /tmp/t.csv --skip-replays 1 --top 8 > $OUT/trace-124m.txt 2>&1
CUDA_INJECTION64_PATH=$L GPUATTN_TRACE=/tmp/t2.csv timeout 100 /tmp/s42f/gpuattn generate --random 1558m --batch 1 --prompt-len 16 --max-new 32 --linear-weights int4 --head-weights int4 > /dev/null 2>&1
python3 tools/trace_summary.py /tmp/t2.csv --skip-replays 1 --top 8 > $OUT/trace-1558m.txt 2>&1
rm -f $OUT/*.tmp; ts done
