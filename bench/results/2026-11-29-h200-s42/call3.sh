#!/usr/bin/env bash
# s42 call 3: the int4 kernel with several 16-column tiles a CTA for the output head (s42c,
# GPUATTN_SKINNY_HEAD_TILES 4 (default) / 8 / 2 / 1) against call 2's one-tile kernel (s42b).
# Expected: call 2's head kernel (3,144 CTAs of 6 KB) read 124M's 24 MB in 13.3 us (1.6 TB/s);
# 4 tiles a CTA (786 CTAs, ~1.5 waves) toward ~8 us: 124M B1 int4 +2-3%, 1.5B +1%. The tile loop
# took q4_kernel from 48 to 58 registers and 1,750 to 2,168 SASS instructions: the linears must
# not lose (124M B8 int4, dense head, s42b against s42c).
#   OUT=$OUT bash bench/results/2026-11-29-h200-s42/call3.sh 2>&1 | tee $OUT/log.txt
set -u
cd "$(dirname "$0")/../../.." || exit 1
t0=$(date +%s); ts() { echo "[$(($(date +%s)-t0)) s] $*"; }
for v in s42b s42c; do
  mkdir -p /tmp/$v && tar xJf carry/$v.tar.xz -C /tmp/$v --strip-components 1 || { echo "no carry/$v.tar.xz"; exit 1; }
done
T=/tmp/s42c/gpuattn_cuda_tests L=/tmp/s42c/libgpuattn_kernel_trace.so
ts start
timeout 200 $T --gtest_filter='Gpt2EngineCuda.*' --gtest_brief=1 > $OUT/tests.txt 2>&1
ts "tests rc $? $(tail -2 $OUT/tests.txt | tr '\n' ' ')"
for t in 8 1 2; do
  GPUATTN_SKINNY_HEAD_TILES=$t timeout 100 $T --gtest_filter='Gpt2EngineCuda.QuantizedLmHead*' --gtest_brief=1 > $OUT/tests-tiles.tmp 2>&1
  ts "head tiles $t: rc $? $(tail -1 $OUT/tests-tiles.tmp)"
done
GPUATTN_SKINNY_HEAD_TILES=8 timeout 150 compute-sanitizer --tool memcheck $T --gtest_filter='Gpt2EngineCuda.QuantizedLmHead*' --gtest_brief=1 > $OUT/memcheck.txt 2>&1
ts "memcheck (8 tiles) rc $? $(grep -E 'ERROR SUMMARY' $OUT/memcheck.txt | tail -1)"
gen() { local label=$1 v=$2 t=$3; shift 3
  GPUATTN_SKINNY_HEAD_TILES=$t timeout 100 /tmp/$v/gpuattn generate --random "$@" > $OUT/gen.tmp 2>&1; echo "$label $v tiles=$t: rc $? $(tail -1 $OUT/gen.tmp)"; }
{
for round in 1 2; do
  for vt in s42b:4 s42c:4 s42c:8 s42c:2; do
    gen 124m-B1-int4-int4head ${vt%:*} ${vt#*:} 124m --batch 1 --prompt-len 16 --max-new 256 --linear-weights int4 --head-weights int4
  done
  for v in s42b s42c; do
    gen 124m-B8-int4-densehead $v 4 124m --batch 8 --prompt-len 16 --max-new 256 --linear-weights int4
    gen 124m-B1-int4-densehead $v 4 124m --batch 1 --prompt-len 16 --max-new 256 --linear-weights int4
  done
done
for vt in s42b:4 s42c:4 s42c:8 s42b:4 s42c:4 s42c:8; do
  gen 1558m-B1-int4-int4head ${vt%:*} ${vt#*:} 1558m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int4 --head-weights int4
done
} 2>&1 | tee $OUT/gen-ab.txt
for t in 4 8; do
CUDA_INJECTION64_PATH=$L GPUATTN_TRACE=/tmp/t$t.csv GPUATTN_SKINNY_HEAD_TILES=$t timeout 100 /tmp/s42c/gpuattn generate --random 124m --batch 1 --prompt-len 16 --max-new 128 --linear-weights int4 --head-weights int4 > /dev/null 2>&1
python3 tools/trace_summary.py /tmp/t$t.csv --skip-replays 1 --top 8 > $OUT/trace-124m-tiles$t.txt 2>&1
done
rm -f $OUT/*.tmp; ts done
