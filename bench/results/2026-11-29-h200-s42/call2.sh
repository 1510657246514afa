#!/usr/bin/env bash
# s42 call 2 (s42b: the quantized output head, EngineOptions::head_weights): its GPU tests, memcheck
# on the kernel with fp32 logits, then the rates, head dense / int4 / int8 alternated in one run.
# Expected (call 1's trace: cuBLASLt's head 22 us of 124M's 194 us step, 42 of 1.5B's 944): the
# int4 kernel reads 24 MB (124M) / 45 MB (1.5B) in ~8 / ~15 us: 124M B1 +6-7%, 1.5B B1 +3%.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s42/call2.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
v=s42b
mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
T=/tmp/$v/gpuattn_cuda_tests G=/tmp/$v/gpuattn L=/tmp/$v/libgpuattn_kernel_trace.so
ts start
timeout 240 $T --gtest_filter='Gpt2EngineCuda.*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -3 $OUT/tests.txt | tr '\n' ' ')"
timeout 150 compute-sanitizer --tool memcheck $T --gtest_filter='Gpt2EngineCuda.QuantizedLmHead*' --gtest_brief=1 > $OUT/memcheck.txt 2>&1
ts "memcheck rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | tail -1)"
gen() { local label=$1 h=$2; shift 2
  timeout 100 $G generate --random "$@" --head-weights $h > $OUT/gen.tmp 2>&1; echo "$label head=$h: rc $? $(tail -1 $OUT/gen.tmp)"; }
{
for round in 1 2; do
  for h in dense int4 int8; do
    gen 124m-B1-int4 $h 124m --batch 1 --prompt-len 16 --max-new 256 --linear-weights int4
  done
  for h in dense int4; do
    gen 124m-B1-dense $h 124m --batch 1 --prompt-len 16 --max-new 256
    gen 124m-B8-int4 $h 124m --batch 8 --prompt-len 16 --max-new 256 --linear-weights int4
  done
done
for h in dense int4 dense int4 int8; do
  gen 1558m-B1-int4 $h 1558m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int4
done
} 2>&1 | tee $OUT/gen-ab.txt
CUDA_INJECTION64_PATH=$L GPUATTN_TRACE=/tmp/t.csv timeout 100 $G generate --random 124m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int4 --head-weights int4 > /dev/null 2>&1
python3 tools/trace_summary.py /tmp/t.csv --skip-replays 1 --top 10 > $OUT/trace-124m-int4-head.txt 2>&1
rm -f $OUT/gen.tmp; ts done
