#!/usr/bin/env bash
# s39 call 6: s39e = main b54bc94 (s39d) with the narrow kernel's layernorm weights loaded ahead of
# the wait into registers (8 a thread) instead of 4K bytes of shared memory a CTA, against s39d.
# Both carried (carry ["carry"]).
# Why: with the carveout at its largest, 3 of 1.5B's c_fc CTAs (37.4 KB each with the staged
# layernorm weights) and one of the next kernel's mlp proj (122 KB) do not fit an SM together;
# at 31.4 KB they do. Expected: c_fc's and c_attn's increments down ~1 us, mlp proj's too;
# 1.5B B1 int8 +3-8%.
#   OUT=$OUT bash bench/results/2026-11-29-h200-s39/call6.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in s39d s39e; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
ts start
timeout 120 /tmp/s39e/gpuattn_cuda_tests --gtest_filter='*Int8*:*Skinny*:*AttnInput*:*BatchedGeneration*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -3 $OUT/tests.txt | tr '\n' ' ')"
gen() { local label=$1 v=$2; shift 2
  timeout 90 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v: rc $? $(tail -1 $OUT/gen.tmp)"; }
for round in 1 2; do
  for v in s39d s39e; do
    gen 1558m-B1-int8 $v 1558m --batch 1 --prompt-len 16 --max-new 64 --linear-weights int8
    gen 124m-B1-int8 $v 124m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int8
  done
  ts "round $round"
done 2>&1 | tee $OUT/gen-ab.txt
CUDA_INJECTION64_PATH=/tmp/s39e/libgpuattn_kernel_trace.so GPUATTN_TRACE=/tmp/n.csv \
  timeout 120 /tmp/s39e/gpuattn generate --random 1558m --batch 1 --prompt-len 16 --max-new 32 --linear-weights int8 2>&1 | tail -1
python3 tools/trace_summary.py /tmp/n.csv --skip-replays 1 --top 10 > $OUT/trace.txt 2>&1
ts "trace rc $?"; head -14 $OUT/trace.txt
rm -f $OUT/gen.tmp; ts done
