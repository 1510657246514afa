#!/usr/bin/env bash
# s42 call 1 (main ac01de1 as s42a): (1) the GPU tests s41 could not run (its review mends, host
# dedup, the 9-12-row int4 engine case): Gpt2EngineCuda.* and the skinny / quantized suites, plus
# memcheck on the engine's int4 case; (2) where a B1 decode step's time goes inside its graph
# (tools/kernel_trace.cpp), for the output head's share: 124M B1 int4 and 1.5B B1 int4 / int8.
# Expected: the cuBLASLt head ~20-25 us of 124M's ~215 us step and ~40-50 of 1.5B's ~1,010.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s42/call1.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
v=s42a
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
T=/tmp/$v/gpuattn_cuda_tests G=/tmp/$v/gpuattn L=/tmp/$v/libgpuattn_kernel_trace.so
ts start
timeout 200 $T --gtest_filter='Gpt2EngineCuda.*:*Skinny*:*Q8*:*Q4*:*Int4*:*Int8*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -3 $OUT/tests.txt | tr '\n' ' ')"
timeout 120 compute-sanitizer --tool memcheck $T --gtest_filter='Gpt2EngineCuda.*Int4*' --gtest_brief=1 > $OUT/memcheck.txt 2>&1
ts "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | tail -1)"
run() {  # label args...
  local label=$1; shift
  timeout 100 $G generate --random "$@" > $OUT/plain.tmp 2>&1
  echo "$label untraced rc $? $(tail -1 $OUT/plain.tmp)"
  CUDA_INJECTION64_PATH=$L GPUATTN_TRACE=/tmp/$label.csv timeout 100 $G generate --random "$@" > $OUT/traced.tmp 2>&1
  echo "$label traced rc $? $(grep -v 'kernel trace' $OUT/traced.tmp | tail -1)"
  [ -f /tmp/$label.csv ] && python3 tools/trace_summary.py /tmp/$label.csv --skip-replays 1 --top 14 2>&1 | head -30
}
{
run 124m-B1-int4 124m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int4
run 1558m-B1-int4 1558m --batch 1 --prompt-len 16 --max-new 32 --linear-weights int4
run 1558m-B1-int8 1558m --batch 1 --prompt-len 16 --max-new 32 --linear-weights int8
} > $OUT/trace.txt 2>&1
rm -f $OUT/*.tmp; ts done
